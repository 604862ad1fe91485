import Foundation

/// The shared tier as `HTTPCache` sees it: after the disk, before the network. An
/// original no tier holds is fetched by one process of the fleet, which takes the
/// lease, while the others wait for what it stores.
extension SharedCache: HTTPCacheTier {
    var source: ImageResponse.Source { .shared }
    var answersOverNetwork: Bool { true }

    func record(for key: HTTPCacheKey) -> HTTPCache.TierRecord? {
        // One round trip brings the whole value; its body is in hand anyway.
        contents(for: key).map { HTTPCache.TierRecord(metadata: $0.metadata, body: .loaded($0.data), bodyChecksum: $0.bodyChecksum) }
    }

    func contents(for key: HTTPCacheKey) -> (data: Data, metadata: Data, bodyChecksum: UInt32?)? {
        guard case .hit(let record, let checksum) = record(named: key.name, imageKey: key.imageKey) else { return nil }
        return (record.data, record.metadata, checksum)
    }

    func store(
        _ data: Data, metadata: Data, for key: HTTPCacheKey, bodyChecksum: UInt32?, lifetime: Double, releasing lease: HTTPCache.Lease?
    ) {
        store(data, metadata: metadata, named: key.name, imageKey: key.imageKey, lifetime: lifetime, releasing: lease)
    }

    func removeRecord(for key: HTTPCacheKey) {
        remove(named: key.name, imageKey: key.imageKey)
    }

    func location(of key: HTTPCacheKey) -> String {
        "Redis key \(valueKey(key.name, imageKey: key.imageKey))"
    }

    func turnToFetch(_ key: HTTPCacheKey) async -> HTTPCache.Turn {
        switch await BlockingWork.value({ self.takeLease(imageKey: key.imageKey) }) {
        case .unavailable: return .fetch(nil)
        case .taken(let lease): return await BlockingWork.value { self.lookAgain(key, holding: lease) }
        case .held:
            switch await waitForRecord(named: key.name, imageKey: key.imageKey) {
            case .found(let record, let checksum):
                return .stored(HTTPCache.TierRecord(metadata: record.metadata, body: .loaded(record.data), bodyChecksum: checksum))
            case .taken(let lease): return await BlockingWork.value { self.lookAgain(key, holding: lease) }
            case .givenUp: return .fetch(nil)
            }
        }
    }

    /// The record may have been stored, and its lease given back, between the
    /// look-up that missed and the lease this load just took: looked for once more
    /// before the origin is asked, so that the fleet asks it once.
    private func lookAgain(_ key: HTTPCacheKey, holding lease: HTTPCache.Lease) -> HTTPCache.Turn {
        guard case .hit(let record, let checksum) = record(named: key.name, imageKey: key.imageKey, counted: false) else {
            return .fetch(lease)
        }
        release(lease)
        return .stored(HTTPCache.TierRecord(metadata: record.metadata, body: .loaded(record.data), bodyChecksum: checksum))
    }
}
