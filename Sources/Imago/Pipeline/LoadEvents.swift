import Foundation

/// What happened to one load of a loader (`ImageLoader.events`,
/// `ImageLoader.observeEvents(_:)`): Nuke's `ImagePipeline.Delegate` task events,
/// Kingfisher's and SDWebImage's progress and completion callbacks, on one stream.
///
/// Every load, image or data, has `started` first and `finished` or `failed` last;
/// between them, in order: `progress` as bytes arrive, `retrying` before each
/// attempt after the first, `cacheAnswered` when a tier answered instead of the
/// origin (just before `finished`). A load that joined a transfer already in flight
/// hears that transfer's progress and retries from the moment it joined.
public struct ImageLoadEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        /// The load was asked for, at this priority.
        case started(priority: ImageRequest.Priority)
        /// A cache answered: `.memory`, `.recent`, `.disk`, `.revalidated` (a 304
        /// confirmed the stored copy) or `.shared`.
        case cacheAnswered(ImageResponse.Source)
        /// Bytes of the original received so far, and the total when the server said.
        case progress(ImageTask.Progress)
        /// Attempt `attempt` failed with `error`; the next starts after `delay` seconds.
        case retrying(attempt: Int, error: ImagoError, delay: Double)
        /// The load succeeded: where the image (or bytes) came from and what it cost.
        case finished(source: ImageResponse.Source, metrics: ImageResponse.Metrics)
        /// The load failed, or was cancelled (`ImagoError.cancelled`) or timed out.
        case failed(ImagoError)
    }

    /// Tells the loads apart: an image load's `ImageTask.loadID`, or the number of a
    /// `data(for:)` call.
    public let loadID: Int
    /// The URL loaded.
    public let url: URL
    /// What happened.
    public let kind: Kind

    /// Whether nothing follows it for this load.
    public var isFinal: Bool {
        switch kind {
        case .finished, .failed: true
        default: false
        }
    }
}

extension ImageTask {
    /// The number `ImageLoadEvent.loadID` names this task's events by.
    public var loadID: Int { id }
}

/// A listener's registration with `ImageLoader.observeEvents(_:)`; the listener
/// hears nothing more once it is cancelled.
public final class ImageLoadEventObservation: Sendable {
    private let stop: @Sendable () -> Void

    init(stop: @escaping @Sendable () -> Void) {
        self.stop = stop
    }

    /// Stops the listener.
    public func cancel() { stop() }
}

/// The listeners of a loader's events, and the loads they hear of.
///
/// Events reach the listeners in the order they were emitted for each load, on one
/// serial queue, never under a lock of the loader's: a listener may call the loader
/// (cancel a task, start another). Without listeners an event costs a look at a
/// lock, no more. A load is heard of only from its `started` event: one started
/// before a listener came is not reported to it, in part or at all.
final class LoadEventHub: Sendable {
    private struct State {
        var listeners: [Int: @Sendable (ImageLoadEvent) -> Void] = [:]
        var lastListener = 0
        /// The loads started and not yet ended since there were listeners.
        var live: Set<Int> = []
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "imago.load-events")

    /// Whether anyone listens.
    var isObserved: Bool { state.withLock { !$0.listeners.isEmpty } }

    func addListener(_ listener: @escaping @Sendable (ImageLoadEvent) -> Void) -> Int {
        state.withLock { state in
            state.lastListener += 1
            state.listeners[state.lastListener] = listener
            return state.lastListener
        }
    }

    func removeListener(_ id: Int) {
        state.withLock { state in
            state.listeners.removeValue(forKey: id)
            if state.listeners.isEmpty { state.live.removeAll() }
        }
    }

    /// Hands `kind` for load `id` to the listeners, in order: a load's events after
    /// its end, or before its start, are dropped.
    func emit(_ id: Int, url: URL, _ kind: ImageLoadEvent.Kind) {
        state.withLock { state in
            guard !state.listeners.isEmpty else { return }
            let event = ImageLoadEvent(loadID: id, url: url, kind: kind)
            if case .started = kind {
                state.live.insert(id)
            } else if event.isFinal {
                guard state.live.remove(id) != nil else { return }
            } else {
                guard state.live.contains(id) else { return }
            }
            let listeners = Array(state.listeners.values)
            // Queued under the lock: the order of the queue is the order of emission.
            queue.async { for listener in listeners { listener(event) } }
        }
    }

    /// The events of an outcome: the cache that answered, then the end.
    func emitOutcome(_ id: Int, url: URL, _ result: Result<(ImageResponse.Source, ImageResponse.Metrics), ImagoError>) {
        switch result {
        case .success((let source, let metrics)):
            if source.isCache { emit(id, url: url, .cacheAnswered(source)) }
            emit(id, url: url, .finished(source: source, metrics: metrics))
        case .failure(let error):
            emit(id, url: url, .failed(error))
        }
    }
}

extension ImageResponse.Source {
    /// Whether a cache answered rather than the origin.
    var isCache: Bool {
        switch self {
        case .memory, .recent, .disk, .revalidated, .shared: true
        case .network, .local: false
        }
    }
}
