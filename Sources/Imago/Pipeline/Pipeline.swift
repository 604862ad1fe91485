import Foundation
import Synchronization

/// Which of the pipeline's work queues a stage waits or runs in.
enum PipelineQueue {
    /// Transfers: disk look-ups of originals and network loads (`concurrentLoads`).
    case transfers
    /// Decoding, processing and processed variants read back from disk.
    case decoding
}

/// The stages of every load in flight, their two work queues, and the one lock that
/// guards them.
///
/// A request becomes a subscription to the stage of its full key (image key, size,
/// processing). That stage builds on the decoded image of its key and size when it
/// processes, and on the original data of its image key when it decodes, so every
/// size and processing of one URL in flight shares one transfer and one disk read.
/// Each stage is coalesced: a request joins a stage already in flight, raises its
/// priority if it is more urgent, and the stage stops when its last subscriber
/// leaves, giving up its own upstream subscription in turn.
///
/// The stage graph is changed only with `lock` held and the lock is never held while
/// work runs, while a subscriber hears an event, or while a data loader is called,
/// so no two parts wait on each other (the memory cache's own short lock may be taken
/// inside it; the cache never calls back).
///
/// A lock rather than an actor: starting, cancelling and re-prioritising a task are
/// synchronous calls whose effects must land in order (a cancel right after a start
/// must find the subscription, a memory hit must complete before `task(with:)`
/// returns), and queueing one more request must stay near a microsecond with
/// 100,000 queued. An actor would make each of them an unordered hop.
///
/// `@unchecked Sendable`: every mutable field below `lock` is touched only with it
/// held (watched by the thread-sanitizer tests in `make sanitize`).
final class Pipeline: @unchecked Sendable {
    let configuration: ImageLoader.Configuration
    let lock = Lock()

    // Guarded by `lock`:
    var cache: (any ImageCaching)?
    var loadingTimeout = 60.0
    /// Original-data stages by the key of the full-size image (whose hash is kept).
    private var originals: [StageID: Stage<OriginalData>] = [:]
    private var images: [StageID: Stage<ImageResponse>] = [:]
    /// The disk keys of originals being revalidated in the background, served stale
    /// meanwhile: one revalidation each, however many loads read them.
    var revalidating: [String: Task<Void, Never>] = [:]
    private var transfers: WorkQueue
    private var decoding: WorkQueue
    /// Numbers of subscriptions held by stages, negative so that they never meet a
    /// task's id.
    private var lastSubscription = 0
    /// Preview decodes started, over the pipeline's life: tests hold it against the
    /// scans a file has.
    let previewDecodes = Atomic<Int>(0)

    init(configuration: ImageLoader.Configuration, cache: (any ImageCaching)?) {
        self.configuration = configuration
        self.cache = cache
        transfers = WorkQueue(limit: configuration.concurrentLoads)
        decoding = WorkQueue(limit: configuration.concurrentDecodes)
    }

    // MARK: - Settings

    /// How many transfers, or decodes and processings, run at once.
    func limit(of queue: PipelineQueue) -> Int {
        lock.withLock { queue == .transfers ? transfers.limit : decoding.limit }
    }

    func setLimit(_ limit: Int, of queue: PipelineQueue) {
        lock.withLock {
            if queue == .transfers { transfers.limit = max(1, limit) } else { decoding.limit = max(1, limit) }
        }
        pump()
    }

    /// Stages waiting for a transfer slot.
    var queuedTransfers: Int { lock.withLock { transfers.waiting } }

    /// Stages waiting for a decoding slot.
    var queuedDecodes: Int { lock.withLock { decoding.waiting } }

    /// Stages in flight, of every kind: none once every load has ended or been
    /// cancelled, which tests hold abandoned work to.
    var stagesInFlight: Int { lock.withLock { originals.count + images.count } }

    // MARK: - Tasks

    /// Subscribes `task` to the stage of its key, starting the stage if none is in
    /// flight.
    func submit(_ task: ImageTask) {
        let request = task.request
        let subscriber = Stage<ImageResponse>.Subscriber(
            priority: request.priority, isTask: true, wantsPreviews: request.options.contains(.progressivePreviews)
        ) { [task] event in
            switch event {
            case .progress(let progress): task.reportProgress(progress)
            case .preview(let preview): task.reportPreview(preview)
            case .partialData: break
            case .finished(let result): task.complete(result)
            }
        }
        lock.withLock {
            attach(subscriber, id: task.id, to: imageStage(for: task.stageID, request: request, priority: request.priority))
        }
        pump()
    }

    /// Takes `tasks` out of their stages under one lock, so none of them can start in
    /// a slot that another's cancellation freed; stages left without subscribers stop.
    func cancel(_ tasks: [ImageTask]) {
        var transfers: [Task<Void, Never>] = []
        lock.withLock {
            for task in tasks {
                guard let stage = images[task.stageID], stage.subscribers[task.id] != nil else { continue }
                detach(task.id, from: stage, stopping: &transfers)
            }
        }
        for transfer in transfers { transfer.cancel() }
        for task in tasks { task.complete(.failure(.cancelled)) }
        pump()
    }

    /// Moves `task`'s stage, and the stages under it, to the task's new priority.
    func priorityChanged(_ task: ImageTask, to priority: ImageRequest.Priority) {
        lock.withLock {
            guard let stage = images[task.stageID], stage.subscribers[task.id] != nil else { return }
            stage.setPriority(priority, ofSubscriber: task.id)
            updatePriority(of: stage)
        }
    }

    // MARK: - The stage graph (all with `lock` held)

    private func attach<Value>(_ subscriber: Stage<Value>.Subscriber, id: Int, to stage: Stage<Value>) {
        stage.subscribers[id] = subscriber
        if subscriber.priority > stage.priority { setPriority(stage, subscriber.priority) }
        if subscriber.wantsPreviews { enablePreviews(stage) }
    }

    /// A stage that wants previews asks the stage it builds on for them, down to the
    /// original, which then passes on the bytes as they arrive (from its next
    /// transfer start: bytes already dropped are not asked for again).
    private func enablePreviews(_ stage: StageCore) {
        guard !stage.wantsPreviews else { return }
        stage.wantsPreviews = true
        if let upstream = stage.upstream {
            upstream.stage.setWantsPreviews(ofSubscriber: upstream.subscriber)
            enablePreviews(upstream.stage)
        }
    }

    /// Removes a subscriber; a stage left with none stops: it leaves its queue, its
    /// transfer is cancelled, and it leaves the stage it builds on.
    private func detach(_ id: Int, from stage: StageCore, stopping transfers: inout [Task<Void, Never>]) {
        guard !stage.isClosed else { return }
        if stage.removeSubscriber(id) {
            stage.isClosed = true
            forget(stage)
            if let queue = stage.queue, stage.queuedWork != nil { withQueue(queue) { $0.remove(stage) } }
            if let task = stage.task { transfers.append(task) }
            if let upstream = stage.upstream { detach(upstream.subscriber, from: upstream.stage, stopping: &transfers) }
        } else {
            updatePriority(of: stage)
        }
    }

    private func updatePriority(of stage: StageCore) {
        if let highest = stage.highestSubscriberPriority, highest != stage.priority { setPriority(stage, highest) }
    }

    /// A stage's new priority reaches its queue entry and the stage it builds on.
    private func setPriority(_ stage: StageCore, _ priority: ImageRequest.Priority) {
        stage.priority = priority
        if let queue = stage.queue, stage.queuedWork != nil { withQueue(queue) { $0.reprioritize(stage) } }
        if let upstream = stage.upstream {
            upstream.stage.setPriority(priority, ofSubscriber: upstream.subscriber)
            updatePriority(of: upstream.stage)
        }
    }

    /// Drops a closing stage from its table, unless a newer stage took its key.
    private func forget(_ stage: StageCore) {
        switch stage.key {
        case .original(let key):
            if let index = originals.index(forKey: key), originals.values[index] === stage { originals.remove(at: index) }
        case .image(let key):
            if let index = images.index(forKey: key), images.values[index] === stage { images.remove(at: index) }
        }
    }

    private func withQueue<T>(_ queue: PipelineQueue, _ body: (inout WorkQueue) -> T) -> T {
        queue == .transfers ? body(&transfers) : body(&decoding)
    }

    /// Queues `work` for `stage`; `pump` runs it when a slot is free.
    func enqueue(_ stage: StageCore, in queue: PipelineQueue, work: @escaping @Sendable () -> Void) {
        stage.queue = queue
        withQueue(queue) { $0.enqueue(stage, work: work) }
    }

    /// Subscribes `stage` to the stage it builds on, making that one if it is not in
    /// flight.
    func subscribe<Value>(
        _ stage: StageCore, to upstream: Stage<Value>, receive: @escaping @Sendable (StageEvent<Value>) -> Void
    ) {
        lastSubscription -= 1
        stage.upstream = (upstream, lastSubscription)
        attach(.init(priority: stage.priority, isTask: false, wantsPreviews: stage.wantsPreviews, receive: receive),
               id: lastSubscription, to: upstream)
    }

    /// The original-data stage of `request`'s image key, made and queued if none is
    /// in flight.
    func originalStage(for request: ImageRequest, priority: ImageRequest.Priority) -> Stage<OriginalData> {
        let key = StageID(key: ImageCacheKey(imageKey: request.imageKey), for: request)
        if let stage = originals[key] { return stage }
        let stage = Stage<OriginalData>(key: .original(key), priority: priority)
        originals[key] = stage
        startOriginalStage(stage, request: request)
        return stage
    }

    /// The disk tier for `request`: remote images only (local ones are at hand
    /// already), and none with caching off. Called with the lock held.
    func diskCache(for request: ImageRequest) -> DiskCache? {
        guard cache != nil, case .remote = request.resource else { return nil }
        return configuration.diskCache
    }

    /// The image stage of `key`, made and started from `request` if none is in flight.
    func imageStage(for key: StageID, request: ImageRequest, priority: ImageRequest.Priority) -> Stage<ImageResponse> {
        if let stage = images[key] { return stage }
        let stage = Stage<ImageResponse>(key: .image(key), priority: priority)
        images[key] = stage
        startImageStage(stage, request: request)
        return stage
    }

    // MARK: - Running and finishing

    /// Starts queued work while slots are free. A transfer starts a task of its own;
    /// decoding and processing run on a dispatch queue instead of the Swift
    /// concurrency pool, which has one thread per core: a decode holding one would
    /// delay every timer and continuation behind it.
    func pump() {
        var transferWork: [@Sendable () -> Void] = [], decodingWork: [@Sendable () -> Void] = []
        lock.withLock {
            while let work = transfers.next() { transferWork.append(work) }
            while let work = decoding.next() { decodingWork.append(work) }
        }
        for work in transferWork { work() }
        for work in decodingWork { DispatchQueue.global(qos: .userInitiated).async(execute: work) }
    }

    /// Gives back the slot `stage` ran in; false if the stage was abandoned meanwhile
    /// (its outcome is dropped then).
    func endRun(of stage: StageCore) -> Bool {
        guard let queue = stage.queue else { return !stage.isClosed }
        stage.queue = nil
        stage.task = nil
        withQueue(queue) { $0.release() }
        return !stage.isClosed
    }

    /// Ends `stage` with `result`: `keep` runs first when a task (not only another
    /// stage) waits for the outcome, to put it in the caches before anyone hears of
    /// it; then the slot is freed, the stage leaves its table, and each subscriber
    /// hears the outcome once. An abandoned stage's outcome is dropped.
    func finish<Value>(_ stage: Stage<Value>, with result: Result<Value, ImagoError>, keep: (() -> Void)? = nil) {
        if let keep, lock.withLock({ !stage.isClosed && stage.hasTaskSubscriber }) { keep() }
        let subscribers = lock.withLock { () -> [Stage<Value>.Subscriber] in
            guard endRun(of: stage) else { return [] }
            forget(stage)
            return stage.close()
        }
        pump()
        for subscriber in subscribers { subscriber.receive(.finished(result)) }
    }

    /// Passes progress on to `stage`'s subscribers.
    func report<Value>(_ progress: ImageTask.Progress, to stage: Stage<Value>) {
        var receivers: [@Sendable (StageEvent<Value>) -> Void] = []
        lock.withLock { stage.subscribers.forEach { receivers.append($0.receive) } }
        for receive in receivers { receive(.progress(progress)) }
    }

    /// Passes a preview event on to those of `stage`'s subscribers that want
    /// previews, unless the stage has finished.
    func reportPreview<Value>(_ event: StageEvent<Value>, to stage: Stage<Value>) {
        var receivers: [@Sendable (StageEvent<Value>) -> Void] = []
        lock.withLock {
            guard !stage.isClosed else { return }
            stage.subscribers.forEach { if $0.wantsPreviews { receivers.append($0.receive) } }
        }
        for receive in receivers { receive(event) }
    }
}

extension Pipeline {
    /// Runs `work`, which makes a preview for `stage`, on a utility thread, one at a
    /// time per stage: while one runs, the newest asked for waits (and replaces any
    /// older one waiting), so a stage never makes more previews than it was offered
    /// and never falls behind the download. Nothing runs once the stage has finished.
    func schedulePreview(of stage: StageCore, _ work: @escaping @Sendable () -> Void) {
        let start = lock.withLock { () -> Bool in
            guard !stage.isClosed, stage.wantsPreviews else { return false }
            if stage.previewInFlight {
                stage.pendingPreview = work
                return false
            }
            stage.previewInFlight = true
            return true
        }
        guard start else { return }
        DispatchQueue.global(qos: .utility).async { [self] in
            var next: (@Sendable () -> Void)? = work
            while let current = next {
                current()
                next = lock.withLock {
                    defer { stage.pendingPreview = nil }
                    let pending = stage.isClosed ? nil : stage.pendingPreview
                    if pending == nil { stage.previewInFlight = false }
                    return pending
                }
            }
        }
    }
}
