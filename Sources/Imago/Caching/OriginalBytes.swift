import Foundation

/// The bytes of an original: in hand, or still in the disk tier and read when used.
/// After a 304 a stored thumbnail answers without its original's bytes; reading and
/// checking the whole photo for nothing was most of what such a load cost.
enum OriginalBytes: Sendable {
    case loaded(Data)
    /// A tier's record under `key`, of `count` bytes, for as long as it holds the
    /// `metadata` the load decided on.
    case stored(any HTTPCacheTier, key: HTTPCacheKey, metadata: Data, count: Int)

    /// The bytes; nil when the stored record is gone, damaged, or replaced since.
    func load() -> Data? {
        switch self {
        case .loaded(let data): data
        case .stored(let tier, let key, let metadata, _):
            tier.contents(for: key).flatMap { $0.metadata == metadata ? $0.data : nil }
        }
    }

    var count: Int {
        switch self {
        case .loaded(let data): data.count
        case .stored(_, _, _, let count): count
        }
    }
}
