import Foundation

extension ImageLoader {
    /// The events of every load through this loader, image or data, from the moment
    /// of the call on: start, cache answer, progress, retries, and the end with its
    /// metrics or error (`ImageLoadEvent`). Loads already running when the stream
    /// is made are not reported. A reader slower than the loads gets every event,
    /// buffered; the stream ends when the reading task is cancelled.
    ///
    /// ```swift
    /// let loader = ImageLoader()
    /// Task {
    ///     for await event in loader.events {
    ///         if case .failed(let error) = event.kind { print("\(event.url): \(error)") }
    ///     }
    /// }
    /// ```
    public var events: AsyncStream<ImageLoadEvent> {
        AsyncStream { continuation in
            let observation = observeEvents { continuation.yield($0) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `listener` with every event of every load through this loader from now
    /// on, in order for each load, on a serial queue of the loader's (never under a
    /// lock, so it may call the loader), until the observation is cancelled: the
    /// delegate of code that does not await. What `events` yields.
    ///
    /// ```swift
    /// let observation = ImageLoader.shared.observeEvents { event in
    ///     if case .retrying(let attempt, let error, _) = event.kind { print("retry \(attempt): \(error)") }
    /// }
    /// observation.cancel()
    /// ```
    public func observeEvents(_ listener: @escaping @Sendable (ImageLoadEvent) -> Void) -> ImageLoadEventObservation {
        let hub = pipeline.events
        let id = hub.addListener(listener)
        return ImageLoadEventObservation { hub.removeListener(id) }
    }

    /// Makes a task with `make`, telling the listeners of its start and, through its
    /// completion, of its end; with no listener, the task is made as it is.
    func observed(
        _ request: ImageRequest, completion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?,
        make: ((@Sendable (Result<ImageResponse, ImagoError>) -> Void)?) -> ImageTask
    ) -> ImageTask {
        let hub = pipeline.events
        guard hub.isObserved else { return make(completion) }
        let id = Locked(0)
        let url = request.url
        let task = make { result in
            hub.emitOutcome(id.withLock { $0 }, url: url, result.map { ($0.source, $0.metrics) })
            completion?(result)
        }
        id.withLock { $0 = task.id }
        hub.emit(task.id, url: url, .started(priority: request.priority))
        return task
    }
}
