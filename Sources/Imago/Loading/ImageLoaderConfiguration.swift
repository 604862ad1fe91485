import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ImageLoader {
    /// Settings fixed when a loader is made.
    public struct Configuration: Sendable {
        /// Fetches the bytes: URLSession for http(s), the file system for `file:`,
        /// the URL itself for `data:`.
        public var dataLoader: any DataLoading
        /// Decoders.
        public var decoders: ImageDecoderRegistry
        /// When and how often failed transfers are tried again.
        public var retryPolicy: RetryPolicy
        /// The largest image decoded (pixels; an animation's canvas counts once).
        public var maximumPixelCount: Int
        /// Headers added to every request (authorization, say).
        public var headers: [String: String]
        /// Changes each URL request just before it is sent.
        public var requestModifier: (@Sendable (URLRequest) -> URLRequest)?
        /// The disk tier for http(s) images; nil for none. `ImageLoader.shared` uses
        /// `DiskCache.shared`; other loaders have none unless given one, so that a
        /// loader made for a test or a job never shares files by surprise.
        public var diskCache: DiskCache?
        /// What the disk tier keeps: by default (`.both`) the originals, and the sized
        /// or processed images of requests that ask for a size or processing.
        public var diskCachePolicy: DiskCachePolicy
        /// How long past its freshness a stored image may still be served when the
        /// network fails (unless the server forbade it); nil never to.
        public var staleIfErrorAllowance: Double?
        /// How many decodes and processings run at once; by default one per core.
        public var concurrentDecodes: Int
        /// The files of recent network loads, kept so that a repeat of a URL costs a
        /// decode, not a transfer; nil to keep none. Used only by a loader with a
        /// memory cache.
        public var recentOriginals: RecentOriginals?
        /// Failures a repeat would meet again (a 4xx, bytes that do not decode),
        /// remembered so that repeats fail at once without a request; nil to remember
        /// none. Used only by a loader with a memory cache.
        public var recentFailures: RecentFailures?

        /// The defaults.
        public init(
            dataLoader: any DataLoading = DefaultDataLoader(),
            decoders: ImageDecoderRegistry = .shared,
            retryPolicy: RetryPolicy = RetryPolicy(),
            maximumPixelCount: Int = DecodingOptions.defaultMaximumPixelCount,
            headers: [String: String] = [:],
            requestModifier: (@Sendable (URLRequest) -> URLRequest)? = nil,
            diskCache: DiskCache? = nil,
            diskCachePolicy: DiskCachePolicy = .both,
            staleIfErrorAllowance: Double? = 7 * 86400,
            concurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount,
            recentOriginals: RecentOriginals? = RecentOriginals(),
            recentFailures: RecentFailures? = RecentFailures()
        ) {
            self.dataLoader = dataLoader
            self.decoders = decoders
            self.retryPolicy = retryPolicy
            self.maximumPixelCount = maximumPixelCount
            self.headers = headers
            self.requestModifier = requestModifier
            self.diskCache = diskCache
            self.diskCachePolicy = diskCachePolicy
            self.staleIfErrorAllowance = staleIfErrorAllowance
            self.concurrentDecodes = max(1, concurrentDecodes)
            self.recentOriginals = recentOriginals
            self.recentFailures = recentFailures
        }
    }
}

/// What the disk tier keeps of loaded images.
///
/// Sized and processed images ("variants") are kept in a compact lossless form with
/// their original's HTTP freshness, and answer only while it holds; then the
/// original is revalidated and the variant made again. A request with neither a
/// target size nor processors has no variant: its image is the original decoded.
public enum DiskCachePolicy: String, Sendable, Hashable, Codable {
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

extension DiskCache {
    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()
}
