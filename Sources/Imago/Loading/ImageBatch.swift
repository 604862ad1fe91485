import Foundation

extension ImageLoader {
    /// Loads every request of `requests`, at most `maxConcurrent` at a time, and
    /// gives each outcome as it completes: the batch job of a server or a tool (a
    /// list of URLs to thumbnails on disk) in bounded memory.
    ///
    /// `requests` is read lazily, one request each time a place frees up, on a
    /// thread of the batch's own, so it may be endless, generated on the fly, or
    /// block while it waits for input (lines of a pipe): a million requests cost no
    /// more memory than `maxConcurrent`. At most `maxConcurrent` requests are loading
    /// or waiting to be taken from the sequence at any time; the loader's own limits
    /// (`concurrentLoads` transfers, `Configuration.concurrentDecodes` decodes) apply
    /// within them. Identical requests in flight together share one load, and the
    /// caches answer later repeats.
    ///
    /// Items come in completion order, each with its place in `requests`. Stopping
    /// the iteration (a `break`, a thrown error) or cancelling the task that iterates
    /// cancels the loads in flight and reads no further request; the sequence then
    /// ends.
    ///
    /// ```swift
    /// let loader = ImageLoader(configuration: .server())
    /// let requests = urls.lazy.map { ImageRequest(url: $0, targetSize: .thumbnail(256)) }
    /// for await item in loader.images(for: requests) {
    ///     switch item.result {
    ///     case .success(let response):
    ///         try response.image.write(to: folder.appendingPathComponent("\(item.index).jpg"))
    ///     case .failure(let error):
    ///         print(error)  // it names its URL
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - requests: What to load; read once, from a thread of the batch's own (so
    ///     the batch takes it over: nothing else may use it).
    ///   - maxConcurrent: Requests loading or waiting to be taken at once, at least
    ///     1. Nil for twice `concurrentLoads` plus `Configuration.concurrentDecodes`:
    ///     enough to keep every transfer slot busy while finished transfers wait for
    ///     a core to decode them.
    public func images<Requests: Sequence<ImageRequest>>(
        for requests: sending Requests, maxConcurrent: Int? = nil
    ) -> ImageLoader.Batch {
        ImageLoader.Batch(
            loader: self, input: BatchInput(requests),
            window: max(1, maxConcurrent ?? concurrentLoads * 2 + configuration.concurrentDecodes))
    }
}

extension ImageLoader {
    /// Loads every request of `requests` as `images(for:maxConcurrent:)` does, and
    /// hands each outcome to `body` the moment its load completes, on the thread
    /// that completed it; returns once every request has completed.
    ///
    /// Nothing waits for a consumer's turn in between: an image is let go as soon
    /// as `body` returns, so a tool decoding photos by the thousand holds only the
    /// ones being decoded, where an iteration also holds those waiting for the
    /// iterating task to be scheduled (on two busy cores, up to four more
    /// full-size photos at a time). `body` runs on several threads at once and
    /// must not block for long: the places of the window free up as it returns.
    ///
    /// Cancelling the calling task cancels the loads in flight, reads no further
    /// request, and returns at once.
    ///
    /// ```swift
    /// let loader = ImageLoader(configuration: .server())
    /// let requests = urls.lazy.map { ImageRequest(url: $0, targetSize: .thumbnail(256)) }
    /// await loader.loadEach(requests) { item in
    ///     if case .failure(let error) = item.result { print(error) }  // it names its URL
    /// }
    /// ```
    public func loadEach<Requests: Sequence<ImageRequest>>(
        _ requests: sending Requests, maxConcurrent: Int? = nil, _ body: @escaping @Sendable (Batch.Item) -> Void
    ) async {
        let run = BatchRun(
            loader: self, window: max(1, maxConcurrent ?? concurrentLoads * 2 + configuration.concurrentDecodes)
        ) { outcome in
            body(Batch.Item(index: outcome.index, request: outcome.request, result: outcome.result))
        }
        run.start(reading: BatchInput(requests))
        _ = await run.next()
    }

    /// The outcomes of a batch of requests, in completion order; made by
    /// `ImageLoader.images(for:maxConcurrent:)`.
    ///
    /// The input is read once, so a batch is iterated once: a second iteration ends at
    /// once. The sequence never throws: a request that fails is an item with a failure,
    /// and a cancelled iteration just ends.
    public struct Batch: AsyncSequence, Sendable {
        /// One request's outcome.
        public struct Item: Sendable {
            /// The request's place in the input sequence, counted from 0.
            public let index: Int
            /// The request.
            public let request: ImageRequest
            /// The image, or why there is none.
            public let result: Result<ImageResponse, ImagoError>
        }

        let loader: ImageLoader
        let input: BatchInput
        let window: Int

        /// Starts loading: the input is read and loaded from now on, as places free up.
        public func makeAsyncIterator() -> Iterator {
            let run = BatchRun(loader: loader, window: window)
            run.start(reading: input)
            return Iterator(handle: BatchHandle(run))
        }

        /// Waits for the next outcome.
        public struct Iterator: AsyncIteratorProtocol {
            let handle: BatchHandle

            /// The next request to complete; nil once every request has completed, or
            /// when the iterating task was cancelled (which stops the batch).
            public mutating func next() async -> Item? {
                await handle.run.next()
            }
        }
    }
}

/// A batch's input, handed over to the thread that reads it.
///
/// `@unchecked Sendable`: `images(for:maxConcurrent:)` takes the sequence as
/// `sending`, so no one else holds it, and it leaves this box once, under the lock,
/// to be read by that one thread alone.
final class BatchInput: @unchecked Sendable {
    private let lock = Lock()
    private var reader: ((_ proceed: () -> Bool, _ body: (ImageRequest) -> Void) -> Void)?

    init<Requests: Sequence<ImageRequest>>(_ requests: sending Requests) {
        reader = { proceed, body in
            var iterator = requests.makeIterator()
            while proceed(), let request = iterator.next() { body(request) }
        }
    }

    /// Reads the sequence, the first time it is called: calls `proceed` before
    /// each request is read, and stops when it returns false; hands each request
    /// read to `body`.
    func read(while proceed: () -> Bool, _ body: (ImageRequest) -> Void) {
        let reader = lock.withLock {
            defer { self.reader = nil }
            return self.reader
        }
        reader?(proceed, body)
    }
}

/// Held by the iterator alone: when the consumer lets go of it (the loop ended or
/// was left), the batch stops. The run itself is held by its reading thread and its
/// loads' completions too, so it cannot tell on its own.
final class BatchHandle: Sendable {
    let run: BatchRun

    init(_ run: BatchRun) {
        self.run = run
    }

    deinit {
        run.stop()
    }
}

/// One iteration of a batch: the thread that reads the input and starts loads, the
/// loads in flight, and the outcomes not yet taken.
///
/// A place is taken before each request is read and given back when its outcome is
/// taken by the consumer, so the requests held (read, loading, or done and waiting)
/// never exceed the window, however slow the consumer.
final class BatchRun: Sendable {
    /// A completed request: its index, the request, its result.
    typealias Outcome = (index: Int, request: ImageRequest, result: Result<ImageResponse, ImagoError>)

    private struct State {
        var ready: [Outcome] = []
        var readyStart = 0
        var waiter: CheckedContinuation<Outcome?, Never>?
        /// Loads started and not completed, by index; nil until the task is known.
        var loading: [Int: ImageTask?] = [:]
        /// Outcomes being handed to `loadEach`'s handler: the batch has not ended
        /// until the last of them returns, though its load is no longer in flight.
        var handing = 0
        var inputEnded = false
        var stopped = false

        var isFinished: Bool {
            stopped || (inputEnded && loading.isEmpty && handing == 0 && readyStart == ready.count)
        }

        mutating func takeReady() -> Outcome? {
            guard readyStart < ready.count else { return nil }
            let item = ready[readyStart]
            readyStart += 1
            if readyStart == ready.count {
                ready.removeAll(keepingCapacity: true)
                readyStart = 0
            }
            return item
        }
    }

    private let loader: ImageLoader
    private let state = Locked(State())
    private let places: DispatchSemaphore
    /// Given each outcome as its load completes, for `loadEach`; nil when outcomes
    /// wait for `next()`, which then only hears the end.
    private let handler: (@Sendable (Outcome) -> Void)?

    init(loader: ImageLoader, window: Int, handler: (@Sendable (Outcome) -> Void)? = nil) {
        self.loader = loader
        self.handler = handler
        // Counted up from zero rather than made with the window as its value:
        // libdispatch traps when a semaphore is freed below its initial value, as
        // this one is when a batch stops with places taken.
        places = DispatchSemaphore(value: 0)
        for _ in 0..<window { places.signal() }
    }

    /// Reads `requests` on a thread of its own: a sequence may block while it waits
    /// for input, and a blocked thread of Swift's small pool would stall every
    /// load's continuation behind it.
    func start(reading input: BatchInput) {
        let thread = Thread { [self] in
            var index = 0
            input.read(while: {
                places.wait()
                return !state.withLock { $0.stopped }
            }) { request in
                let started = state.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.loading[index] = .some(nil)
                    return true
                }
                guard started else { return }
                let current = index
                let task = loader.task(with: request) { [self] result in completed(current, request, result) }
                let stopped = state.withLock { state -> Bool in
                    if state.loading[current] != nil { state.loading[current] = task }
                    return state.stopped
                }
                if stopped { task.cancel() }
                index += 1
            }
            let waiter = state.withLock { state in
                state.inputEnded = true
                return state.isFinished ? state.waiter.take() : nil
            }
            waiter?.resume(returning: nil)
        }
        thread.name = "Imago.ImageBatch"
        thread.start()
    }

    private func completed(_ index: Int, _ request: ImageRequest, _ result: Result<ImageResponse, ImagoError>) {
        if let handler {
            let taken = state.withLock { state in
                guard !state.stopped, state.loading.removeValue(forKey: index) != nil else { return false }
                state.handing += 1
                return true
            }
            guard taken else { return }
            handler((index, request, result))
            places.signal()
            state.withLock { state in
                state.handing -= 1
                return state.isFinished ? state.waiter.take() : nil
            }?.resume(returning: nil)
            return
        }
        let waiter = state.withLock { state -> CheckedContinuation<Outcome?, Never>? in
            guard !state.stopped, state.loading.removeValue(forKey: index) != nil else { return nil }
            if let waiter = state.waiter.take() { return waiter }
            state.ready.append((index, request, result))
            return nil
        }
        guard let waiter else { return }
        places.signal()
        waiter.resume(returning: (index, request, result))
    }

    /// The next outcome, waiting for one when none is ready.
    func next() async -> ImageLoader.Batch.Item? {
        if Task.isCancelled {
            stop()
            return nil
        }
        let taken = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Outcome?? in
                    if let item = state.takeReady() { return .some(item) }
                    if state.isFinished { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                guard let ready else { return }
                if ready != nil { places.signal() }
                continuation.resume(returning: ready)
            }
        } onCancel: {
            stop()
        }
        return taken.map { ImageLoader.Batch.Item(index: $0.index, request: $0.request, result: $0.result) }
    }

    /// Stops the batch: no further request is read, the loads in flight are
    /// cancelled, and a waiting consumer hears the end.
    func stop() {
        let (tasks, waiter) = state.withLock { state -> ([ImageTask], CheckedContinuation<Outcome?, Never>?) in
            guard !state.stopped else { return ([], nil) }
            state.stopped = true
            state.ready = []
            state.readyStart = 0
            defer { state.loading = [:] }
            return (state.loading.values.compactMap { $0 }, state.waiter.take())
        }
        // The reading thread may be waiting for a place.
        places.signal()
        loader.cancel(tasks)
        waiter?.resume(returning: nil)
    }
}
