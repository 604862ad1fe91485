import Foundation

/// What a stage tells those who subscribed to it.
enum StageEvent<Value: Sendable>: Sendable {
    /// Bytes of the original received so far.
    case progress(ImageTask.Progress)
    /// The original's bytes so far, at a scan or pass boundary: what a preview is
    /// decoded from. Only to subscribers that want previews.
    case partialData(Data)
    /// A preview of the stage's image. Only to subscribers that want previews.
    case preview(ImageResponse)
    /// The stage's outcome; nothing follows it.
    case finished(Result<Value, ImagoError>)
}

/// One piece of work in the pipeline that every request needing it shares: the
/// original data of an image key, or an image decoded at a size, or processed.
///
/// A stage runs at the highest priority of its subscribers, tells its own upstream
/// subscription when that changes, and stops when its last subscriber leaves.
///
/// `@unchecked Sendable`: every mutable field is touched only with the pipeline's
/// lock held (the thread-sanitizer tests in `make sanitize` watch this).
class StageCore: @unchecked Sendable {
    /// The highest priority among the subscribers.
    var priority: ImageRequest.Priority
    /// Which table and key it is found under, so it can leave when done.
    let key: StageKey

    /// Its place among equals in a work queue: the order it first arrived in.
    var sequence = 0
    /// Bumped whenever its queue entry moves, so older entries are skipped.
    var queueGeneration = 0
    /// The work it waits to run, while it waits in a queue.
    var queuedWork: (@Sendable () -> Void)?
    /// The queue it waits in or runs in.
    var queue: PipelineQueue?
    /// A running transfer, cancelled when the stage is abandoned.
    var task: Task<Void, Never>?
    /// Finished or abandoned: the stage sends nothing more.
    var isClosed = false
    /// The stage this one builds on, and its subscription there.
    var upstream: (stage: StageCore, subscriber: Int)?
    /// A subscriber wants previews: the stage makes them (or, for the original,
    /// passes on the bytes so far).
    var wantsPreviews = false
    /// A preview is being made; at most one at a time.
    var previewInFlight = false
    /// The newest preview asked for while one was being made, made next.
    var pendingPreview: (@Sendable () -> Void)?

    init(key: StageKey, priority: ImageRequest.Priority) {
        self.key = key
        self.priority = priority
    }

    /// The highest priority among the subscribers; nil when there are none.
    var highestSubscriberPriority: ImageRequest.Priority? { fatalError("a stage subclass answers this") }

    /// Changes one subscriber's priority.
    func setPriority(_ priority: ImageRequest.Priority, ofSubscriber id: Int) { fatalError("a stage subclass answers this") }

    /// Removes a subscriber; true when none is left.
    func removeSubscriber(_ id: Int) -> Bool { fatalError("a stage subclass answers this") }

    /// Makes one subscriber want previews.
    func setWantsPreviews(ofSubscriber id: Int) { fatalError("a stage subclass answers this") }
}

/// A stage's name in its table: a cache key, and whether the stage takes partial
/// data. Requests that allow partial images share stages only among themselves, so
/// that a transfer cut short is never handed to a request that must see it fail.
struct StageID: Hashable {
    let key: ImageCacheKey
    let allowsPartial: Bool

    /// The stage of `key` that `request` joins: one that takes partial data if the
    /// request allows partial images.
    init(key: ImageCacheKey, for request: ImageRequest) {
        self.key = key
        allowsPartial = request.options.contains(.allowsPartialImages)
    }
}

/// Where a stage is found: originals by their image key, images by their full key.
enum StageKey: Hashable {
    case original(StageID)
    case image(StageID)
}

/// A stage whose outcome is a `Value`.
final class Stage<Value: Sendable>: StageCore, @unchecked Sendable {
    /// One who waits for the outcome.
    struct Subscriber {
        var priority: ImageRequest.Priority
        /// An `ImageTask` rather than a stage built on this one: what a task asked
        /// for is what the caches keep.
        let isTask: Bool
        /// Whether it is told of previews.
        var wantsPreviews = false
        let receive: @Sendable (StageEvent<Value>) -> Void
    }

    /// Subscribers by id (a task's id, or a stage's subscription number).
    var subscribers = SmallDictionary<Subscriber>()

    override var highestSubscriberPriority: ImageRequest.Priority? {
        var highest: ImageRequest.Priority?
        subscribers.forEach { highest = max(highest ?? $0.priority, $0.priority) }
        return highest
    }

    override func setPriority(_ priority: ImageRequest.Priority, ofSubscriber id: Int) {
        subscribers[id]?.priority = priority
    }

    override func removeSubscriber(_ id: Int) -> Bool {
        subscribers[id] = nil
        return subscribers.isEmpty
    }

    override func setWantsPreviews(ofSubscriber id: Int) {
        subscribers[id]?.wantsPreviews = true
    }

    /// Whether a task, not only other stages, waits for this outcome.
    var hasTaskSubscriber: Bool {
        var found = false
        subscribers.forEach { found = found || $0.isTask }
        return found
    }

    /// Closes the stage and hands back its subscribers in the order they came
    /// (tasks' ids grow with time), so each hears the outcome once.
    func close() -> [Subscriber] {
        isClosed = true
        defer { subscribers = SmallDictionary() }
        return subscribers.valuesByKey()
    }
}

/// A dictionary by integer key that keeps its first entry inline: most stages only
/// ever have one subscriber, and then cost no hash table.
struct SmallDictionary<Value> {
    private var first: (key: Int, value: Value)?
    private var others: [Int: Value] = [:]

    subscript(key: Int) -> Value? {
        get { first?.key == key ? first?.value : others[key] }
        set {
            if first?.key == key {
                if let newValue { first?.value = newValue } else { first = others.popFirst() }
            } else if first == nil, let newValue, others.isEmpty {
                first = (key, newValue)
            } else {
                others[key] = newValue
            }
        }
    }

    var isEmpty: Bool { first == nil }

    /// Calls `body` with every value, in no particular order.
    func forEach(_ body: (Value) -> Void) {
        guard let first else { return }
        body(first.value)
        for value in others.values { body(value) }
    }

    /// The values in the order of their keys.
    func valuesByKey() -> [Value] {
        guard let first else { return [] }
        if others.isEmpty { return [first.value] }
        return ([first] + others.map { ($0.key, $0.value) }).sorted { $0.key < $1.key }.map(\.value)
    }
}
