import Foundation

/// One request being loaded: cancel it, change its priority, follow its progress,
/// await its result.
///
/// Identical requests in flight share one transfer and one decode; cancelling a task
/// only stops the shared work when no other task still waits for it.
public final class ImageTask: Sendable, Hashable {
    /// Bytes received so far and the expected total, when the server said.
    public struct Progress: Sendable, Equatable {
        /// Bytes received.
        public let received: Int64
        /// Bytes expected, if known.
        public let expected: Int64?
    }

    /// Unique among the tasks of a process.
    package let id: Int
    /// What is being loaded.
    public let request: ImageRequest
    /// `request.cacheKey` and the URL's absolute string, computed once: the loader
    /// looks tasks up by them on every queue operation.
    let key: ImageCacheKey
    let urlString: String
    /// The name of the task's stage: its key, and whether it takes partial data.
    let stageKey: ImageStageKey

    private struct State {
        var priority: ImageRequest.Priority
        var result: Result<ImageResponse, ImagoError>?
        var waiters: [CheckedContinuation<Result<ImageResponse, ImagoError>, Never>] = []
        var progress: [AsyncStream<Progress>.Continuation] = []
        var previews: [AsyncStream<ImageResponse>.Continuation] = []
        var onCompletion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?
        /// The clock entry that ends the task at its deadline, while it runs.
        var deadlineTimer: Int?
        /// For a request with alternative URLs, the task loading the URL tried now:
        /// cancelling and priority go to it, its progress and previews come here.
        var current: ImageTask?
        /// Which of the request's URLs `current` loads: an attempt that failed at
        /// once may start the next before it is followed itself.
        var currentStep = -1
        /// The task of the whole request this one loads one URL of.
        var relaying: ImageTask?
    }

    private let state: Locked<State>
    private weak let pipeline: Pipeline?
    static let ids = Locked(0)

    init(request: ImageRequest, pipeline: Pipeline, onCompletion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?) {
        id = Self.ids.withLock { $0 += 1; return $0 }
        self.request = request
        key = request.cacheKey
        urlString = request.url.absoluteString
        stageKey = ImageStageKey(key, for: request)
        self.pipeline = pipeline
        state = Locked(State(priority: request.priority, onCompletion: onCompletion))
    }

    /// Stops waiting for the image; the shared transfer stops too when no other task
    /// waits for it. The task completes with `ImagoError.cancelled`.
    public func cancel() {
        if let current = state.withLock({ $0.current }) {
            current.cancel()
            complete(.failure(.cancelled))
        } else if let pipeline {
            pipeline.cancel([self])
        } else {
            complete(.failure(.cancelled))
        }
    }

    /// The task doing the work now: this one, or for a request with alternative
    /// URLs the task of the URL being tried.
    var loading: ImageTask {
        state.withLock { $0.current }?.loading ?? self
    }

    /// Makes `task`, the load of the request's URL at `step`, the one this task
    /// follows, unless it already follows a later one. False when this task has
    /// finished (then `task` is not wanted).
    func follow(_ task: ImageTask, step: Int) -> Bool {
        let followed = state.withLock { state -> Bool? in
            guard state.result == nil else { return false }
            guard step > state.currentStep else { return nil }
            state.current = task
            state.currentStep = step
            return true
        }
        guard let followed else { return true }
        guard followed else { return false }
        let priority = self.priority
        task.state.withLock { $0.relaying = self }
        if task.priority != priority { task.priority = priority }
        return true
    }

    /// The priority; changing it re-orders a queued load at once.
    public var priority: ImageRequest.Priority {
        get { state.withLock { $0.priority } }
        set {
            let changed = state.withLock { state in
                defer { state.priority = newValue }
                return state.priority != newValue && state.result == nil
            }
            guard changed else { return }
            if let current = state.withLock({ $0.current }) {
                current.priority = newValue
            } else {
                pipeline?.priorityChanged(self, to: newValue)
            }
        }
    }

    /// The result, once there is one.
    public var result: Result<ImageResponse, ImagoError>? { state.withLock { $0.result } }

    /// Whether the task has finished (succeeded, failed or been cancelled).
    public var isFinished: Bool { result != nil }

    /// Waits for the image. Throws `ImagoError`, or `CancellationError` when this
    /// task is cancelled or the Swift task awaiting it is (which cancels this one).
    public var response: ImageResponse {
        get async throws {
            switch await value {
            case .success(let response): return response
            case .failure(.cancelled): throw CancellationError()
            case .failure(let error): throw error
            }
        }
    }

    /// Waits for the result. If the Swift task awaiting it is cancelled, this task is
    /// cancelled and the wait ends at once with `ImagoError.cancelled`.
    package var value: Result<ImageResponse, ImagoError> {
        get async {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Result<ImageResponse, ImagoError>? in
                        if state.result == nil { state.waiters.append(continuation) }
                        return state.result
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                cancel()
            }
        }
    }

    /// Progress updates until the task finishes.
    public var progress: AsyncStream<Progress> {
        AsyncStream { continuation in
            let finished = state.withLock { state -> Bool in
                if state.result == nil { state.progress.append(continuation) }
                return state.result != nil
            }
            if finished { continuation.finish() }
        }
    }

    func reportProgress(_ progress: Progress) {
        let (continuations, relaying) = state.withLock { ($0.progress, $0.relaying) }
        for continuation in continuations { continuation.yield(progress) }
        relaying?.reportProgress(progress)
    }

    /// Progressive previews, in order, from the moment of the call until the task
    /// finishes; the stream then ends, and no preview follows the result. Only for a
    /// request with `ImageRequest.Options.progressivePreviews`, and only of
    /// progressive JPEGs and interlaced PNGs; others end with none. Each preview is
    /// the image as far as it has arrived (`image.isPartial`), at the request's size
    /// and with its processors; a reader slower than the download gets the newest.
    public var previews: AsyncStream<ImageResponse> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let finished = state.withLock { state -> Bool in
                if state.result == nil { state.previews.append(continuation) }
                return state.result != nil
            }
            if finished { continuation.finish() }
        }
    }

    /// Hands a preview to the readers of `previews`, unless the task has finished:
    /// checked and yielded under the lock `complete` takes, so that a preview never
    /// follows the result.
    func reportPreview(_ preview: ImageResponse) {
        let relaying = state.withLock { state -> ImageTask? in
            guard state.result == nil else { return nil }
            for continuation in state.previews { continuation.yield(preview) }
            return state.relaying
        }
        relaying?.reportPreview(preview)
    }

    /// Ends the task at its deadline unless it has finished by then; false when it has.
    func setDeadlineTimer(_ timer: Int) -> Bool {
        state.withLock { state in
            guard state.result == nil else { return false }
            state.deadlineTimer = timer
            return true
        }
    }

    /// Sets the result once; later calls are ignored. Returns whether this call set it.
    @discardableResult
    func complete(_ result: Result<ImageResponse, ImagoError>) -> Bool {
        let taken = state.withLock { state -> (State, Bool) in
            guard state.result == nil else { return (state, false) }
            state.result = result
            let old = state
            state.waiters = []
            state.progress = []
            state.previews = []
            state.onCompletion = nil
            state.deadlineTimer = nil
            state.current = nil
            state.relaying = nil
            return (old, true)
        }
        guard taken.1 else { return false }
        if let timer = taken.0.deadlineTimer { DeadlineClock.shared.cancel(timer) }
        // The completion first: a caller already waiting for `response` goes on after
        // it has run, and finds what it did (a list it appended to, an event sent).
        taken.0.onCompletion?(result)
        for waiter in taken.0.waiters { waiter.resume(returning: result) }
        for continuation in taken.0.progress { continuation.finish() }
        for continuation in taken.0.previews { continuation.finish() }
        return true
    }

    public static func == (lhs: ImageTask, rhs: ImageTask) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
