import Foundation

/// Names one target-bound load, as a selector did in the seeds: loads set with the
/// same action on the same target can be cancelled and looked up together. Two
/// actions are the same when their names are.
public struct ImageLoadAction: Hashable, Sendable {
    /// What identifies the action.
    public let name: String
    let handler: @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void

    /// An action called `name`, calling `handler` on the main actor when its load
    /// finishes or fails (not when it is cancelled).
    public init(_ name: String, handler: @escaping @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void) {
        self.name = name
        self.handler = handler
    }

    public static func == (lhs: ImageLoadAction, rhs: ImageLoadAction) -> Bool { lhs.name == rhs.name }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// A weak reference that may cross isolation: the loader only stores targets and
/// compares them by identity, and hands them back to the main actor alone.
struct WeakTarget: @unchecked Sendable {
    weak var object: AnyObject?
    let id: ObjectIdentifier

    init(_ object: AnyObject) {
        self.object = object
        id = ObjectIdentifier(object)
    }
}

/// The target-bound loads of one object, held weakly: the loader never keeps a
/// target alive.
final class TargetRecord: @unchecked Sendable {
    weak var target: AnyObject?
    /// Unfinished loads by task id, with their URL and action name.
    var loads: [Int: (task: ImageTask, url: URL, action: String?)] = [:]
    var latestURL: URL?
    var latestURLByAction: [String: URL] = [:]

    init(target: WeakTarget) {
        self.target = target.object
    }
}

extension ImageLoader {
    /// Posted on the main actor when a target-bound or URL-only load finishes.
    /// `object`: the target (nil for URL-only loads); `userInfo`: `imageKey`
    /// (`DecodedImage`), `urlKey` (`URL`), `cacheKey` (the `ImageCaching` used, when
    /// there is one).
    public static let didFinishNotification = Notification.Name("ImagoImageLoadDidFinish")
    /// Posted on the main actor when a target-bound or URL-only load fails.
    /// `object`: the target; `userInfo`: `errorKey` (`ImagoError`), `urlKey` (`URL`).
    public static let didFailNotification = Notification.Name("ImagoImageLoadDidFail")
    /// userInfo key of the loaded `DecodedImage`.
    public static let imageKey = "image"
    /// userInfo key of the `URL`.
    public static let urlKey = "url"
    /// userInfo key of the `ImageCaching` the image was stored in.
    public static let cacheKey = "cache"
    /// userInfo key of the `ImagoError`.
    public static let errorKey = "error"

    /// What the notifications say, as values for `events`.
    public struct Event: Sendable {
        /// The URL loaded.
        public let url: URL
        /// The image and where it came from, or why it failed.
        public let result: Result<ImageResponse, ImagoError>
    }

    /// The events of every target-bound and URL-only load, as the notifications post
    /// them, from the moment of the call on.
    public var events: AsyncStream<Event> {
        AsyncStream { continuation in
            let id = state.withLock { state -> Int in
                state.eventStreams[state.nextSequence()] = continuation
                return state.sequence
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.eventStreams.removeValue(forKey: id) }
            }
        }
    }

    // MARK: - The seeds' loading calls

    /// Loads `url` for `target`, calling `success` or `failure` on the main actor.
    ///
    /// When nothing is queued for `target` and the image is in the memory cache,
    /// `success` runs before this returns. A cancelled load calls neither.
    @MainActor @discardableResult
    public func loadImage(
        with url: URL, target: AnyObject,
        success: @escaping @MainActor @Sendable (ImageResponse) -> Void,
        failure: @escaping @MainActor @Sendable (ImagoError) -> Void
    ) -> ImageTask {
        load(url, target: target, actionName: nil) { result in
            switch result {
            case .success(let response): success(response)
            case .failure(let error): failure(error)
            }
        }
    }

    /// Loads `url` for `target`, calling `action`'s handler on the main actor.
    @MainActor @discardableResult
    public func loadImage(with url: URL, target: AnyObject, action: ImageLoadAction) -> ImageTask {
        load(url, target: target, actionName: action.name, handler: action.handler)
    }

    /// Loads `url` with no target; the outcome is seen through the notifications and
    /// `events`.
    @discardableResult
    public func loadImage(with url: URL) -> ImageTask {
        let cache = self.cache
        return makeTask(ImageRequest(url: url)) { [weak self] result in
            self?.announce(result, url: url, target: nil, cache: cache, handler: nil)
        }
    }

    @MainActor
    private func load(
        _ url: URL, target: AnyObject, actionName: String?,
        handler: @escaping @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void
    ) -> ImageTask {
        let request = ImageRequest(url: url)
        let handle = WeakTarget(target)
        let id = handle.id
        let (cache, idle) = state.withLock { state -> ((any ImageCaching)?, Bool) in
            let record = state.record(for: handle)
            record.latestURL = url
            if let actionName { record.latestURLByAction[actionName] = url }
            return (state.cache, record.loads.isEmpty)
        }
        if idle, let image = cache?.image(forKey: request.cacheKey) {
            let response = ImageResponse(image: image, url: url, source: .memory, metrics: ImageMetrics())
            let task = makeTask(request, onCompletion: nil)
            handler(.success(response))
            announceNow(.success(response), url: url, target: target, cache: cache)
            return task
        }
        let task = makeTask(request) { [weak self] result in
            self?.state.withLock { state in
                if let record = state.targets[id], record.target != nil {
                    record.loads = record.loads.filter { !$0.value.task.isFinished }
                }
            }
            self?.announce(result, url: url, target: handle, cache: cache, handler: handler)
        }
        state.withLock { state in
            if !task.isFinished { state.targets[id]?.loads[task.id] = (task, url, actionName) }
            startSweeping(&state)
        }
        return task
    }

    /// Calls the handler and posts the notification on the main actor; cancellations
    /// are silent.
    private func announce(
        _ result: Result<ImageResponse, ImagoError>, url: URL, target: WeakTarget?, cache: (any ImageCaching)?,
        handler: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)?
    ) {
        if case .failure(.cancelled) = result { return }
        Task { @MainActor in
            handler?(result)
            self.announceNow(result, url: url, target: target?.object, cache: cache)
        }
    }

    @MainActor
    private func announceNow(_ result: Result<ImageResponse, ImagoError>, url: URL, target: AnyObject?, cache: (any ImageCaching)?) {
        switch result {
        case .success(let response):
            var info: [String: Any] = [Self.imageKey: response.image, Self.urlKey: url]
            if let cache { info[Self.cacheKey] = cache }
            NotificationCenter.default.post(name: Self.didFinishNotification, object: target, userInfo: info)
        case .failure(let error):
            NotificationCenter.default.post(name: Self.didFailNotification, object: target, userInfo: [Self.errorKey: error, Self.urlKey: url])
        }
        let event = Event(url: url, result: result)
        for stream in state.withLock({ Array($0.eventStreams.values) }) { stream.yield(event) }
    }

    // MARK: - The seeds' cancel calls: each cancels exactly what it names

    /// Cancels the loads of `url` set on `target` with `action`.
    @MainActor public func cancelLoading(url: URL, target: AnyObject, action: ImageLoadAction) {
        cancelTargetLoads(target) { $0.url == url && $0.action == action.name }
    }

    /// Cancels the loads of `url` set on `target`, whatever their action.
    @MainActor public func cancelLoading(url: URL, target: AnyObject) {
        cancelTargetLoads(target) { $0.url == url }
    }

    /// Cancels every load of `url`, for any target or none.
    public func cancelLoading(url: URL) {
        let tasks = state.withLock { Array($0.byURL[url.absoluteString] ?? []) }
        cancel(tasks)
    }

    /// Cancels the loads set on `target` with `action`, whatever their URL.
    @MainActor public func cancelLoading(target: AnyObject, action: ImageLoadAction) {
        cancelTargetLoads(target) { $0.action == action.name }
    }

    /// Cancels every load set on `target`.
    @MainActor public func cancelLoading(target: AnyObject) {
        cancelTargetLoads(target) { _ in true }
    }

    @MainActor
    private func cancelTargetLoads(_ target: AnyObject, where matches: ((task: ImageTask, url: URL, action: String?)) -> Bool) {
        let handle = WeakTarget(target)
        let tasks = state.withLock { state -> [ImageTask] in
            guard let record = state.live(handle) else { return [] }
            let chosen = record.loads.values.filter(matches).map(\.task)
            for task in chosen { record.loads[task.id] = nil }
            return chosen
        }
        cancel(tasks)
    }

    // MARK: - The seeds' look-ups

    /// The latest URL set on `target` with `action`.
    @MainActor public func url(for target: AnyObject, action: ImageLoadAction) -> URL? {
        let handle = WeakTarget(target)
        return state.withLock { $0.live(handle)?.latestURLByAction[action.name] }
    }

    /// The latest URL set on `target`.
    @MainActor public func url(for target: AnyObject) -> URL? {
        let handle = WeakTarget(target)
        return state.withLock { $0.live(handle)?.latestURL }
    }

    // MARK: - Targets that go away

    /// Swift on Linux has no associated objects to learn of a target's end, so while
    /// any target has loads, a sweep every 0.2 s cancels the loads of targets that are
    /// gone (and so their transfers, when nobody else waits for them).
    private func startSweeping(_ state: inout State) {
        guard !state.isSweeping, !state.targets.isEmpty else { return }
        state.isSweeping = true
        Task.detached { [weak self] in
            while let self {
                try? await Task.sleep(for: .milliseconds(200))
                if !self.sweep() { return }
            }
        }
    }

    /// Cancels the loads of vanished targets; returns whether sweeping should go on.
    func sweep() -> Bool {
        let (orphans, goOn) = state.withLock { state -> ([ImageTask], Bool) in
            var orphans: [ImageTask] = []
            for (id, record) in state.targets where record.target == nil {
                orphans += record.loads.values.map(\.task)
                state.targets[id] = nil
            }
            if state.targets.isEmpty { state.isSweeping = false }
            return (orphans, state.isSweeping)
        }
        cancel(orphans)
        return goOn
    }
}

extension ImageLoader.State {
    /// The record of `target`, made fresh if the identifier belonged to an object
    /// that has gone (identifiers are reused).
    mutating func record(for handle: WeakTarget) -> TargetRecord {
        if let record = live(handle) { return record }
        let record = TargetRecord(target: handle)
        targets[handle.id] = record
        return record
    }

    /// The record of the target `handle` refers to, if it has one and is alive.
    func live(_ handle: WeakTarget) -> TargetRecord? {
        guard let record = targets[handle.id], let target = record.target, target === handle.object else { return nil }
        return record
    }
}
