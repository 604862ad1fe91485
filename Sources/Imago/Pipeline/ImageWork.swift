import Foundation

/// What an image stage works from; fixed when it starts.
struct ImageWork: Sendable {
    let key: ImageCacheKey
    let request: ImageRequest
    /// The memory tier images are kept in; nil when the request's policy keeps
    /// none there.
    let cache: (any ImageCaching)?
    /// Whether the loader caches at all, so remembers failures.
    let remembers: Bool
    /// Where processed variants are read and kept; nil when they are not.
    let variants: HTTPCache?
    /// Where the original bytes are kept; nil when they are not.
    let originals: HTTPCache?
    /// The loader's timeout when the stage started: a decode's bound when no load's
    /// own deadline gives one.
    let loadingTimeout: Double
    /// The variant found stale in a tier, with its metadata: used as it is if the
    /// server confirms the original it was made from.
    var staleVariant: (data: Data, metadata: HTTPCacheMetadata)?
    /// A stored original that no longer decoded was dropped and this load asks
    /// the network for it again: once, never in a loop.
    var refetched = false

    /// The work of the stage of `key` started from `request`, with the memory tier
    /// and the HTTP cache (`tiers`) loads use now.
    init(
        key: ImageCacheKey, request: ImageRequest, cache: (any ImageCaching)?, tiers: HTTPCache?, storagePolicy: StoragePolicy,
        loadingTimeout: Double
    ) {
        self.key = key
        self.request = request
        self.cache = request.cachePolicy.writes.contains(.memory) ? cache : nil
        remembers = cache != nil
        self.loadingTimeout = loadingTimeout
        variants = storagePolicy.storesProcessed && !key.isOriginal ? tiers : nil
        originals = storagePolicy.storesOriginals ? tiers : nil
    }
}
