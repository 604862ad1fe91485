import Foundation

extension ImageTargetLoader {
    // MARK: - Loading

    /// Loads `url` for `target`, calling `success` or `failure` on the main actor.
    ///
    /// When nothing is loading for `target` and the image is in the memory cache,
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
        let cache = loader.cache
        let task = loader.task(with: ImageRequest(url: url)) { [weak self] result in
            self?.finished(url: url, target: WeakReference(nil), result: result, cache: cache, handler: nil)
        }
        track(task, url: url)
        return task
    }

    @MainActor
    private func load(
        _ url: URL, target: AnyObject, actionName: String?,
        handler: @escaping @MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void
    ) -> ImageTask {
        let request = ImageRequest(url: url)
        let handle = WeakReference(target)
        let id = ObjectIdentifier(target)
        let (cache, idle) = registry.withLock { registry -> ((any ImageCaching)?, Bool) in
            if !registry.isLive(handle) { registry.targets[id] = TargetRegistry.Record(target: handle) }
            registry.targets[id]?.latestURL = url
            if let actionName { registry.targets[id]?.latestURLByAction[actionName] = url }
            return (loader.cache, registry.targets[id]?.loads.isEmpty ?? true)
        }
        if idle, let image = loader.cachedImage(for: request) {
            let response = ImageResponse(image: image, url: url, source: .memory, metrics: ImageMetrics())
            let task = loader.task(with: request)
            handler(.success(response))
            announce(.success(response), url: url, target: handle, cache: cache)
            return task
        }
        let task = loader.task(with: request) { [weak self] result in
            self?.finished(url: url, target: handle, result: result, cache: cache, handler: handler)
        }
        registry.withLock { registry in
            if !task.isFinished { registry.targets[id]?.loads[task.id] = (task, url, actionName) }
        }
        track(task, url: url)
        startSweeping()
        return task
    }

    /// Indexes an unfinished task by URL, for `cancelLoading(url:)`.
    private func track(_ task: ImageTask, url: URL) {
        registry.withLock { registry in
            if !task.isFinished { registry.byURL[url, default: []].append(task) }
        }
        // The task may have finished between the check and the insertion.
        if task.isFinished { registry.withLock { $0.forget(task, url: url) } }
    }

    /// A load ended: it leaves the indexes; unless it was cancelled, the handler runs
    /// and the notification is posted on the main actor.
    private func finished(
        url: URL, target: WeakReference, result: Result<ImageResponse, ImagoError>, cache: (any ImageCaching)?,
        handler: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)?
    ) {
        registry.withLock { registry in
            registry.byURL[url]?.removeAll { $0.isFinished }
            if registry.byURL[url]?.isEmpty == true { registry.byURL[url] = nil }
            if let id = target.id, registry.isLive(target), let loads = registry.targets[id]?.loads {
                registry.targets[id]?.loads = loads.filter { !$0.value.task.isFinished }
            }
        }
        if case .failure(.cancelled) = result { return }
        Task { @MainActor in
            handler?(result)
            self.announce(result, url: url, target: target, cache: cache)
        }
    }

    @MainActor
    private func announce(_ result: Result<ImageResponse, ImagoError>, url: URL, target: WeakReference, cache: (any ImageCaching)?) {
        switch result {
        case .success(let response):
            var info: [String: Any] = [UserInfoKey.image: response.image, UserInfoKey.url: url]
            if let cache { info[UserInfoKey.cache] = cache }
            NotificationCenter.default.post(name: Self.didFinishNotification, object: target.object, userInfo: info)
        case .failure(let error):
            NotificationCenter.default.post(
                name: Self.didFailNotification, object: target.object, userInfo: [UserInfoKey.error: error, UserInfoKey.url: url])
        }
        let event = Event(url: url, target: target, result: result)
        for stream in registry.withLock({ Array($0.eventStreams.values) }) { stream.yield(event) }
    }

    // MARK: - Cancelling: each call cancels exactly what it names

    /// Cancels the loads of `url` set on `target` with `action`.
    @MainActor public func cancelLoading(url: URL, target: AnyObject, action: ImageLoadAction) {
        cancelTargetLoads(target) { $0.url == url && $0.action == action.name }
    }

    /// Cancels the loads of `url` set on `target`, whatever their action.
    @MainActor public func cancelLoading(url: URL, target: AnyObject) {
        cancelTargetLoads(target) { $0.url == url }
    }

    /// Cancels every load of `url` made through this loader, for any target or none.
    public func cancelLoading(url: URL) {
        loader.cancel(registry.withLock { $0.byURL[url] ?? [] })
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
        let handle = WeakReference(target)
        let tasks = registry.withLock { registry -> [ImageTask] in
            guard registry.isLive(handle), let id = handle.id, let record = registry.targets[id] else { return [] }
            let chosen = record.loads.values.filter(matches).map(\.task)
            for task in chosen { registry.targets[id]?.loads[task.id] = nil }
            return chosen
        }
        loader.cancel(tasks)
    }

    // MARK: - Look-ups

    /// The latest URL set on `target` with `action`.
    @MainActor public func url(for target: AnyObject, action: ImageLoadAction) -> URL? {
        let handle = WeakReference(target)
        return registry.withLock { $0.isLive(handle) ? $0.targets[ObjectIdentifier(target)]?.latestURLByAction[action.name] : nil }
    }

    /// The latest URL set on `target`.
    @MainActor public func url(for target: AnyObject) -> URL? {
        let handle = WeakReference(target)
        return registry.withLock { $0.isLive(handle) ? $0.targets[ObjectIdentifier(target)]?.latestURL : nil }
    }

    // MARK: - Targets that go away

    /// Swift on Linux has no associated objects to learn of a target's end, so while
    /// any target has loads, a sweep every 0.2 s cancels the loads of targets that are
    /// gone.
    private func startSweeping() {
        let start = registry.withLock { registry -> Bool in
            guard !registry.isSweeping, !registry.targets.isEmpty else { return false }
            registry.isSweeping = true
            return true
        }
        guard start else { return }
        Task.detached { [weak self] in
            while let self {
                try? await Task.sleep(for: .milliseconds(200))
                if !self.sweep() { return }
            }
        }
    }

    /// Cancels the loads of vanished targets; returns whether sweeping should go on.
    func sweep() -> Bool {
        let (orphans, goOn) = registry.withLock { registry -> ([ImageTask], Bool) in
            var orphans: [ImageTask] = []
            for (id, record) in registry.targets where record.target.object == nil {
                orphans += record.loads.values.map(\.task)
                registry.targets[id] = nil
            }
            if registry.targets.isEmpty { registry.isSweeping = false }
            return (orphans, registry.isSweeping)
        }
        loader.cancel(orphans)
        return goOn
    }
}
