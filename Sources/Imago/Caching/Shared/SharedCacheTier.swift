import Foundation

/// The shared tier as `HTTPCache` sees it: after the disk, before the network. An
/// original no tier holds is fetched by one process of the fleet, which takes the
/// lease, while the others wait for what it stores.
extension SharedCache: HTTPCacheTier {
    var source: ImageResponse.Source { .shared }
    var answersOverNetwork: Bool { true }
    var isShared: Bool { true }

    func record(for key: HTTPCacheKey) -> HTTPCache.TierRecord? {
        // One round trip brings the whole value; its body is in hand anyway.
        guard case .hit(let record, let checksum) = record(named: key.name, imageKey: key.imageKey) else { return nil }
        return Self.tierRecord(record, checksum)
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
        // The commands block on their replies: off the concurrency pool.
        switch await BlockingWork.value({ self.claim(named: key.name, imageKey: key.imageKey) }) {
        case .unavailable: return .fetch(nil)
        case .taken(let lease): return .fetch(lease)
        case .found(let record, let checksum): return .stored(Self.tierRecord(record, checksum))
        case .held:
            switch await waitForRecord(named: key.name, imageKey: key.imageKey) {
            case .found(let record, let checksum): return .stored(Self.tierRecord(record, checksum))
            case .taken(let lease): return .fetch(lease)
            case .givenUp: return .fetch(nil)
            }
        }
    }

    private static func tierRecord(_ record: DiskCache.Record, _ checksum: UInt32) -> HTTPCache.TierRecord {
        HTTPCache.TierRecord(metadata: record.metadata, body: .loaded(record.data), bodyChecksum: checksum)
    }
}
