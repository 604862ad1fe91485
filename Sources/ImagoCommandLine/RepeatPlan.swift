import Foundation

/// Which loads of a list to keep in memory for a line further down: a tool knows its
/// list ahead, so an image or original is kept only when its URL comes again soon
/// enough to find it still there.
///
/// The memory tier and the recent originals are least-recently-used stores of a few
/// dozen megabytes. A list that comes back to a URL only after hundreds of others
/// outruns them: every entry kept for it is pushed out before its repeat, and the
/// run pays the memory for nothing (the same 300 photos twice over: 150 MB at the
/// peak, 600 transfers for 600 lines). So a load is kept in a store only when its
/// URL's next line is within what that store holds, in entries of the mean size seen
/// so far in the run (all of it before the first load has ended). A line whose URL
/// came within the last `window` lines takes that line's decision instead: the two
/// may be in flight together and share one load, which loads share only when they
/// keep alike.
///
/// `@unchecked Sendable`: the decisions and sizes are read and changed under `lock`
/// only; the rest is constant.
public final class RepeatPlan: @unchecked Sendable {
    /// What one line's load keeps.
    public struct Keeping: Equatable, Sendable {
        /// The decoded image, in the memory tier.
        public var image: Bool
        /// The original bytes, in the recent originals.
        public var original: Bool

        /// Keeps both, or neither.
        public init(image: Bool, original: Bool) {
            self.image = image
            self.original = original
        }
    }

    /// A store's limits: bytes and entries; nil when the loader has no such store.
    public struct Store: Sendable {
        let bytes: Int
        let count: Int

        /// A store of at most `bytes` bytes and `count` entries.
        public init(bytes: Int, count: Int) {
            self.bytes = bytes
            self.count = count
        }
    }

    private let previous: [Int32], next: [Int32]
    private let images: Store?, originals: Store?
    private let window: Int
    private let lock = NSLock()
    private var sizes = (images: 0, imageBytes: 0, originals: 0, originalBytes: 0)
    /// The decision given to each line whose URL comes again, until that line comes.
    private var given: [Int: Keeping] = [:]

    /// For lines whose URLs came last at `previous` and come next at `next` (-1 for
    /// none; every line of the input counted, in order), with the stores for images
    /// and originals, and `window` lines in flight at most.
    public init(previous: [Int32], next: [Int32], images: Store?, originals: Store?, window: Int) {
        self.previous = previous
        self.next = next
        self.images = images
        self.originals = originals
        self.window = window
    }

    /// What the load of line `index` keeps; asked in line order.
    public func keeping(line index: Int) -> Keeping {
        guard index < next.count else { return Keeping(image: true, original: true) }
        let last = Int(previous[index]), coming = Int(next[index])
        return locked {
            let decision: Keeping
            if last >= 0, index - last <= window, let shared = given[last] {
                decision = shared
            } else {
                let distance = coming < 0 ? Int.max : coming - index
                decision = Keeping(
                    image: Self.reaches(distance, images, entries: sizes.images, bytes: sizes.imageBytes),
                    original: Self.reaches(distance, originals, entries: sizes.originals, bytes: sizes.originalBytes))
            }
            if last >= 0 { given[last] = nil }
            if coming >= 0 { given[index] = decision }
            return decision
        }
    }

    /// Notes the sizes of a finished load's image and original (0 for none).
    public func observe(imageBytes: Int, originalBytes: Int) {
        locked {
            if imageBytes > 0 { sizes.images += 1; sizes.imageBytes += imageBytes }
            if originalBytes > 0 { sizes.originals += 1; sizes.originalBytes += originalBytes }
        }
    }

    /// `NSLock.withLock` is newer than the macOS the tool runs on.
    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    /// Whether `store` still holds an entry `distance` lines later, with entries of
    /// the mean size seen (`bytes` over `entries`).
    private static func reaches(_ distance: Int, _ store: Store?, entries: Int, bytes: Int) -> Bool {
        guard let store, distance != .max else { return false }
        let held = entries > 0 && bytes > 0 ? min(store.count, store.bytes / max(1, bytes / entries)) : store.count
        return distance <= held
    }
}
