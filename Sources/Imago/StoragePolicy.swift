import Foundation

/// What the disk and shared tiers keep of loaded images (`ImageLoader.Configuration.storagePolicy`).
///
/// Sized and processed images ("variants") are kept in a compact lossless form with
/// their original's HTTP freshness, and answer only while it holds; then the
/// original is revalidated and the variant made again. A request with neither a
/// target size nor processors has no variant: its image is the original decoded.
public enum StoragePolicy: String, Sendable, Hashable, Codable {
    /// The bytes as the server sent them, with their HTTP freshness: any size or
    /// processing can be made from them again, and they revalidate cheaply.
    case originals
    /// The sized and processed result only: the fastest hit for a thumbnail, but
    /// once stale, or for any other size, the original is fetched whole.
    case processed
    /// The originals, and the variants of requests that ask for a size or processing,
    /// as Nuke's automatic policy keeps them: a thumbnail comes back from disk without
    /// decoding its photo again, any other size is made from the kept original, and a
    /// stale one revalidates with a bodiless 304. The default.
    case both

    var storesOriginals: Bool { self != .processed }
    var storesProcessed: Bool { self != .originals }
}
