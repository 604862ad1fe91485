import Foundation

/// The shared tier's place in the pipeline: after the disk tier, before the network.
/// An original nothing local holds is looked for there, and when it is missing too,
/// one process of the fleet takes the lease and asks the origin while the others
/// wait for what it stores. What comes from the network, and every sized or
/// processed variant made, is stored there as on disk.
extension Pipeline {
    /// What stands in for the network when nothing local holds the original.
    enum SharedOriginal {
        /// Another process stored it, fresh.
        case found(Data, HTTPCacheMetadata)
        /// Ask the origin, holding the lease if one was taken.
        case fetch(SharedCache.Lease?)
    }

    /// The shared tier for `request`: for remote images of a loader that keeps
    /// images, as the disk tier.
    func sharedCache(for request: ImageRequest, cache: (any ImageCaching)?) -> SharedCache? {
        guard cache != nil, case .remote = request.resource else { return nil }
        return configuration.sharedCache
    }

    /// The original of `request` from the shared tier, or the lease to fetch it
    /// (nil: fetch without one, when the tier is unavailable or the wait ran out).
    func sharedOriginal(_ request: ImageRequest, in shared: SharedCache) async -> SharedOriginal {
        let name = ImageCacheKey.originalDiskKey(request.imageKey)
        switch shared.record(named: name, imageKey: request.imageKey) {
        case .hit(let record, _):
            if let metadata = freshMetadata(of: record) { return .found(record.data, metadata) }
        case .miss: break
        case .unavailable: return .fetch(nil)
        }
        switch shared.takeLease(imageKey: request.imageKey) {
        case .unavailable: return .fetch(nil)
        case .taken(let lease): return lookAgain(name, of: request, holding: lease, in: shared)
        case .held:
            switch await shared.waitForRecord(named: name, imageKey: request.imageKey) {
            case .found(let record): return freshMetadata(of: record).map { .found(record.data, $0) } ?? .fetch(nil)
            case .taken(let lease): return lookAgain(name, of: request, holding: lease, in: shared)
            case .givenUp: return .fetch(nil)
            }
        }
    }

    /// The original may have been stored, and its lease given back, between the
    /// look-up that missed and the lease this load just took: looked for once more
    /// before the origin is asked, so that the fleet asks it once.
    private func lookAgain(_ name: String, of request: ImageRequest, holding lease: SharedCache.Lease, in shared: SharedCache) -> SharedOriginal {
        if case .hit(let record, _) = shared.record(named: name, imageKey: request.imageKey, counted: false),
           let metadata = freshMetadata(of: record) {
            shared.release(lease)
            return .found(record.data, metadata)
        }
        return .fetch(lease)
    }

    /// Stores what the network answered for the fleet and gives the lease back; a
    /// response that may not be kept only gives the lease back.
    func shareOriginal(_ data: Data, metadata: HTTPCacheMetadata?, of request: ImageRequest, in shared: SharedCache?, lease: SharedCache.Lease?) {
        guard let shared else { return }
        guard let metadata, metadata.isStorable, configuration.diskCachePolicy.storesOriginals else {
            if let lease { shared.release(lease) }
            return
        }
        shared.store(
            data, metadata: metadata.encoded(), named: ImageCacheKey.originalDiskKey(request.imageKey), imageKey: request.imageKey,
            lifetime: sharedLifetime(of: metadata), releasing: lease)
    }

    /// A sized or processed image of `request` from the shared tier, in the variant
    /// form, with its metadata and the CRC of its bytes (for the disk tier's copy);
    /// nil unless fresh.
    func sharedVariant(
        _ key: ImageCacheKey, of request: ImageRequest, in shared: SharedCache
    ) -> (data: Data, metadata: HTTPCacheMetadata, checksum: UInt32)? {
        guard case .hit(let record, let checksum) = shared.record(named: key.variantDiskKey, imageKey: request.imageKey),
              let metadata = freshMetadata(of: record)
        else { return nil }
        return (record.data, metadata, checksum)
    }

    /// Stores a variant for the fleet, to live as long as its original.
    func shareVariant(_ data: Data, metadata: HTTPCacheMetadata, key: ImageCacheKey, of request: ImageRequest, in shared: SharedCache) {
        shared.store(
            data, metadata: metadata.encoded(), named: key.variantDiskKey, imageKey: request.imageKey,
            lifetime: sharedLifetime(of: metadata))
    }

    /// The metadata of a shared record, when it may be used without asking the
    /// server, by the loader's freshness policy.
    private func freshMetadata(of record: DiskCache.Record) -> HTTPCacheMetadata? {
        guard let metadata = HTTPCacheMetadata(encoded: record.metadata),
              configuration.diskFreshnessPolicy.isFresh(metadata, at: Date())
        else { return nil }
        return metadata
    }

    /// How long Redis keeps a record: its remaining freshness under the loader's
    /// policy, plus the window past it that the policy may still serve it in (stale
    /// while revalidating, or after an error), at most 30 days. Zero or less: not
    /// kept.
    func sharedLifetime(of metadata: HTTPCacheMetadata, at now: Date = Date()) -> Double {
        guard metadata.isStorable else { return 0 }
        var fresh = metadata.cacheControl.noCache ? 0 : metadata.freshnessLifetime - metadata.currentAge(at: now)
        if case .trusted(let seconds) = configuration.diskFreshnessPolicy {
            fresh = max(fresh, seconds - now.timeIntervalSince(metadata.storedAt))
        }
        var window = 0.0
        if !metadata.cacheControl.mustRevalidate, !metadata.cacheControl.noCache {
            let staleIfError = metadata.cacheControl.staleIfError ?? configuration.staleIfErrorAllowance ?? 0
            window = max(metadata.cacheControl.staleWhileRevalidate ?? 0, staleIfError)
        }
        return fresh <= 0 ? 0 : min(fresh + window, 30 * 86400)
    }
}
