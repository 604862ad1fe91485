import Foundation

extension ImageRequest {
    /// Which caches one request reads and writes, and whether it may reach the
    /// origin at all: Nuke's `ImageRequest.Options` (`disableMemoryCacheReads`,
    /// `reloadIgnoringCachedData`, `returnCacheDataDontLoad`), Kingfisher's
    /// `forceRefresh` and `onlyFromCache`, SDWebImage's `refreshCached`,
    /// `fromCacheOnly` and `retryFailed`, in one value.
    ///
    /// The default reads and writes every tier the loader has. A request's policy
    /// narrows what the loader's configuration allows; it never turns on a tier the
    /// loader lacks. Requests in flight share work only with requests of the same
    /// policy, so a reload never joins a load that is reading the disk, and a
    /// cache-only request never joins a transfer.
    ///
    /// ```swift
    /// // Pull to refresh: ask the server whatever is kept, and keep what it sends.
    /// let fresh = ImageRequest(url: avatarURL, cachePolicy: .reloadIgnoringCachedData)
    ///
    /// // Offline: what is kept, or a `notCached` error, never a transfer.
    /// let offline = ImageRequest(url: avatarURL, cachePolicy: .returnCacheDataDontLoad)
    ///
    /// // A one-off huge image: read the caches, but keep it out of memory.
    /// var poster = ImageRequest(url: avatarURL)
    /// poster.cachePolicy.writes.remove(.memory)
    /// ```
    public struct CachePolicy: Sendable, Hashable {
        /// The caches a loader keeps.
        public struct Tiers: OptionSet, Sendable, Hashable {
            public let rawValue: Int

            /// Makes tiers from their bits.
            public init(rawValue: Int) { self.rawValue = rawValue }

            /// Decoded images in memory (`ImageCaching`, `ImageCache.shared` by
            /// default).
            public static let memory = Tiers(rawValue: 1 << 0)
            /// The files of recent network loads, kept in memory
            /// (`ImageLoader.RecentOriginals`): a repeat costs a decode, not a
            /// transfer.
            public static let recentOriginals = Tiers(rawValue: 1 << 1)
            /// The disk tier (`DiskCache`), originals and sized variants.
            public static let disk = Tiers(rawValue: 1 << 2)
            /// The tier a fleet shares (`SharedCache`, on Redis).
            public static let shared = Tiers(rawValue: 1 << 3)

            /// Every tier.
            public static let all: Tiers = [.memory, .recentOriginals, .disk, .shared]
        }

        /// The tiers a load may be answered from.
        public var reads: Tiers
        /// The tiers what a load fetches or makes is kept in.
        public var writes: Tiers
        /// Never reach the origin: a load that no tier answers fails with
        /// `ImagoError.notCached`, without a transfer. Stored copies are used
        /// whatever their HTTP freshness, as an offline app wants; bytes at hand
        /// (`DataLoading.isLocal(_:)`, a file) are read as usual.
        public var onlyFromCache: Bool
        /// Ask the origin again for a URL the loader remembers as failed
        /// (`ImageLoader.RecentFailures`), instead of failing at once: SDWebImage's
        /// `retryFailed`. A success forgets the failure.
        public var retriesFailed: Bool

        /// A policy reading `reads`, writing `writes`.
        public init(reads: Tiers = .all, writes: Tiers = .all, onlyFromCache: Bool = false, retriesFailed: Bool = false) {
            self.reads = reads
            self.writes = writes
            self.onlyFromCache = onlyFromCache
            self.retriesFailed = retriesFailed
        }

        /// Every tier read and written; a remembered failure answers at once.
        public static let `default` = CachePolicy()

        /// Asks the origin whatever any tier holds (no validators, so a full
        /// response), a remembered failure included, and keeps the answer in every
        /// tier: Nuke's `reloadIgnoringCachedData`, Kingfisher's `forceRefresh`.
        public static let reloadIgnoringCachedData = CachePolicy(reads: [], writes: .all, retriesFailed: true)

        /// Only what the tiers keep, whatever its freshness; a miss fails with
        /// `ImagoError.notCached`: Nuke's `returnCacheDataDontLoad`, Kingfisher's
        /// `onlyFromCache`.
        public static let returnCacheDataDontLoad = CachePolicy(onlyFromCache: true)

        /// Every tier as usual, but a URL remembered as failed is asked again.
        public static let retryingFailures = CachePolicy(retriesFailed: true)

        /// No tier read or written: every load asks the origin and keeps nothing.
        public static let disabled = CachePolicy(reads: [], writes: [], retriesFailed: true)
    }
}
