import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What to load and how: the URL (or a full URL request), the size and processing
/// wanted, the priority, and the key the image is known by.
///
/// ```swift
/// // A 64-point avatar on a 3× screen, cropped to a circle, ahead of other loads.
/// let avatar = ImageRequest(
///     url: avatarURL, targetSize: TargetSize(points: 64, 64, scale: 3, contentMode: .aspectFill),
///     processors: [ImageProcessors.Circle()], priority: .high)
///
/// // A signed URL whose query changes: known by a key of its own, so it is cached once.
/// var signed = URLRequest(url: signedURL)
/// signed.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
/// let photo = ImageRequest(urlRequest: signed, imageKey: "photos/42")
/// ```
public struct ImageRequest: Sendable {
    /// How urgent a load is. Queued loads start in priority order; a load shared by
    /// several requests runs at the highest of their priorities.
    public enum Priority: Int, Sendable, Comparable, CaseIterable {
        case veryLow, low, normal, high, veryHigh

        public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What a load does with data that is not (yet) all there. None by default.
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int

        /// Makes options from their bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// A transfer cut short (fewer bytes than its Content-Length) yields what
        /// arrived, decoded as a partial image (`DecodedImage.isPartial`), instead of
        /// failing; it is not retried, and neither the bytes nor the image are
        /// cached. Requests with it share transfers only with requests with it.
        public static let allowsPartialImages = Options(rawValue: 1 << 0)

        /// While a progressive JPEG, an interlaced PNG or a JPEG XL downloads, the
        /// bytes so far are decoded as previews (at the request's size, with its
        /// processors), at most one per scan or pass (for JPEG XL, at an eighth, a
        /// quarter and a half of the body) and one decode at a time, delivered by
        /// `ImageTask.previews` and to views before the final image. Never cached.
        /// Nuke's `isProgressiveDecodingEnabled`.
        public static let progressivePreviews = Options(rawValue: 1 << 1)
    }

    /// The URL loaded.
    public let url: URL
    /// The URL request as given, for a request made from one (headers of its own, a
    /// method, a cache policy); nil for one made from a URL, whose URL request is
    /// made only when a load hands it to the data loader. Made for every request, it
    /// was a tenth of queueing one (Foundation on Linux allocates an object for it,
    /// and reads its URL back through that object).
    let givenURLRequest: URLRequest?
    /// Decode to this size; nil for the full size.
    public var targetSize: TargetSize?
    /// Applied in order after decoding.
    public var processors: [any ImageProcessing]
    /// How urgent the load is.
    public var priority: Priority
    /// Names the resource in place of the URL's absolute string, for URLs whose query
    /// changes but whose image does not (signed URLs); nil to use the URL.
    package var imageKeyOverride: String?
    /// Partial images and progressive previews; none by default.
    public var options: Options
    /// Which caches the load reads and writes, and whether it may reach the origin;
    /// every tier by default.
    public var cachePolicy: CachePolicy
    /// URLs tried in order when the load of `url` fails (not when it is cancelled),
    /// each known by its own cache key: a mirror, a smaller rendition, a
    /// placeholder. A task (`ImageLoader.task(with:)`, and so every view) tries them
    /// within itself, as `image(for:)` and `data(for:)` do.
    public var alternativeURLs: [URL] = []
    /// A URL loaded first while the loader is told the network is constrained
    /// (`ImageLoader.isNetworkConstrained`: Low Data Mode, a metered link), with
    /// `url` and the alternatives after it; SDWebImage's and Nuke's constrained
    /// network variants.
    public var constrainedURL: URL?

    /// The URL request handed to the data loader, whose URL the data loader alone
    /// judges: whether it takes it, and whether its bytes are at hand or fetched.
    var urlRequest: URLRequest { givenURLRequest ?? URLRequest(url: url) }

    /// Whether the request has a URL at all (a URL request may have none).
    var hasURL: Bool { givenURLRequest.map { $0.url != nil } ?? true }

    /// A request for `url`.
    public init(url: URL, targetSize: TargetSize? = nil, processors: [any ImageProcessing] = [],
                priority: Priority = .normal, imageKey: String? = nil, options: Options = [],
                cachePolicy: CachePolicy = .default) {
        self.init(url: url.withLowercasedScheme ?? url, given: nil, targetSize: targetSize, processors: processors,
                  priority: priority, imageKey: imageKey, options: options, cachePolicy: cachePolicy)
    }

    /// A request sending `urlRequest` as it is (custom headers, say).
    public init(urlRequest: URLRequest, targetSize: TargetSize? = nil, processors: [any ImageProcessing] = [],
                priority: Priority = .normal, imageKey: String? = nil, options: Options = [],
                cachePolicy: CachePolicy = .default) {
        var urlRequest = urlRequest
        if let url = urlRequest.url, let normalized = url.withLowercasedScheme { urlRequest.url = normalized }
        self.init(url: urlRequest.url ?? URL(fileURLWithPath: "/"), given: urlRequest, targetSize: targetSize,
                  processors: processors, priority: priority, imageKey: imageKey, options: options, cachePolicy: cachePolicy)
    }

    private init(url: URL, given: URLRequest?, targetSize: TargetSize?, processors: [any ImageProcessing],
                 priority: Priority, imageKey: String?, options: Options, cachePolicy: CachePolicy) {
        self.url = url
        givenURLRequest = given
        self.targetSize = targetSize
        self.processors = processors
        self.priority = priority
        self.imageKeyOverride = imageKey
        self.options = options
        self.cachePolicy = cachePolicy
    }

    /// The key of the resource: the override, else the URL's absolute string. Every
    /// size and processing of one image key shares one transfer and one disk record.
    public var imageKey: String { imageKeyOverride ?? url.absoluteString }

    /// The key of the decoded, sized and processed result: what the memory cache
    /// stores it under and what identical requests in flight share.
    public var cacheKey: ImageCacheKey {
        ImageCacheKey(imageKey: imageKey, targetSize: targetSize, processors: processors)
    }
}

extension ImageResponse {
    /// Where a loaded image came from.
    public enum Source: String, Sendable, Codable {
        /// The memory cache.
        case memory
        /// The file of a recent network load, kept by the loader in memory or in a
        /// temporary file (`ImageLoader.RecentOriginals`): no transfer, but decoded
        /// again.
        case recent
        /// The disk cache, without asking the server.
        case disk
        /// The disk cache, after the server said the stored image had not changed (a
        /// `304 Not Modified` to a conditional request): one round trip, no body, and a
        /// stored thumbnail is used as it is, not made again from its original.
        case revalidated
        /// The cache shared by a fleet (``SharedCache``, on Redis), without asking the
        /// server: another machine fetched or made the image.
        case shared
        /// The data loader, for a URL it fetches.
        case network
        /// The data loader, for bytes at hand (`DataLoading.isLocal(_:)`): a file or a
        /// `data:` URL by default.
        case local
    }
}

extension ImageResponse {
    /// Timings and sizes of one load. The seconds add up to the load's time from its
    /// start to its result, but for the moments between stages (microseconds); a
    /// request that joined a load already in flight shares that load's metrics.
    public struct Metrics: Sendable {
        /// Seconds spent waiting for a free transfer slot (`concurrentLoads`).
        public var queued: Double = 0
        /// Seconds spent transferring, retries included.
        public var transfer: Double = 0
        /// Seconds spent waiting for a free decoding slot
        /// (`ImageLoader.Configuration.concurrentDecodes`), before decoding and before
        /// processing, and looking for a sized variant on disk that was not there. With
        /// more finished transfers than cores this is where a load's time goes.
        public var decodeQueued: Double = 0
        /// Seconds spent decoding (and sizing).
        public var decode: Double = 0
        /// Seconds spent in processors.
        public var processing: Double = 0
        /// Bytes received: the body as transferred (none for a bodiless 304, whose
        /// image comes from the disk tier), or as read from a cache or a local file.
        public var bytes: Int = 0
        /// Transfer attempts made (1 without retries; 0 when a cache answered).
        public var attempts: Int = 0
    }
}

/// A loaded image with where it came from.
public struct ImageResponse: Sendable {
    /// The image, sized and processed as requested.
    public let image: DecodedImage
    /// The URL requested.
    public let url: URL
    /// Which tier answered.
    public let source: ImageResponse.Source
    /// What the load cost.
    public let metrics: ImageResponse.Metrics
    /// The HTTP freshness of the original the image was made from, when known: the
    /// disk tier keeps sized and processed variants with it, so they expire with it.
    var httpMetadata: HTTPCacheMetadata?
}
