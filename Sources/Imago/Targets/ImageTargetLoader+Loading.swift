import Foundation

extension ImageTargetLoader {
    // MARK: - Loading

    /// Loads `url` for `target`, calling `success` or `failure` on the main actor with
    /// the target (held weakly until then, so the closures need not capture it).
    ///
    /// Loads set on one target are set in the order they were made: an image that is
    /// in the memory cache, or that arrives before an earlier load's, cancels the
    /// earlier loads, which are never set. A cached image succeeds before this
    /// returns. A cancelled load, or one whose target has gone, calls neither.
    @MainActor @discardableResult
    public func loadImage(
        with url: URL, target: AnyObject,
        success: @escaping @MainActor @Sendable (_ target: AnyObject, _ response: ImageResponse) -> Void,
        failure: @escaping @MainActor @Sendable (_ target: AnyObject, _ error: ImagoError) -> Void
    ) -> ImageTask {
        load(ImageRequest(url: url), target: target, action: nil, success: success, failure: failure)
    }

    /// Loads `url` for `target`, calling `action`'s handler on the main actor when it
    /// succeeds; failures arrive by notification. Loads of one action on one target
    /// are set in order, as with `loadImage(with:target:success:failure:)`. A nil
    /// target loads with no handler: the outcome is seen through the notifications.
    @MainActor @discardableResult
    public func loadImage(with url: URL, target: AnyObject?, action: ImageLoadAction) -> ImageTask {
        guard let target else { return loadImage(with: url) }
        return load(ImageRequest(url: url), target: target, action: action.name, success: action.handler, failure: nil)
    }

    /// Loads `url` with no target; the outcome is seen through the notifications and
    /// `events`.
    @discardableResult
    public func loadImage(with url: URL) -> ImageTask {
        let cache = loader.cache
        let task = loader.task(with: ImageRequest(url: url)) { [weak self] result in
            self?.untrack(url: url, target: nil)
            guard let self, result.isDelivered else { return }
            Task { @MainActor in self.announce(result, url: url, target: WeakReference(nil), cache: cache) }
        }
        track(task, url: url)
        return task
    }

    /// Loads `request` for `target` under `action` (nil for the success/failure
    /// form), in the order loads are set on the target. `preview`, when given, gets
    /// the task's progressive previews while the load is still the target's current
    /// one, never after its outcome.
    @MainActor
    func load(
        _ request: ImageRequest, target: AnyObject, action: String?,
        preview: (@MainActor @Sendable (AnyObject, ImageResponse) -> Void)? = nil,
        success: @escaping @MainActor @Sendable (AnyObject, ImageResponse) -> Void,
        failure: (@MainActor @Sendable (AnyObject, ImagoError) -> Void)?
    ) -> ImageTask {
        let url = request.url
        let handle = WeakReference(target)
        let (cache, sequence) = registry.withLock { registry -> ((any ImageCaching)?, Int) in
            let record = registry.makeRecord(of: target)
            record.latestURL = url
            if let action { record.latestURLByAction[action] = url }
            registry.lastSequence += 1
            return (loader.cache, registry.lastSequence)
        }
        if let image = loader.cachedImage(for: request) {
            let response = ImageResponse(image: image, url: url, source: .memory, metrics: ImageMetrics())
            let task = loader.task(with: request)
            if show(sequence, of: action, on: target) {
                success(target, response)
                announce(.success(response), url: url, target: handle, cache: cache)
            }
            return task
        }
        let task = loader.task(with: request) { [weak self] result in
            self?.untrack(url: url, target: handle)
            guard let self, result.isDelivered else { return }
            Task { @MainActor in
                // A target that has gone gets nothing, and nor does a load that a newer
                // image for the same action overtook.
                guard let target = handle.object else { return }
                switch result {
                case .success(let response):
                    guard self.show(sequence, of: action, on: target) else { return }
                    success(target, response)
                case .failure(let error):
                    guard self.isCurrent(sequence, of: action, on: target) else { return }
                    failure?(target, error)
                }
                self.announce(result, url: url, target: handle, cache: cache)
            }
        }
        registry.withLock { registry in
            if !task.isFinished {
                registry.record(of: target)?.loads[task.id] = .init(task: task, url: url, action: action, sequence: sequence)
            }
        }
        track(task, url: url)
        startSweeping()
        if let preview, request.options.contains(.progressivePreviews), !task.isFinished {
            showPreviews(of: task, sequence: sequence, action: action, target: handle, with: preview)
        }
        return task
    }

    /// Hands `task`'s previews to `show` on the main actor while the load is the
    /// target's: checked at each preview, on the main actor where the outcome is set
    /// too, so a preview never lands after the final image, after the load was
    /// cancelled, or once the target shows (or loads) something newer.
    @MainActor
    private func showPreviews(
        of task: ImageTask, sequence: Int, action: String?, target handle: WeakReference,
        with show: @escaping @MainActor @Sendable (AnyObject, ImageResponse) -> Void
    ) {
        let previews = task.previews
        Task { @MainActor [weak self] in
            for await preview in previews {
                guard let self, let target = handle.object else { return }
                let current = registry.withLock { registry -> Bool in
                    guard let record = registry.record(of: target), record.loads[task.id] != nil else { return false }
                    return record.hasNothingNewer(than: sequence, for: action)
                }
                guard current, !task.isFinished else { return }
                show(target, preview)
            }
        }
    }

    /// Whether no newer image has been set for `action` on the target.
    private func isCurrent(_ sequence: Int, of action: String?, on target: AnyObject) -> Bool {
        registry.withLock { $0.record(of: target)?.hasNothingNewer(than: sequence, for: action) ?? false }
    }

    /// Records that load `sequence` sets its image for `action` on the target, and
    /// cancels the earlier loads of that action, which must never be set after it;
    /// false if a newer image is already set.
    @MainActor
    private func show(_ sequence: Int, of action: String?, on target: AnyObject) -> Bool {
        let earlier = registry.withLock { registry -> [ImageTask]? in
            guard let record = registry.record(of: target), record.hasNothingNewer(than: sequence, for: action) else { return nil }
            record.setShown(sequence, for: action)
            let overtaken = record.loads.values.filter { $0.action == action && $0.sequence < sequence }
            for load in overtaken { record.loads[load.task.id] = nil }
            return overtaken.map(\.task)
        }
        guard let earlier else { return false }
        loader.cancel(earlier)
        return true
    }

    /// Indexes an unfinished task by URL, for `cancelLoading(url:)`.
    private func track(_ task: ImageTask, url: URL) {
        registry.withLock { registry in
            if !task.isFinished { registry.byURL[url, default: []].append(task) }
        }
        // The task may have finished between the check and the insertion.
        if task.isFinished { registry.withLock { $0.forget(task, url: url) } }
    }

    /// A load ended: it leaves the indexes.
    private func untrack(url: URL, target: WeakReference?) {
        registry.withLock { registry in
            registry.byURL[url]?.removeAll { $0.isFinished }
            if registry.byURL[url]?.isEmpty == true { registry.byURL[url] = nil }
            if let record = target?.object.flatMap(registry.record(of:)) {
                record.loads = record.loads.filter { !$0.value.task.isFinished }
            }
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
    private func cancelTargetLoads(_ target: AnyObject, where matches: (TargetRegistry.Record.Load) -> Bool) {
        let tasks = registry.withLock { registry -> [ImageTask] in
            guard let record = registry.record(of: target), !record.loads.isEmpty else { return [] }
            let chosen = record.loads.values.filter(matches).map(\.task)
            for task in chosen { record.loads[task.id] = nil }
            return chosen
        }
        if !tasks.isEmpty { loader.cancel(tasks) }
    }

    // MARK: - Look-ups

    /// The latest URL set on `target` with `action`.
    @MainActor public func url(for target: AnyObject, action: ImageLoadAction) -> URL? {
        registry.withLock { $0.record(of: target)?.latestURLByAction[action.name] }
    }

    /// The latest URL set on `target`.
    @MainActor public func url(for target: AnyObject) -> URL? {
        registry.withLock { $0.record(of: target)?.latestURL }
    }

    /// Records that `url`'s image, found in the memory cache, is set on `target` now:
    /// it is the latest URL, and the target's loads, all set earlier, are cancelled.
    @MainActor
    func noteShown(_ url: URL, on target: AnyObject) {
        let earlier = registry.withLock { registry -> [ImageTask] in
            let record = registry.makeRecord(of: target)
            registry.lastSequence += 1
            record.latestURL = url
            record.shownWithoutAction = registry.lastSequence
            guard !record.loads.isEmpty else { return [] }
            defer { record.loads = [:] }
            return record.loads.values.map(\.task)
        }
        if !earlier.isEmpty { loader.cancel(earlier) }
    }

    /// Forgets the URLs set on `target`, so that `url(for:)` answers nil.
    @MainActor
    func forgetURL(of target: AnyObject) {
        registry.withLock { registry in
            guard let record = registry.record(of: target) else { return }
            record.latestURL = nil
            record.latestURLByAction = [:]
        }
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
            for (id, record) in registry.targets where record.target == nil {
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

extension Result where Success == ImageResponse, Failure == ImagoError {
    /// Whether the outcome is told to anyone: cancellations are silent.
    var isDelivered: Bool {
        if case .failure(.cancelled) = self { return false }
        return true
    }
}
