import Foundation

/// A tier as one request's cache policy lets it be used: reads answer nothing when
/// the request may not read it, writes and removals do nothing when it may not
/// write it. The HTTP rules stay in `HTTPCache`, which sees only what the request
/// may touch.
struct PolicyTier: HTTPCacheTier {
    let base: any HTTPCacheTier
    let reads: Bool
    let writes: Bool
    /// Whether a miss may wait for another process's fetch, or take the lease for
    /// one: only a load that both reads and writes the tier takes part (a load that
    /// keeps nothing would hold the others' wait for nothing, and a cache-only load
    /// asks no origin).
    let takesTurns: Bool

    var source: ImageResponse.Source { base.source }
    var answersOverNetwork: Bool { base.answersOverNetwork }
    var isShared: Bool { base.isShared }

    func record(for key: HTTPCacheKey) -> HTTPCache.TierRecord? {
        reads ? base.record(for: key) : nil
    }

    func contents(for key: HTTPCacheKey) -> (data: Data, metadata: Data, bodyChecksum: UInt32?)? {
        reads ? base.contents(for: key) : nil
    }

    func store(
        _ data: Data, metadata: Data, for key: HTTPCacheKey, bodyChecksum: UInt32?, lifetime: Double, releasing lease: HTTPCache.Lease?
    ) {
        if writes {
            base.store(data, metadata: metadata, for: key, bodyChecksum: bodyChecksum, lifetime: lifetime, releasing: lease)
        } else if let lease {
            base.release(lease)
        }
    }

    func removeRecord(for key: HTTPCacheKey) {
        if writes { base.removeRecord(for: key) }
    }

    func location(of key: HTTPCacheKey) -> String { base.location(of: key) }

    func turnToFetch(_ key: HTTPCacheKey) async -> HTTPCache.Turn {
        takesTurns ? await base.turnToFetch(key) : .fetch(nil)
    }

    func release(_ lease: HTTPCache.Lease) { base.release(lease) }
}

extension HTTPCache {
    /// The cache as `policy` lets a request use it; nil when it may touch no tier.
    /// The default policy gets the cache as it is.
    func restricted(to policy: ImageRequest.CachePolicy) -> HTTPCache? {
        guard policy != .default else { return self }
        let wrapped: [any HTTPCacheTier] = tiers.compactMap { tier in
            let tierOption: ImageRequest.CachePolicy.Tiers = tier.answersOverNetwork ? .shared : .disk
            let reads = policy.reads.contains(tierOption), writes = policy.writes.contains(tierOption)
            guard reads || writes else { return nil }
            return PolicyTier(base: tier, reads: reads, writes: writes, takesTurns: reads && writes && !policy.onlyFromCache)
        }
        guard !wrapped.isEmpty else { return nil }
        return HTTPCache(tiers: wrapped, freshnessPolicy: freshnessPolicy, staleIfErrorAllowance: staleIfErrorAllowance)
    }
}
