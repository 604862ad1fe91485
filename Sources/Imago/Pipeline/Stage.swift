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
    /// An attempt at the transfer failed and another follows after `delay` seconds.
    case retrying(attempt: Int, error: ImagoError, delay: Double)
    /// The stage's outcome; nothing follows it.
    case finished(Result<Value, ImagoError>)
}

// MARK: - Keys

/// The name of an original-data stage: an image key, and whether the stage takes
/// partial data. Requests that allow partial images share stages only among
/// themselves, so that a transfer cut short is never handed to a request that must
/// see it fail.
struct OriginalKey: Hashable, Sendable {
    /// The full-size image's cache key, whose hash is computed once.
    let key: ImageCacheKey
    let allowsPartial: Bool
    /// Requests share a stage only under one cache policy: a reload must not join
    /// a disk read, nor a cache-only load a transfer.
    let cachePolicy: ImageRequest.CachePolicy

    init(_ request: ImageRequest) {
        key = ImageCacheKey(imageKey: request.imageKey)
        allowsPartial = request.options.contains(.allowsPartialImages)
        cachePolicy = request.cachePolicy
    }
}

/// The name of a stage that decodes an original at a size (nil for full size).
struct DecodedKey: Hashable, Sendable {
    /// The unprocessed image's cache key.
    let key: ImageCacheKey
    let allowsPartial: Bool
    /// Requests share a stage only under one cache policy: a reload must not join
    /// a disk read, nor a cache-only load a transfer.
    let cachePolicy: ImageRequest.CachePolicy

    init(_ original: OriginalKey, targetSize: TargetSize?) {
        key = ImageCacheKey(imageKey: original.key.imageKey, targetSize: targetSize)
        allowsPartial = original.allowsPartial
        cachePolicy = original.cachePolicy
    }

    /// The stage it builds on.
    var original: OriginalKey { OriginalKey(self) }
}

/// The name of a stage that processes a decoded image.
struct ProcessedKey: Hashable, Sendable {
    /// The processed image's cache key.
    let key: ImageCacheKey
    let allowsPartial: Bool
    /// Requests share a stage only under one cache policy: a reload must not join
    /// a disk read, nor a cache-only load a transfer.
    let cachePolicy: ImageRequest.CachePolicy

    init(_ decoded: DecodedKey, processing: [String]) {
        key = ImageCacheKey(imageKey: decoded.key.imageKey, targetSize: decoded.key.targetSize, processing: processing)
        allowsPartial = decoded.allowsPartial
        cachePolicy = decoded.cachePolicy
    }

    /// The stage it builds on.
    var decoded: DecodedKey { DecodedKey(self) }
}

extension OriginalKey {
    fileprivate init(_ decoded: DecodedKey) {
        key = ImageCacheKey(imageKey: decoded.key.imageKey)
        allowsPartial = decoded.allowsPartial
        cachePolicy = decoded.cachePolicy
    }
}

extension DecodedKey {
    fileprivate init(_ processed: ProcessedKey) {
        key = processed.key.decodedKey
        allowsPartial = processed.allowsPartial
        cachePolicy = processed.cachePolicy
    }
}

/// The stage a task subscribes to: the image of its full key, decoded, or decoded
/// and processed.
enum ImageStageKey: Hashable, Sendable {
    case decoded(DecodedKey)
    case processed(ProcessedKey)

    /// The stage `request`, whose cache key is `key`, joins.
    init(_ key: ImageCacheKey, for request: ImageRequest) {
        let decoded = DecodedKey(OriginalKey(request), targetSize: key.targetSize)
        self = key.processing.isEmpty ? .decoded(decoded) : .processed(ProcessedKey(decoded, processing: key.processing))
    }
}

// MARK: - A stage's state

/// One stage in flight: its slot in its pool and its `serial`, so that a stage that
/// closed and a newer one in the same slot are never confused. Two integers: found
/// again without hashing a key, and copied without reference counting.
struct StageHandle<Key: Hashable & Sendable>: Hashable, Sendable {
    let slot: Int
    let serial: Int
}

/// Any stage, by kind.
enum AnyStage: Hashable, Sendable {
    case original(StageHandle<OriginalKey>)
    case decoded(StageHandle<DecodedKey>)
    case processed(StageHandle<ProcessedKey>)
}

/// A stage's subscription to the stage it builds on.
struct Upstream: Sendable {
    let stage: AnyStage
    let subscriber: Int
}

/// Where a stage is in its life. A stage that finished or was abandoned has left
/// its pool; no phase stands for it.
enum StagePhase: Sendable {
    /// Being started, or between a run and what follows it (finishing, or going on
    /// to the stage it builds on): neither queued, running nor subscribed.
    case starting
    /// Answered without a slot (by the memories of recent loads); its outcome is on
    /// its way.
    case answering
    /// Subscribed to the stage it builds on, waiting for its outcome.
    case awaiting(Upstream)
    /// Waiting in `queue` for a slot.
    case queued(PipelineQueue)
    /// Running in a slot; `transfer` is the task cancelled if the stage is abandoned.
    case running(transfer: Task<Void, Never>?)

    var upstream: Upstream? {
        if case .awaiting(let upstream) = self { upstream } else { nil }
    }
}

/// Whether a stage makes previews, and the one it makes now.
enum PreviewState: Sendable {
    /// No subscriber wants previews.
    case off
    /// A subscriber wants them; none is being made.
    case idle
    /// One is being made; `next`, the newest asked for meanwhile, is made after it.
    case making(next: (@Sendable () -> Void)?)

    var isWanted: Bool {
        if case .off = self { false } else { true }
    }
}

/// One who waits for a stage's outcome, whatever the stage's kind.
struct StageSubscriber: Sendable {
    var priority: ImageRequest.Priority
    /// When it stops waiting: a task's own deadline, or the stage's built on this one;
    /// nil for none.
    var deadline: ContinuousClock.Instant?
    /// An `ImageTask` rather than a stage built on this one: what a task asked for is
    /// what the caches keep.
    let isTask: Bool
    /// Whether it is told of previews.
    var wantsPreviews = false
}

/// What every stage keeps, whatever its outcome's type: the graph walks stages of
/// every kind through it.
struct StageCore: Sendable {
    let serial: Int
    /// The highest priority among the subscribers.
    var priority: ImageRequest.Priority
    /// The latest deadline among the subscribers (nil: one of them has none): the
    /// stage's work is bounded by it, and nobody waits past it.
    var deadline: ContinuousClock.Instant? = .now
    var phase = StagePhase.starting
    var previews = PreviewState.off
    /// Its place among equals in its work queue: the order it first arrived in (0
    /// until it is first queued).
    var sequence = 0
    /// Subscribers by id (a task's id, or a stage's subscription number).
    var subscribers = SmallDictionary<StageSubscriber>()

    /// The highest priority among the subscribers; nil when there are none.
    var highestSubscriberPriority: ImageRequest.Priority? {
        var highest: ImageRequest.Priority?
        subscribers.forEach { highest = max(highest ?? $0.priority, $0.priority) }
        return highest
    }

    /// Whether a task, not only other stages, waits for this outcome.
    var hasTaskSubscriber: Bool {
        var found = false
        subscribers.forEach { found = found || $0.isTask }
        return found
    }
}

/// What removing a subscriber from a stage left.
enum SubscriberRemoval {
    /// Other subscribers: the highest priority among them, and the stage's own.
    case others(highest: ImageRequest.Priority?, stagePriority: ImageRequest.Priority)
    /// None: the stage has left its pool, and was doing `phase` (queued in its work
    /// queue at `sequence`).
    case last(phase: StagePhase, sequence: Int)
}

/// A stage in flight: its state, and how each subscriber hears its events.
struct StageRecord<Value: Sendable>: Sendable {
    var core: StageCore
    /// By subscriber id, as `core.subscribers`.
    var receivers = SmallDictionary<@Sendable (StageEvent<Value>) -> Void>()

    init(serial: Int, priority: ImageRequest.Priority) {
        core = StageCore(serial: serial, priority: priority)
    }

    var serial: Int { core.serial }
}

/// The stages in flight of one kind: the one place a stage of that kind is found by
/// key, made, and dropped. Stages live in slots of an array, reused once free, so a
/// stage is reached through its handle by index; only finding one by its key hashes.
struct StagePool<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private var slotsByKey: [Key: Int] = [:]
    private var slots: [(key: Key, record: StageRecord<Value>)?] = []
    /// The serial of the stage in each slot, 0 for a free one (serials start at 1).
    /// A handle is checked against this, not against the slot: reading the serial
    /// out of an optional slot copied the whole record (every reference it holds
    /// retained, then released), which was a fifth of the pipeline's own work.
    private var serials: [Int] = []
    private var freeSlots: [Int] = []

    var count: Int { slotsByKey.count }

    private func holds(_ handle: StageHandle<Key>) -> Bool {
        serials[handle.slot] == handle.serial
    }

    /// The stage under `key`, made with `serial` if none is in flight; `created`
    /// says which.
    mutating func stage(
        for key: Key, priority: ImageRequest.Priority, serial: () -> Int
    ) -> (handle: StageHandle<Key>, created: Bool) {
        if let slot = slotsByKey[key] {
            return (StageHandle(slot: slot, serial: serials[slot]), false)
        }
        let entry = (key: key, record: StageRecord<Value>(serial: serial(), priority: priority))
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = entry
            serials[slot] = entry.record.serial
        } else {
            slot = slots.count
            slots.append(entry)
            serials.append(entry.record.serial)
        }
        slotsByKey[key] = slot
        return (StageHandle(slot: slot, serial: entry.record.serial), true)
    }

    /// The stage `handle` names while it is in flight; nil once it has left.
    subscript(handle: StageHandle<Key>) -> StageRecord<Value>? {
        holds(handle) ? slots[handle.slot]?.record : nil
    }

    /// Changes the stage `handle` names in place; nil once it has left.
    mutating func modify<Result>(_ handle: StageHandle<Key>, _ body: (inout StageRecord<Value>) -> Result) -> Result? {
        guard holds(handle) else { return nil }
        return body(&slots[handle.slot]!.record)
    }

    /// The stage under `key` in flight.
    func handle(for key: Key) -> StageHandle<Key>? {
        slotsByKey[key].map { StageHandle(slot: $0, serial: serials[$0]) }
    }

    /// Removes subscriber `id` from the stage `handle` names: nil when the stage has
    /// left or the subscriber was not there; else what the removal left (the stage
    /// has left its pool when it was the last subscriber). Only what the caller
    /// needs comes out: a copy of the stage's state, subscribers and all, was most
    /// of the cost of cancelling a queued load.
    mutating func removeSubscriber(_ id: Int, from handle: StageHandle<Key>) -> SubscriberRemoval? {
        let removal = modify(handle) { record -> SubscriberRemoval? in
            guard record.core.subscribers[id] != nil else { return nil }
            record.core.subscribers[id] = nil
            record.receivers[id] = nil
            guard record.core.subscribers.isEmpty else {
                return .others(highest: record.core.highestSubscriberPriority, stagePriority: record.core.priority)
            }
            return .last(phase: record.core.phase, sequence: record.core.sequence)
        }
        guard let removal = removal ?? nil else { return nil }
        if case .last = removal { _ = free(handle.slot) }
        return removal
    }

    /// Takes the stage `handle` names out of the pool; nil if it has left already.
    mutating func remove(_ handle: StageHandle<Key>) -> StageRecord<Value>? {
        guard holds(handle) else { return nil }
        return free(handle.slot)?.record
    }

    /// Empties `slot`, moving its entry out rather than copying it.
    private mutating func free(_ slot: Int) -> (key: Key, record: StageRecord<Value>)? {
        guard let entry = slots[slot].take() else { return nil }
        serials[slot] = 0
        slotsByKey[entry.key] = nil
        freeSlots.append(slot)
        return entry
    }
}

/// A dictionary by integer key that keeps its first entry inline: most stages only
/// ever have one subscriber, and then cost no hash table.
struct SmallDictionary<Value: Sendable>: Sendable {
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

    /// Calls `body` with every key and value, in no particular order.
    func forEachWithKey(_ body: (Int, Value) -> Void) {
        guard let first else { return }
        body(first.key, first.value)
        for (key, value) in others { body(key, value) }
    }

    /// The values in the order of their keys.
    func valuesByKey() -> [Value] {
        guard let first else { return [] }
        if others.isEmpty { return [first.value] }
        return ([first] + others.map { ($0.key, $0.value) }).sorted { $0.key < $1.key }.map(\.value)
    }
}
