import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DiskCache {
    /// What the disk tier keeps of loaded images.
    ///
    /// Sized and processed images ("variants") are kept in a compact lossless form with
    /// their original's HTTP freshness, and answer only while it holds; then the
    /// original is revalidated and the variant made again. A request with neither a
    /// target size nor processors has no variant: its image is the original decoded.
    public enum Policy: String, Sendable, Hashable, Codable {
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
}

extension DiskCache {
    /// When the disk tier uses a stored image without asking the server.
    ///
    /// Under HTTP's rules an image whose server sends `Cache-Control: no-cache`, or no
    /// freshness at all, is confirmed with the server (a conditional request, answered
    /// by a bodiless 304 while it has not changed) at every load from disk. An app that
    /// would rather not wait for that, and accepts showing an image that changed on the
    /// server for a while, trusts its disk tier for a set time instead, as Kingfisher does
    /// for 7 days by default.
    public enum FreshnessPolicy: Sendable, Hashable {
        /// HTTP's rules alone: `max-age`, `Expires`, `no-cache` and the heuristic from
        /// `Last-Modified` decide. The default.
        case httpHeaders
        /// A stored image, original or sized variant, is used without asking the server
        /// for `seconds` after it arrived (or the server last confirmed it), whatever its
        /// headers say; after that HTTP's rules decide. `no-store` responses are never
        /// stored, so never trusted.
        case trusted(seconds: Double)

        /// Whether a stored response with `metadata` may be used at `now` without asking
        /// the server.
        func isFresh(_ metadata: HTTPCacheMetadata, at now: Date) -> Bool {
            if case .fresh = metadata.freshness(at: now) { return true }
            guard case .trusted(let seconds) = self, metadata.isStorable else { return false }
            return now.timeIntervalSince(metadata.storedAt) < seconds
        }
    }
}

extension DiskCache {
    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()
}
