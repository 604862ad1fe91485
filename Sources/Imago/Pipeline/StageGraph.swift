/// A kind of stage: its key type names one stage of the kind, and its pool in the
/// graph holds the stages of the kind in flight.
protocol StageKind: Hashable, Sendable {
    /// What a stage of this kind delivers.
    associatedtype Value: Sendable
    /// Runs `body` on the graph's pool of this kind.
    static func withPool<Result>(_ graph: inout StageGraph, _ body: (inout StagePool<Self, Value>) -> Result) -> Result
    /// The handle as any stage.
    static func erase(_ handle: StageHandle<Self>) -> AnyStage
}

extension OriginalKey: StageKind {
    typealias Value = OriginalData
    static func withPool<Result>(_ graph: inout StageGraph, _ body: (inout StagePool<Self, Value>) -> Result) -> Result {
        body(&graph.originals)
    }
    static func erase(_ handle: StageHandle<Self>) -> AnyStage { .original(handle) }
}

extension DecodedKey: StageKind {
    typealias Value = ImageResponse
    static func withPool<Result>(_ graph: inout StageGraph, _ body: (inout StagePool<Self, Value>) -> Result) -> Result {
        body(&graph.decoded)
    }
    static func erase(_ handle: StageHandle<Self>) -> AnyStage { .decoded(handle) }
}

extension ProcessedKey: StageKind {
    typealias Value = ImageResponse
    static func withPool<Result>(_ graph: inout StageGraph, _ body: (inout StagePool<Self, Value>) -> Result) -> Result {
        body(&graph.processed)
    }
    static func erase(_ handle: StageHandle<Self>) -> AnyStage { .processed(handle) }
}

/// What a piece of queued work is handed when it gets its slot: the queue whose slot
/// it holds, and the settings it runs under, read when it starts.
struct StageRun: Sendable {
    let queue: PipelineQueue
    /// Seconds left, when the work starts, until the latest deadline of the loads
    /// waiting for it: the bound of a decode. (A transfer has none of its own: it
    /// stops when the last load waiting for it has ended.)
    let loadingTimeout: Double
    let priority: ImageRequest.Priority
    /// Whether a subscriber wanted previews when the work started: a transfer passes
    /// on the bytes as they arrive only then.
    let previews: Bool
}

/// Everything the pipeline changes while loads run: the stages in flight, one pool
/// per kind, the two work queues, and the settings loads read when they start.
///
/// A value, reachable only through the pipeline's `Locked` wrapper, and every
/// operation that changes the graph a `mutating` method: that they run with the
/// lock held is a fact the compiler checks. Nothing here runs work, calls a data
/// loader or tells a subscriber anything; those happen after the lock is dropped,
/// on what these methods hand back.
struct StageGraph: Sendable {
    /// The memory tier of loads started from now on; nil for no caching.
    var cache: (any ImageCaching)?
    /// The bound of each load started from now on, from its start to its image.
    var loadingTimeout = 60.0
    var originals = StagePool<OriginalKey, OriginalData>()
    var decoded = StagePool<DecodedKey, ImageResponse>()
    var processed = StagePool<ProcessedKey, ImageResponse>()
    var transfers: WorkQueue
    var decoding: WorkQueue
    private var lastSerial = 0
    /// Stages finished so far. A load looks in the memory tier and the memories of
    /// recent loads before it takes the lock; when a stage finished since (storing its
    /// image or failure after that look-up), `Pipeline.submit` looks again rather than
    /// start the work over; so does a stage going on to what it builds on.
    private(set) var finishedStages = 0
    /// Numbers of subscriptions held by stages, negative so that they never meet a
    /// task's id.
    private var lastSubscription = 0

    init(cache: (any ImageCaching)?, concurrentLoads: Int, concurrentDecodes: Int) {
        self.cache = cache
        transfers = WorkQueue(limit: concurrentLoads)
        decoding = WorkQueue(limit: concurrentDecodes)
    }

    /// Stages in flight, of every kind.
    var stagesInFlight: Int { originals.count + decoded.count + processed.count }

    // MARK: - Stages by kind

    /// The stage of `key`, made if none is in flight; `created` says which (the
    /// caller then starts it).
    mutating func stage<Key: StageKind>(
        for key: Key, priority: ImageRequest.Priority
    ) -> (handle: StageHandle<Key>, created: Bool) {
        lastSerial += 1
        let serial = lastSerial
        return Key.withPool(&self) { $0.stage(for: key, priority: priority) { serial } }
    }

    /// The stage `handle` names, while it is in flight.
    mutating func record<Key: StageKind>(_ handle: StageHandle<Key>) -> StageRecord<Key.Value>? {
        Key.withPool(&self) { $0[handle] }
    }

    /// Whether the stage is still in flight (neither finished nor abandoned).
    mutating func isLive(_ stage: AnyStage) -> Bool {
        core(of: stage) != nil
    }

    private mutating func core(of stage: AnyStage) -> StageCore? {
        modify(stage) { $0 }
    }

    /// Runs `body` on the state of `stage`, whatever its kind; nil once it has left.
    private mutating func modify<Result>(_ stage: AnyStage, _ body: (inout StageCore) -> Result) -> Result? {
        switch stage {
        case .original(let handle): originals.modify(handle) { body(&$0.core) }
        case .decoded(let handle): decoded.modify(handle) { body(&$0.core) }
        case .processed(let handle): processed.modify(handle) { body(&$0.core) }
        }
    }

    /// Removes subscriber `id` from `stage`, whatever its kind (see
    /// `StagePool.removeSubscriber`).
    private mutating func removeSubscriber(_ id: Int, of stage: AnyStage) -> SubscriberRemoval? {
        switch stage {
        case .original(let handle): originals.removeSubscriber(id, from: handle)
        case .decoded(let handle): decoded.removeSubscriber(id, from: handle)
        case .processed(let handle): processed.removeSubscriber(id, from: handle)
        }
    }

    private mutating func withQueue<Result>(_ queue: PipelineQueue, _ body: (inout WorkQueue) -> Result) -> Result {
        queue == .transfers ? body(&transfers) : body(&decoding)
    }

    // MARK: - Subscribing

    /// Adds a subscriber to `handle`'s stage: the stage takes its priority if it is
    /// more urgent, and makes previews if it wants them.
    mutating func attach<Key: StageKind>(
        _ subscriber: StageSubscriber, id: Int, receive: @escaping @Sendable (StageEvent<Key.Value>) -> Void,
        to handle: StageHandle<Key>
    ) {
        let priority = Key.withPool(&self) { pool in
            pool.modify(handle) { record -> ImageRequest.Priority in
                record.core.subscribers[id] = subscriber
                record.receivers[id] = receive
                return record.core.priority
            }
        }
        guard let priority else { return }
        let stage = Key.erase(handle)
        if subscriber.priority > priority { setPriority(of: stage, to: subscriber.priority) }
        extendDeadline(of: stage, to: subscriber.deadline)
        if subscriber.wantsPreviews { enablePreviews(stage) }
    }

    /// Subscribes `stage` to `upstream`, the stage it builds on, which waits then.
    mutating func subscribe<Key: StageKind>(
        _ stage: AnyStage, to upstream: StageHandle<Key>, receive: @escaping @Sendable (StageEvent<Key.Value>) -> Void
    ) {
        lastSubscription -= 1
        let id = lastSubscription
        guard let (priority, deadline, previews) = modify(stage, { core -> (ImageRequest.Priority, ContinuousClock.Instant?, Bool) in
            core.phase = .awaiting(Upstream(stage: Key.erase(upstream), subscriber: id))
            return (core.priority, core.deadline, core.previews.isWanted)
        }) else { return }
        attach(
            StageSubscriber(priority: priority, deadline: deadline, isTask: false, wantsPreviews: previews), id: id, receive: receive,
            to: upstream)
    }

    /// A subscriber that waits until `deadline` (nil: without one) makes the stage,
    /// and those it builds on, work at least as long. A deadline is never shortened:
    /// a subscriber that leaves early leaves the work bounded by the one it had.
    private mutating func extendDeadline(of stage: AnyStage, to deadline: ContinuousClock.Instant?) {
        var next: (AnyStage, ContinuousClock.Instant?)? = (stage, deadline)
        while let (stage, deadline) = next {
            next = nil
            let upstream = modify(stage) { core -> Upstream? in
                guard let current = core.deadline else { return nil }
                if let deadline, deadline <= current { return nil }
                core.deadline = deadline
                return core.phase.upstream
            }
            guard let upstream = upstream ?? nil else { return }
            _ = modify(upstream.stage) { $0.subscribers[upstream.subscriber]?.deadline = deadline }
            next = (upstream.stage, deadline)
        }
    }

    /// A stage that wants previews asks the stage it builds on for them, down to the
    /// original, which then passes on the bytes as they arrive (from its next
    /// transfer start: bytes already dropped are not asked for again).
    private mutating func enablePreviews(_ stage: AnyStage) {
        var current = stage
        while true {
            // Stops at a stage that wants them already, and at the original.
            let upstream = modify(current) { core -> Upstream? in
                guard !core.previews.isWanted else { return nil }
                core.previews = .idle
                return core.phase.upstream
            }
            guard let upstream = upstream ?? nil else { return }
            _ = modify(upstream.stage) { $0.subscribers[upstream.subscriber]?.wantsPreviews = true }
            current = upstream.stage
        }
    }

    /// Removes a subscriber; a stage left with none stops: it leaves its pool and its
    /// queue, its transfer is added to `transfers` to be cancelled, and it leaves the
    /// stage it builds on in turn.
    mutating func detach(_ id: Int, from stage: AnyStage, stopping transfers: inout [Task<Void, Never>]) {
        var next: (id: Int, stage: AnyStage)? = (id, stage)
        while let (id, stage) = next {
            next = nil
            switch removeSubscriber(id, of: stage) {
            case nil: return
            case .others(let highest, let stagePriority)?:
                if let highest, highest != stagePriority { setPriority(of: stage, to: highest) }
                return
            case .last(let phase, let sequence)?:
                switch phase {
                case .queued(let queue): withQueue(queue) { $0.remove(sequence: sequence) }
                case .running(let transfer?): transfers.append(transfer)
                case .awaiting(let upstream): next = (upstream.subscriber, upstream.stage)
                case .starting, .answering, .running(transfer: nil): break
                }
            }
        }
    }

    /// Changes one subscriber's priority; the stage, and those it builds on, follow.
    mutating func setPriority(_ priority: ImageRequest.Priority, ofSubscriber id: Int, of stage: AnyStage) {
        _ = modify(stage) { $0.subscribers[id]?.priority = priority }
        updatePriority(of: stage)
    }

    /// Whether a subscriber with `id` waits on `stage`.
    mutating func hasSubscriber(_ id: Int, of stage: AnyStage) -> Bool {
        modify(stage) { $0.subscribers[id] != nil } ?? false
    }

    private mutating func updatePriority(of stage: AnyStage) {
        guard let core = core(of: stage), let highest = core.highestSubscriberPriority, highest != core.priority else { return }
        setPriority(of: stage, to: highest)
    }

    /// A stage's new priority reaches its queue entry and the stage it builds on.
    private mutating func setPriority(of stage: AnyStage, to priority: ImageRequest.Priority) {
        guard let core = modify(stage, { core -> StageCore in
            core.priority = priority
            return core
        }) else { return }
        switch core.phase {
        case .queued(let queue): withQueue(queue) { $0.reprioritize(sequence: core.sequence, to: priority) }
        case .awaiting(let upstream): setPriority(priority, ofSubscriber: upstream.subscriber, of: upstream.stage)
        case .starting, .answering, .running: break
        }
    }

    // MARK: - Running

    /// Queues `work` for `stage`; `takeRunnable` hands it out when a slot is free.
    mutating func enqueue(_ stage: AnyStage, in queue: PipelineQueue, work: @escaping @Sendable (StageRun) -> Void) {
        // Taken whether or not the stage has a place already: an unused number only
        // leaves a gap in the order.
        let arrival = withQueue(queue) { $0.nextSequence() }
        guard let (priority, sequence) = modify(stage, { core -> (ImageRequest.Priority, Int) in
            core.phase = .queued(queue)
            if core.sequence == 0 { core.sequence = arrival }
            return (core.priority, core.sequence)
        }) else { return }
        withQueue(queue) { $0.enqueue(stage, priority: priority, sequence: sequence, work: work) }
    }

    /// Marks `stage` as answered without a slot.
    mutating func answer(_ stage: AnyStage) {
        _ = modify(stage) { $0.phase = .answering }
    }

    /// The queued work that may start now, each with its slot taken and its stage
    /// marked running.
    mutating func takeRunnable() -> [(work: @Sendable (StageRun) -> Void, run: StageRun)] {
        var runnable: [(work: @Sendable (StageRun) -> Void, run: StageRun)] = []
        takeRunnable(from: .transfers, into: &runnable)
        takeRunnable(from: .decoding, into: &runnable)
        return runnable
    }

    private mutating func takeRunnable(
        from queue: PipelineQueue, into runnable: inout [(work: @Sendable (StageRun) -> Void, run: StageRun)]
    ) {
        while let (stage, work) = withQueue(queue, { $0.next() }) {
            let found = modify(stage) { core -> (ImageRequest.Priority, ContinuousClock.Instant?, Bool) in
                core.phase = .running(transfer: nil)
                return (core.priority, core.deadline, core.previews.isWanted)
            }
            let (priority, deadline, previews) = found ?? (.normal, nil, false)
            let left = deadline.map { max(0, ($0 - .now).seconds) } ?? .infinity
            runnable.append((work, StageRun(queue: queue, loadingTimeout: left, priority: priority, previews: previews)))
        }
    }

    /// Records the task of `stage`'s running transfer, to be cancelled if the stage is
    /// abandoned; false when it was abandoned already (the caller cancels it then).
    mutating func setTransfer(_ transfer: Task<Void, Never>, of stage: AnyStage) -> Bool {
        let live: Void? = modify(stage) { core in
            if case .running = core.phase { core.phase = .running(transfer: transfer) }
        }
        return live != nil
    }

    /// Gives back the slot of `run` (nil for a stage that held none); false when the
    /// stage was abandoned meanwhile (its outcome is dropped then).
    mutating func endRun(of stage: AnyStage, _ run: StageRun?) -> Bool {
        if let run { withQueue(run.queue) { $0.release() } }
        let live: Void? = modify(stage) { $0.phase = .starting }
        return live != nil
    }

    /// Takes a finished stage out of its pool and hands back its subscribers' receivers
    /// in the order they came (tasks' ids grow with time), so each hears the outcome
    /// once; none when it was abandoned.
    mutating func close<Key: StageKind>(_ handle: StageHandle<Key>) -> [@Sendable (StageEvent<Key.Value>) -> Void] {
        guard let record = Key.withPool(&self, { $0.remove(handle) }) else { return [] }
        finishedStages &+= 1
        return record.receivers.valuesByKey()
    }

    /// The receivers of `handle`'s subscribers; only those that want previews when
    /// `previewsOnly`.
    mutating func receivers<Key: StageKind>(
        of handle: StageHandle<Key>, previewsOnly: Bool
    ) -> [@Sendable (StageEvent<Key.Value>) -> Void] {
        guard let record = record(handle) else { return [] }
        var receivers: [@Sendable (StageEvent<Key.Value>) -> Void] = []
        if !previewsOnly {
            record.receivers.forEach { receivers.append($0) }
            return receivers
        }
        record.core.subscribers.forEachWithKey { id, subscriber in
            if subscriber.wantsPreviews, let receive = record.receivers[id] { receivers.append(receive) }
        }
        return receivers
    }

    // MARK: - Previews

    /// Starts a preview of `stage` unless one is being made, in which case `work`
    /// waits as the next (replacing any older one waiting); false then, or when the
    /// stage no longer wants previews or has left.
    mutating func startPreview(of stage: AnyStage, _ work: @escaping @Sendable () -> Void) -> Bool {
        modify(stage) { core -> Bool in
            switch core.previews {
            case .off: return false
            case .making:
                core.previews = .making(next: work)
                return false
            case .idle:
                core.previews = .making(next: nil)
                return true
            }
        } ?? false
    }

    /// The preview to make next after one ended; nil when none waits (or the stage
    /// has left), and no preview is being made then.
    mutating func nextPreview(of stage: AnyStage) -> (@Sendable () -> Void)? {
        modify(stage) { core -> (@Sendable () -> Void)? in
            guard case .making(let next) = core.previews else { return nil }
            core.previews = next == nil ? .idle : .making(next: nil)
            return next
        } ?? nil
    }
}

extension StageGraph {
    /// The stage `task` subscribed to, while it is in flight.
    mutating func stage(of task: ImageTask) -> AnyStage? {
        switch task.stageKey {
        case .decoded(let key): decoded.handle(for: key).map(AnyStage.decoded)
        case .processed(let key): processed.handle(for: key).map(AnyStage.processed)
        }
    }
}
