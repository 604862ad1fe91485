import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension DiskCache {
    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()
}

extension FreshnessPolicy {
    /// Whether a stored response with `metadata` may be used at `now` without asking
    /// the server.
    func isFresh(_ metadata: HTTPCacheMetadata, at now: Date) -> Bool {
        if case .fresh = metadata.freshness(at: now) { return true }
        guard case .trusted(let seconds) = self, metadata.isStorable else { return false }
        return now.timeIntervalSince(metadata.storedAt) < seconds
    }
}

extension DiskCache {
    /// The former name of `StoragePolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "StoragePolicy")
    public typealias Policy = StoragePolicy
    /// The former name of `FreshnessPolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "FreshnessPolicy")
    public typealias FreshnessPolicy = Imago.FreshnessPolicy
}
