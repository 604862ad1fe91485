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
        /// When a stored image is used without asking the server: by HTTP's rules
        /// (the default), or for a set time whatever the headers say.
        public var diskFreshnessPolicy: DiskFreshnessPolicy
        /// How long past its freshness a stored image may still be served when the
        /// network fails (unless the server forbade it); nil never to.
        public var staleIfErrorAllowance: Double?
        /// How many decodes and processings run at once; by default one per core.
        public var concurrentDecodes: Int

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
            diskFreshnessPolicy: DiskFreshnessPolicy = .httpHeaders,
            staleIfErrorAllowance: Double? = 7 * 86400,
            concurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount
        ) {
            self.dataLoader = dataLoader
            self.decoders = decoders
            self.retryPolicy = retryPolicy
            self.maximumPixelCount = maximumPixelCount
            self.headers = headers
            self.requestModifier = requestModifier
            self.diskCache = diskCache
            self.diskCachePolicy = diskCachePolicy
            self.diskFreshnessPolicy = diskFreshnessPolicy
            self.staleIfErrorAllowance = staleIfErrorAllowance
            self.concurrentDecodes = max(1, concurrentDecodes)
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

/// When the disk tier uses a stored image without asking the server.
///
/// Under HTTP's rules an image whose server sends `Cache-Control: no-cache`, or no
/// freshness at all, is confirmed with the server (a conditional request, answered
/// by a bodiless 304 while it has not changed) at every load from disk. An app that
/// would rather not wait for that, and accepts showing an image that changed on the
/// server for a while, trusts its disk tier for a set time instead, as Kingfisher does
/// for 7 days by default.
public enum DiskFreshnessPolicy: Sendable, Hashable {
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

extension DiskCache {
    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()
}
