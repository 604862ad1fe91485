import Foundation

/// Which of the pipeline's work queues a stage waits or runs in.
enum PipelineQueue: Sendable {
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
/// The graph is a value (`StageGraph`) reachable only through `graph`, its lock: it
/// is changed by its own `mutating` methods, and the lock is never held while work
/// runs, while a subscriber hears an event, or while another component is called
/// (a data loader, the memory tier, the memories of recent loads: what they hold for
/// a request is looked up before the lock, `StageContext.atHand`, and again when a
/// stage finished meanwhile), so no two parts wait on each other. What each kind of
/// stage does lives in its own type (`OriginalDataStage`, `DecodingStage`,
/// `ProcessingStage`), which sees a `StageContext` and no more; this class drives
/// them: it starts the work the graph hands out, applies what the stages publish
/// (`StageNews`) and delivers outcomes.
///
/// A lock rather than an actor: starting, cancelling and re-prioritising a task are
/// synchronous calls whose effects must land in order (a cancel right after a start
/// must find the subscription, a memory hit must complete before `task(with:)`
/// returns), and queueing one more request must stay near a microsecond with
/// 100,000 queued. An actor would make each of them an unordered hop.
final class Pipeline: StagePublishing {
    let configuration: ImageLoaderConfiguration
    let graph: Locked<StageGraph>
    /// What the stages share, made once: the configuration, the one HTTP cache over
    /// its disk and shared tiers, the background revalidations.
    private let settings: StageSettings
    /// The listeners of the loader's events.
    let events = LoadEventHub()

    init(configuration: ImageLoaderConfiguration, cache: (any ImageCaching)?) {
        self.configuration = configuration
        settings = StageSettings(configuration: configuration)
        graph = Locked(StageGraph(
            cache: cache, concurrentLoads: configuration.concurrentLoads, concurrentDecodes: configuration.concurrentDecodes))
    }

    /// Preview decodes started, over the pipeline's life: tests hold it against the
    /// scans a file has.
    var previewDecodes: Locked<Int> { settings.previewDecodes }

    /// What the stages see of the pipeline. Made when asked for, not kept: it holds
    /// the pipeline, which would then hold itself.
    var context: StageContext { StageContext(settings: settings, publisher: self) }

    // MARK: - Settings

    /// The memory tier of the loads started from now on.
    var cache: (any ImageCaching)? {
        get { graph.withLock { $0.cache } }
        set {
            // The cache replaced is released after the lock: its last release may
            // take the memory-pressure monitor's lock.
            var old = newValue
            graph.withLock { swap(&old, &$0.cache) }
        }
    }

    /// The bound of each load started from now on.
    var loadingTimeout: Double {
        get { graph.withLock { $0.loadingTimeout } }
        set { graph.withLock { $0.loadingTimeout = newValue } }
    }

    /// How many transfers, or decodes and processings, run at once.
    func limit(of queue: PipelineQueue) -> Int {
        graph.withLock { queue == .transfers ? $0.transfers.limit : $0.decoding.limit }
    }

    func setLimit(_ limit: Int, of queue: PipelineQueue) {
        let runnable = graph.withLock { graph in
            if queue == .transfers { graph.transfers.limit = max(1, limit) } else { graph.decoding.limit = max(1, limit) }
            return graph.takeRunnable()
        }
        start(runnable)
    }

    /// Stages waiting for a transfer slot.
    var queuedTransfers: Int { graph.withLock { $0.transfers.waiting } }

    /// Stages waiting for a decoding slot.
    var queuedDecodes: Int { graph.withLock { $0.decoding.waiting } }

    /// Stages in flight, of every kind: none once every load has ended or been
    /// cancelled, which tests hold abandoned work to.
    var stagesInFlight: Int { graph.withLock { $0.stagesInFlight } }

    // MARK: - Tasks

    /// Subscribes `task` to the stage of its key, starting the stage (and those it
    /// builds on) if none is in flight, and starts what may run, under one lock.
    /// `cache` is the memory tier the caller looked in (the loads' one).
    func submit(_ task: ImageTask, cache: (any ImageCaching)?) {
        let request = task.request
        let context = context
        let builtOn: ImageCacheKey? = if case .processed(let key) = task.stageKey { key.builtOnInMemory } else { nil }
        let subscriber = StageSubscriber(
            priority: request.priority, isTask: true, wantsPreviews: request.options.contains(.progressivePreviews))
        let receive: @Sendable (StageEvent<ImageResponse>) -> Void = { [task, events] event in
            switch event {
            case .progress(let progress):
                task.reportProgress(progress)
                events.emit(task.id, url: request.url, .progress(progress))
            case .retrying(let attempt, let error, let delay):
                events.emit(task.id, url: request.url, .retrying(attempt: attempt, error: error, delay: delay))
            case .preview(let preview): task.reportPreview(preview)
            case .partialData: break
            case .finished(let result): task.complete(result)
            }
        }
        // The caller looked in the memory tier before this, and `atHand` looks in the
        // memories of recent loads, both without the lock: a stage of this key that
        // finished in between stored its image or failure after the look-ups, and
        // starting another would ask the server twice. So a load that would start work
        // looks again, with the count of finished stages it looked after, until none
        // finished meanwhile; one joining a stage in flight goes straight on.
        var lookedAfter: Int?
        while true {
            let atHand = context.atHand(for: request, cache: cache, builtOn: builtOn)
            let attached: Attached = graph.withLock { graph in
                guard graph.finishedStages == lookedAfter || graph.stage(of: task) != nil else {
                    return .lookAgain(after: graph.finishedStages)
                }
                return attach(task, receive: receive, subscriber: subscriber, atHand: atHand, in: &graph, context: context)
            }
            switch attached {
            case .lookAgain(let finished):
                if completeFromMemory(task, cache: cache) { return }
                lookedAfter = finished
            case .attached(let runnable, let timeout):
                if DeadlineClock.isFinite(timeout) { endAtDeadline(task, after: timeout) }
                start(runnable)
                return
            }
        }
    }

    /// Ends `task` with `timedOut` once `timeout` seconds have passed, unless it has
    /// finished by then.
    private func endAtDeadline(_ task: ImageTask, after timeout: Double) {
        // Answered from a task, as the work is, never on the clock's thread: the
        // task's completion runs the caller's code, and when the concurrency pool is
        // saturated a load is not failed for time it could not use.
        //
        // The task is held strongly: whichever way it ends, its completion takes the
        // timer off the clock (or `setDeadlineTimer` refuses it), which lets it go. A
        // weak reference would give every task a side table, and every retain and
        // release of a task anywhere in the pipeline would take the slow path through
        // it: a tenth of cancelling a queued load.
        let timer = DeadlineClock.shared.schedule(after: timeout) { [weak self, task] in
            Task { [weak self, task] in
                self?.end([task], with: .timedOut(url: task.urlString, seconds: timeout))
            }
        }
        if !task.setDeadlineTimer(timer) { DeadlineClock.shared.cancel(timer) }
    }

    /// What `submit` did under the lock.
    private enum Attached {
        /// The task is subscribed: the work that may run, and the load's bound.
        case attached(runnable: [(work: @Sendable (StageRun) -> Void, run: StageRun)], timeout: Double)
        /// Stages finished since the look-ups (this many in all): look again.
        case lookAgain(after: Int)
    }

    /// Completes `task` with its image from `cache`, the memory tier, when its request
    /// reads there and the image is in it; false otherwise.
    func completeFromMemory(_ task: ImageTask, cache: (any ImageCaching)?) -> Bool {
        let request = task.request
        guard request.cachePolicy.reads.contains(.memory), let image = cache?.image(forKey: task.key) else { return false }
        task.complete(.success(ImageResponse(image: image, url: request.url, source: .memory, metrics: ImageResponse.Metrics())))
        return true
    }

    /// Subscribes `task` to the stage of its key, made and started (with those it
    /// builds on) if none is in flight.
    private func attach(
        _ task: ImageTask, receive: @escaping @Sendable (StageEvent<ImageResponse>) -> Void, subscriber: StageSubscriber,
        atHand: AtHand, in graph: inout StageGraph, context: StageContext
    ) -> Attached {
        let request = task.request
        var subscriber = subscriber
        // One deadline per load, from now: the wait in the queues, the transfer with
        // its retries, and the decode share it.
        let timeout = graph.loadingTimeout
        subscriber.deadline = DeadlineClock.isFinite(timeout) ? .now + .seconds(timeout) : nil
        switch task.stageKey {
        case .decoded(let key):
            let stage = DecodingStage.stage(
                for: key, request: request, priority: request.priority, atHand: atHand, in: &graph, context: context)
            graph.attach(subscriber, id: task.id, receive: receive, to: stage)
        case .processed(let key):
            let stage = ProcessingStage.stage(
                for: key, request: request, priority: request.priority, atHand: atHand, in: &graph, context: context)
            graph.attach(subscriber, id: task.id, receive: receive, to: stage)
        }
        return .attached(runnable: graph.takeRunnable(), timeout: timeout)
    }

    /// Takes `tasks` out of their stages under one lock, so none of them can start in
    /// a slot that another's cancellation freed; stages left without subscribers stop.
    func cancel(_ tasks: [ImageTask]) {
        end(tasks, with: .cancelled)
    }

    /// Takes `tasks` out of their stages, as `cancel` does, ending each with `error`.
    private func end(_ tasks: [ImageTask], with error: ImagoError) {
        var transfers: [Task<Void, Never>] = []
        let runnable = graph.withLock { graph in
            for task in tasks {
                guard let stage = graph.stage(of: task) else { continue }
                graph.detach(task.id, from: stage, stopping: &transfers)
            }
            return graph.takeRunnable()
        }
        for transfer in transfers { transfer.cancel() }
        for task in tasks { task.complete(.failure(error)) }
        start(runnable)
    }

    /// Moves `task`'s stage, and the stages under it, to the task's new priority.
    func priorityChanged(_ task: ImageTask, to priority: ImageRequest.Priority) {
        graph.withLock { graph in
            guard let stage = graph.stage(of: task), graph.hasSubscriber(task.id, of: stage) else { return }
            graph.setPriority(priority, ofSubscriber: task.id, of: stage)
        }
    }

    // MARK: - Running and finishing

    /// Starts the work the graph handed out. A transfer starts a task of its own;
    /// decoding and processing run on a dispatch queue (`runDecoding`) instead of the
    /// Swift concurrency pool, which has one thread per core: a decode holding one
    /// would delay every timer and continuation behind it.
    func start(_ runnable: [(work: @Sendable (StageRun) -> Void, run: StageRun)]) {
        for (work, run) in runnable {
            if run.queue == .transfers {
                work(run)
            } else {
                runDecoding { work(run) }
            }
        }
    }

    /// Runs `work`, a decode or processing, at `qos`; on Linux, while the user
    /// interacts and the configuration lets decodes yield, at `background`, nice 10
    /// there, below the main thread (`UserInteraction` says why).
    private func runDecoding(qos: DispatchQoS.QoSClass = .userInitiated, _ work: @escaping @Sendable () -> Void) {
        var qos = qos
        #if os(Linux)
        if configuration.decodingYieldsToInteraction, UserInteraction.isActive { qos = .background }
        #endif
        DispatchQueue.global(qos: qos).async(execute: work)
    }

    @discardableResult
    func publish<Key: StageKind>(_ news: StageNews<Key>, of stage: StageHandle<Key>) -> Bool {
        switch news {
        case .progress(let progress):
            for receive in graph.withLock({ $0.receivers(of: stage, previewsOnly: false) }) { receive(.progress(progress)) }
        case .retrying(let attempt, let error, let delay):
            for receive in graph.withLock({ $0.receivers(of: stage, previewsOnly: false) }) {
                receive(.retrying(attempt: attempt, error: error, delay: delay))
            }
        case .preview(let event):
            for receive in graph.withLock({ $0.receivers(of: stage, previewsOnly: true) }) { receive(event) }
        case .previewWork(let work):
            schedulePreview(of: Key.erase(stage), work)
        case .transferStarted(let transfer):
            return graph.withLock { $0.setTransfer(transfer, of: Key.erase(stage)) }
        case .next(let run, let body):
            let (live, runnable) = graph.withLock { graph in
                let live = graph.endRun(of: Key.erase(stage), run)
                if live { body(&graph) }
                return (live, graph.takeRunnable())
            }
            start(runnable)
            return live
        case .finished(let result, let run, let keep):
            if let keep, graph.withLock({ $0.record(stage)?.core.hasTaskSubscriber ?? false }) { keep() }
            let (receivers, runnable) = graph.withLock { graph in
                let receivers = graph.endRun(of: Key.erase(stage), run) ? graph.close(stage) : []
                return (receivers, graph.takeRunnable())
            }
            start(runnable)
            for receive in receivers { receive(.finished(result)) }
        }
        return true
    }

    /// Runs `work`, which makes a preview for `stage`, as decodes run, one at a
    /// time per stage: while one runs, the newest asked for waits (and replaces any
    /// older one waiting), so a stage never makes more previews than it was offered
    /// and never falls behind the download. Nothing runs once the stage has finished.
    private func schedulePreview(of stage: AnyStage, _ work: @escaping @Sendable () -> Void) {
        guard graph.withLock({ $0.startPreview(of: stage, work) }) else { return }
        runDecoding(qos: .utility) { [self] in
            var next: (@Sendable () -> Void)? = work
            while let current = next {
                current()
                next = graph.withLock { $0.nextPreview(of: stage) }
            }
        }
    }

    // MARK: - Stored images and background work

    /// Waits until the revalidations running in the background have ended, or
    /// `seconds` have passed; true when they all ended.
    func backgroundWorkEnded(within seconds: Double) async -> Bool {
        await settings.revalidations.ended(within: seconds)
    }

    /// The HTTP cache of the loads started now for `request`, and their timeout.
    func storage(for request: ImageRequest) -> (tiers: HTTPCache?, loadingTimeout: Double) {
        let (cache, timeout) = graph.withLock { ($0.cache, $0.loadingTimeout) }
        return (context.httpCache(for: request, cache: cache), timeout)
    }
}
