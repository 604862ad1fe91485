import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads images: the seeds' AsyncImageLoader, as a modern pipeline.
///
/// A request is answered from the memory cache at once when it can be; otherwise it
/// joins the queue. Identical requests in flight (same cache key, size and
/// processing) share one transfer and one decode. At most `concurrentLoads` loads run
/// at a time, highest priority first; each is bounded as a whole by
/// `loadingTimeout`, retried per the retry policy, and decoded off the caller's
/// thread. Every operation on the queue is O(1) or O(log n) in the number of queued
/// requests.
///
/// Safe from any thread. The target-based calls of the seeds are `@MainActor`, as are
/// their callbacks and the notifications.
public final class ImageLoader: Sendable {
    /// The loader the seeds call `sharedLoader`: the shared memory cache and the
    /// shared disk cache in the platform's cache directory.
    public static let shared = ImageLoader(configuration: Configuration(diskCache: .shared))

    /// Settings fixed when the loader is made.
    public struct Configuration: Sendable {
        /// Fetches the bytes: URLSession for http(s), the file system for `file:`,
        /// the URL itself for `data:`.
        public var dataLoader: any DataLoading
        /// Decoders.
        public var decoders: ImageDecoderRegistry
        /// When and how often failed transfers are tried again.
        public var retryPolicy: RetryPolicy
        /// The largest image decoded (pixels, all frames).
        public var maximumPixelCount: Int
        /// Headers added to every request (authorization, say).
        public var headers: [String: String]
        /// Changes each URL request just before it is sent.
        public var requestModifier: (@Sendable (URLRequest) -> URLRequest)?
        /// The disk tier for http(s) images; nil for none. `ImageLoader.shared` uses
        /// `DiskCache.shared`; other loaders have none unless given one, so that a
        /// loader made for a test or a job never shares files by surprise.
        public var diskCache: DiskCache?
        /// What the disk tier keeps.
        public var diskCachePolicy: DiskCachePolicy
        /// How long past its freshness a stored image may still be served when the
        /// network fails (unless the server forbade it); nil never to.
        public var staleIfErrorAllowance: Double?

        /// The defaults.
        public init(
            dataLoader: any DataLoading = DefaultDataLoader(),
            decoders: ImageDecoderRegistry = .shared,
            retryPolicy: RetryPolicy = RetryPolicy(),
            maximumPixelCount: Int = DecodingOptions.defaultMaximumPixelCount,
            headers: [String: String] = [:],
            requestModifier: (@Sendable (URLRequest) -> URLRequest)? = nil,
            diskCache: DiskCache? = nil,
            diskCachePolicy: DiskCachePolicy = .originals,
            staleIfErrorAllowance: Double? = 7 * 86400
        ) {
            self.dataLoader = dataLoader
            self.decoders = decoders
            self.retryPolicy = retryPolicy
            self.maximumPixelCount = maximumPixelCount
            self.headers = headers
            self.requestModifier = requestModifier
            self.diskCache = diskCache
            self.diskCachePolicy = diskCachePolicy
            self.staleIfErrorAllowance = staleIfErrorAllowance
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration

    let state: Locked<State>

    /// Makes a loader.
    public init(configuration: Configuration = Configuration(), cache: (any ImageCaching)? = ImageCache.shared) {
        self.configuration = configuration
        state = Locked(State(cache: cache))
    }

    // MARK: - The seeds' properties

    /// The memory cache loads use; nil disables caching. A new value applies to the
    /// requests made after it is set.
    public var cache: (any ImageCaching)? {
        get { state.withLock { $0.cache } }
        set { state.withLock { $0.cache = newValue } }
    }

    /// How many loads (transfer and decode) run at once; 2 by default, as in the
    /// seeds. Raising it starts queued loads at once.
    public var concurrentLoads: Int {
        get { state.withLock { $0.concurrentLoads } }
        set {
            state.withLock { $0.concurrentLoads = max(1, newValue) }
            pump()
        }
    }

    /// The most seconds one load may take, transfer, retries and decode together,
    /// counted from when it starts running (60 by default, as in the seeds).
    public var loadingTimeout: Double {
        get { state.withLock { $0.loadingTimeout } }
        set { state.withLock { $0.loadingTimeout = max(0.001, newValue) } }
    }

    /// How many requests are waiting for a free slot.
    public var queuedCount: Int { state.withLock { $0.jobs.count - $0.running } }

    // MARK: - Loading

    /// Starts loading `request` and returns its task at once.
    ///
    /// A memory-cache hit completes the task before this returns.
    @discardableResult
    public func task(with request: ImageRequest) -> ImageTask {
        makeTask(request, onCompletion: nil)
    }

    /// Loads `request`; cancelling the calling task cancels the load.
    public func image(for request: ImageRequest) async throws -> ImageResponse {
        let task = task(with: request)
        return try await withTaskCancellationHandler {
            try await task.response
        } onCancel: {
            task.cancel()
        }
    }

    /// Loads the image at `url`.
    public func image(for url: URL) async throws -> ImageResponse {
        try await image(for: ImageRequest(url: url))
    }

    /// The image for `request` if the memory cache has it.
    public func cachedImage(for request: ImageRequest) -> DecodedImage? {
        state.withLock { $0.cache }?.image(forKey: request.cacheKey)
    }

    /// Creates a task, answers it from the memory cache or queues it.
    func makeTask(_ request: ImageRequest, onCompletion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?) -> ImageTask {
        let task = ImageTask(request: request, loader: self, onCompletion: onCompletion)
        let scheme = request.url.scheme?.lowercased() ?? ""
        guard ["http", "https", "file", "data"].contains(scheme), request.urlRequest.url != nil else {
            task.complete(.failure(.invalidURL(request.url.absoluteString)))
            return task
        }
        let key = task.key
        let cache = state.withLock { $0.cache }
        if let image = cache?.image(forKey: key) {
            task.complete(.success(ImageResponse(image: image, url: request.url, source: .memory, metrics: ImageMetrics())))
            return task
        }
        state.withLock { state in
            state.byURL[task.urlString, default: []].append(task)
            if let job = state.jobs[key], !job.isAbandoned {
                job.subscribers[task.id] = task
                if request.priority > job.priority { state.reprioritize(job, to: request.priority) }
            } else {
                let job = Job(key: key, request: request, cache: cache, diskCache: configuration.diskCache, sequence: state.nextSequence())
                job.subscribers[task.id] = task
                state.jobs[key] = job
                state.enqueue(job)
            }
        }
        pump()
        return task
    }

    /// Removes `task` from its load, and stops the load if nobody else waits for it.
    func cancel(_ task: ImageTask) {
        cancel([task])
    }

    /// Cancels `tasks` together: all leave the queue under one lock, so none of them
    /// can start in a slot that another's cancellation freed.
    public func cancel(_ tasks: [ImageTask]) {
        state.withLock { state in
            for task in tasks { state.remove(task) }
        }
        for task in tasks { task.complete(.failure(.cancelled)) }
    }

    func priorityChanged(_ task: ImageTask) {
        state.withLock { state in
            guard let job = state.jobs[task.key], job.subscribers[task.id] != nil else { return }
            state.reprioritize(job, to: job.subscribers.values.map(\.priority).max() ?? .normal)
        }
    }

    /// Starts queued loads while slots are free.
    private func pump() {
        state.withLock { state in
            while state.running < state.concurrentLoads, let job = state.dequeue() {
                state.running += 1
                let timeout = state.loadingTimeout
                job.startedAt = ContinuousClock.now
                job.task = Task.detached(priority: job.priority.taskPriority) { [self] in
                    let result = await self.perform(job, timeout: timeout)
                    self.finish(job, with: result)
                }
            }
        }
    }

    private func finish(_ job: Job, with result: Result<ImageResponse, ImagoError>) {
        let subscribers = state.withLock { state -> [ImageTask] in
            state.running -= 1
            if state.jobs[job.key] === job { state.jobs[job.key] = nil }
            let subscribers = Array(job.subscribers.values)
            for task in subscribers { state.forgetURL(of: task) }
            job.subscribers = [:]
            return subscribers
        }
        pump()
        if case .success(let response) = result, let cache = job.cache {
            cache.setImage(response.image, forKey: job.key)
        }
        for task in subscribers.sorted(by: { $0.id < $1.id }) {
            task.complete(result)
        }
    }

    // MARK: - One load

    private func perform(_ job: Job, timeout: Double) async -> Result<ImageResponse, ImagoError> {
        let request = job.request
        let queued = job.startedAt.map { Self.seconds(job.enqueuedAt.duration(to: $0)) } ?? 0
        let url = request.url.absoluteString
        let result = await withDeadline(seconds: timeout, url: url) { [self] () async throws(ImagoError) -> ImageResponse in
            var metrics = ImageMetrics()
            metrics.queued = queued
            let clock = ContinuousClock()
            let transferStart = clock.now
            if let stored = try await storedVariant(request, job: job) {
                return ImageResponse(image: stored, url: request.url, source: .disk, metrics: metrics)
            }
            let (data, source, attempts) = try await originalData(request, job: job)
            metrics.transfer = Self.seconds(transferStart.duration(to: clock.now))
            metrics.attempts = attempts
            metrics.bytes = data.count
            try Task.checkCancellation(or: .cancelled)

            let decoders = configuration.decoders
            let options = DecodingOptions(targetSize: request.targetSize, maximumPixelCount: configuration.maximumPixelCount)
            let processors = request.processors
            let (image, decode, processing) = try await Self.offThePool { () throws(ImagoError) in
                let decodeStart = clock.now
                var image = try decoders.decode(data, options: options)
                let decoded = clock.now
                if !processors.isEmpty { image = image.processed(by: processors) }
                return (image, Self.seconds(decodeStart.duration(to: decoded)), Self.seconds(decoded.duration(to: clock.now)))
            }
            metrics.decode = decode
            metrics.processing = processing
            storeVariant(image, request: request, job: job)
            return ImageResponse(image: image, url: request.url, source: source, metrics: metrics)
        }
        return result
    }

    /// Fetches the bytes, retrying per the policy; a non-2xx status is an error,
    /// except a 304 answering a conditional request (`extraHeaders` carries the
    /// validators then).
    func fetch(_ request: ImageRequest, job: Job, extraHeaders: [String: String] = [:]) async throws(ImagoError) -> (DataResponse, Int) {
        var urlRequest = request.urlRequest
        for (name, value) in extraHeaders { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in configuration.headers where urlRequest.value(forHTTPHeaderField: name) == nil {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if let modifier = configuration.requestModifier { urlRequest = modifier(urlRequest) }
        var attempt = 0
        while true {
            attempt += 1
            let error: ImagoError
            var retryAfter: String?
            do throws(ImagoError) {
                let response = try await configuration.dataLoader.loadData(for: urlRequest) { [weak self] received, expected in
                    self?.reportProgress(job, ImageTask.Progress(received: received, expected: expected))
                }
                if let status = response.statusCode, !(200..<300).contains(status), !(status == 304 && !extraHeaders.isEmpty) {
                    retryAfter = response.headers["retry-after"]
                    throw .httpStatus(status, url: request.url.absoluteString)
                }
                return (response, attempt)
            } catch let failure {
                error = failure
            }
            guard let delay = configuration.retryPolicy.delay(afterAttempt: attempt, error: error, retryAfter: retryAfter) else {
                throw error
            }
            do { try await Task.sleep(for: .seconds(delay)) } catch { throw .cancelled }
        }
    }

    private func reportProgress(_ job: Job, _ progress: ImageTask.Progress) {
        for task in state.withLock({ _ in Array(job.subscribers.values) }) { task.reportProgress(progress) }
    }

    /// Runs CPU-heavy work (decoding, processing) on a dispatch queue instead of the
    /// Swift concurrency pool: that pool has one thread per core, and a decode holding
    /// one would delay every timer and continuation behind it.
    static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws(ImagoError) -> T) async throws(ImagoError) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ImagoError>, Never>) in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(returning: Result { () throws(ImagoError) in try work() })
            }
        }
        return try result.get()
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Runs `body`, failing with `timedOut` if it takes longer than `seconds`; the body
/// is cancelled then, so a stalled transfer stops.
///
/// The body runs as a task of its own rather than in a task group, because leaving a
/// group waits for every child: a data loader that ignored cancellation would hold
/// the load past its deadline. Here the deadline answers on time regardless.
func withDeadline<T: Sendable>(
    seconds: Double, url: String, _ body: @escaping @Sendable () async throws(ImagoError) -> T
) async -> Result<T, ImagoError> {
    let state = Locked<(done: Bool, work: Task<Void, Never>?, timer: Task<Void, Never>?)>((false, nil, nil))
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ImagoError>, Never>) in
            let finish: @Sendable (Result<T, ImagoError>) -> Void = { result in
                let tasks = state.withLock { state -> (Task<Void, Never>?, Task<Void, Never>?)? in
                    guard !state.done else { return nil }
                    state.done = true
                    return (state.work, state.timer)
                }
                guard let tasks else { return }
                tasks.0?.cancel()
                tasks.1?.cancel()
                continuation.resume(returning: result)
            }
            let work = Task {
                do throws(ImagoError) { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            let timer = Task {
                do { try await Task.sleep(for: .seconds(seconds)) } catch { return }
                finish(.failure(.timedOut(url: url, seconds: seconds)))
            }
            let early = state.withLock { state -> Bool in
                state.work = work
                state.timer = timer
                return state.done
            }
            if early {
                work.cancel()
                timer.cancel()
            } else if Task.isCancelled {
                // Cancelled before `work` was stored, where the handler could not see it.
                work.cancel()
            }
        }
    } onCancel: {
        let work = state.withLock { $0.work }
        work?.cancel()
    }
}

extension Task where Success == Never, Failure == Never {
    /// Throws `error` when the current task is cancelled.
    static func checkCancellation(or error: ImagoError) throws(ImagoError) {
        if Task.isCancelled { throw error }
    }
}

extension ImageRequest.Priority {
    var taskPriority: TaskPriority {
        switch self {
        case .veryLow, .low: .background
        case .normal: .medium
        case .high, .veryHigh: .high
        }
    }
}

// MARK: - The queue

/// One transfer and decode, shared by every task with the same cache key. Its fields
/// are guarded by the loader's lock, except the immutable ones the running load reads.
final class Job: @unchecked Sendable {
    let key: ImageCacheKey
    let request: ImageRequest
    /// The cache the first request was made with: where the result goes.
    let cache: (any ImageCaching)?
    /// The disk tier, for http(s) requests made while caching was on.
    let diskCache: DiskCache?
    let sequence: Int
    let enqueuedAt = ContinuousClock.now
    var startedAt: ContinuousClock.Instant?
    var subscribers: [Int: ImageTask] = [:]
    var priority: ImageRequest.Priority
    /// Bumped when the priority changes, so older queue entries are skipped.
    var generation = 0
    var task: Task<Void, Never>?
    var isAbandoned = false

    init(key: ImageCacheKey, request: ImageRequest, cache: (any ImageCaching)?, diskCache: DiskCache?, sequence: Int) {
        self.key = key
        self.request = request
        self.cache = cache
        let scheme = request.url.scheme?.lowercased()
        // Local files are never copied into the disk tier (they are on disk already),
        // and with caching off (`cache` nil) nothing is stored anywhere.
        self.diskCache = cache != nil && (scheme == "http" || scheme == "https") ? diskCache : nil
        self.sequence = sequence
        priority = request.priority
    }
}

/// A place in the queue: higher priority first, then first come, first served.
struct QueueEntry: Comparable {
    let priority: Int
    let sequence: Int
    let generation: Int
    let job: Job

    static func < (lhs: QueueEntry, rhs: QueueEntry) -> Bool {
        lhs.priority != rhs.priority ? lhs.priority > rhs.priority : lhs.sequence < rhs.sequence
    }

    static func == (lhs: QueueEntry, rhs: QueueEntry) -> Bool {
        lhs.priority == rhs.priority && lhs.sequence == rhs.sequence && lhs.generation == rhs.generation
    }
}

extension ImageLoader {
    struct State {
        var cache: (any ImageCaching)?
        var concurrentLoads = 2
        var loadingTimeout = 60.0
        /// Every job not yet finished, queued or running, by cache key.
        var jobs: [ImageCacheKey: Job] = [:]
        /// Queued jobs; entries of cancelled or re-prioritised jobs stay until popped
        /// and are skipped then, which keeps cancelling O(1).
        var queue = Heap<QueueEntry>()
        var running = 0
        var sequence = 0
        /// Unfinished tasks by URL, for the seeds' cancel-by-URL. Arrays, not sets: a
        /// URL rarely has more than a few tasks, and a set per URL costs an allocation
        /// and hashing for every request.
        var byURL: [String: [ImageTask]] = [:]
        /// Target-bound subscriptions (the seeds' target/action calls).
        var targets: [ObjectIdentifier: TargetRecord] = [:]
        var isSweeping = false
        /// Listeners of `events`.
        var eventStreams: [Int: AsyncStream<ImageLoader.Event>.Continuation] = [:]

        mutating func nextSequence() -> Int {
            sequence += 1
            return sequence
        }

        mutating func enqueue(_ job: Job) {
            queue.insert(QueueEntry(priority: job.priority.rawValue, sequence: job.sequence, generation: job.generation, job: job))
        }

        mutating func dequeue() -> Job? {
            while let entry = queue.popMin() {
                let job = entry.job
                guard jobs[job.key] === job, job.task == nil, entry.generation == job.generation else { continue }
                return job
            }
            return nil
        }

        mutating func forgetURL(of task: ImageTask) {
            byURL[task.urlString]?.removeAll { $0 === task }
            if byURL[task.urlString]?.isEmpty == true { byURL[task.urlString] = nil }
        }

        /// Takes `task` out of its load; stops the load when it was the last consumer.
        mutating func remove(_ task: ImageTask) {
            forgetURL(of: task)
            let key = task.key
            guard let job = jobs[key], job.subscribers.removeValue(forKey: task.id) != nil else { return }
            if job.subscribers.isEmpty {
                if let running = job.task {
                    // The slot is freed when the transfer has actually stopped.
                    running.cancel()
                    job.isAbandoned = true
                } else {
                    jobs[key] = nil
                }
            } else {
                reprioritize(job, to: job.subscribers.values.map(\.priority).max() ?? .normal)
            }
        }

        mutating func reprioritize(_ job: Job, to priority: ImageRequest.Priority) {
            guard priority != job.priority else { return }
            job.priority = priority
            guard job.task == nil else { return }
            job.generation += 1
            enqueue(job)
        }
    }
}
