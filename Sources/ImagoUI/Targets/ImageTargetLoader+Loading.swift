import Foundation
import Imago

extension ImageTargetLoader {
    // MARK: - Loading

    /// Loads `request` for `target` under `action` (nil for the success/failure form),
    /// after the binding's earlier loads: the image from the memory cache at once
    /// (the earlier loads are cancelled), or a load that joins them.
    @MainActor
    func load(
        _ request: ImageRequest, target: AnyObject, action: String?,
        success: @escaping @MainActor @Sendable (AnyObject, ImageResponse) -> Void,
        failure: (@MainActor @Sendable (AnyObject, ImagoError) -> Void)?
    ) -> ImageTask {
        if let image = loader.cachedImage(for: request) {
            bind(target, action: action, to: request.url, replacing: false, answeredAtOnce: true)
            let response = ImageResponse(image: image, url: request.url, source: .memory)
            success(target, response)
            announce(.success(response), url: request.url, target: WeakReference(target), cache: loader.cache)
            return loader.answeredTask(for: request, with: response)
        }
        let sequence = bind(target, action: action, to: request.url, replacing: false)
        return start(request, target: target, action: action, sequence: sequence, success: success, failure: failure)
    }

    /// Takes the next place in the order of calls for `target`'s binding for `action`,
    /// set to `url` (nil: none). A replacing call cancels the binding's unfinished
    /// loads, which will deliver nothing; otherwise they go on, and this call's load
    /// comes after them. A call `answeredAtOnce` (its image was at hand, in memory or
    /// in the bundle) cancels every earlier load of the binding, replacing or not, in
    /// the same step. Returns the place. A target's first binding keeps what it shows
    /// then (asked of `initialImage`, once): ``initialImage(of:)``.
    @MainActor @discardableResult
    func bind(
        _ target: AnyObject, action: String?, to url: URL?, replacing: Bool, answeredAtOnce: Bool = false,
        initialImage: () -> DecodedImage? = { nil }
    ) -> Int {
        // The first binding of a target asks what it shows now outside the lock. One
        // expression, no variable: the outcome is not copied before it is taken apart.
        let floor = answeredAtOnce ? Floor.pastThisCall : replacing ? .thisCall : .unchanged
        guard let (sequence, replaced) = advance(target, action: action, to: url, floor: floor, firstImage: nil)
            ?? advance(target, action: action, to: url, floor: floor, firstImage: .some(initialImage()))
        else { preconditionFailure("a record was just made") }
        endCancelled(replaced)
        return sequence
    }

    /// The image `target` showed when it was first bound; asked apart from `bind`, so
    /// that a memory hit, which shows no placeholder, does not take it.
    func initialImage(of target: AnyObject) -> DecodedImage? {
        registry.withLock { $0.record(of: target)?.initialImage }
    }

    /// Where a call puts the floor of its binding: no load before it may deliver any
    /// more (a replacing call), nor this call's own (a call answered at once, which
    /// starts none), or the floor stays.
    private enum Floor {
        case unchanged, thisCall, pastThisCall
    }

    /// `bind`'s work under the lock: the next place in the order of calls on
    /// `target`'s record, and the loads it replaces. Without `firstImage`, nil when the
    /// target has no record yet; with it, the record is made, showing that image.
    ///
    /// Not isolated to the main actor, so that the closure it gives the lock carries
    /// no check of the actor at run time: a memory hit takes this path every time.
    private func advance(
        _ target: AnyObject, action: String?, to url: URL?, floor: Floor, firstImage: DecodedImage??
    ) -> (Int, [TargetRegistry.Binding.Load])? {
        func next(_ record: TargetRegistry.Record, _ registry: inout TargetRegistry) -> (Int, [TargetRegistry.Binding.Load]) {
            let sequence = registry.nextSequence()
            record.latestURL = url
            record.noteCall()
            switch floor {
            case .unchanged: return (sequence, [])
            case .thisCall: return (sequence, record.withBinding(action) { $0.raiseFloor(to: sequence) })
            case .pastThisCall: return (sequence, record.withBinding(action) { $0.raiseFloor(to: sequence + 1) })
            }
        }
        return registry.withLock { registry in
            if let record = registry.record(of: target) { return next(record, &registry) }
            guard let firstImage else { return nil }
            // A record left under this address by an object that has gone: its loads
            // are cancelled, and nothing of it passes to the new target.
            let stale = registry.targets[ObjectIdentifier(target)]?.loads.map(\.load) ?? []
            let record = TargetRegistry.Record(target: target, initialImage: firstImage)
            registry.targets[ObjectIdentifier(target)] = record
            let (sequence, replaced) = next(record, &registry)
            return (sequence, replaced + stale)
        }
    }

    /// Starts the load of `request` as call `sequence` of `target`'s binding for
    /// `action`. Whatever it delivers is delivered on the main actor, and only if it
    /// is still among the binding's loads then; an image delivered cancels the
    /// binding's earlier loads. `cancelled` is told instead when the load is cancelled
    /// before it delivered. `preview`, when given, gets the task's progressive
    /// previews under the same rule.
    @MainActor
    func start(
        _ request: ImageRequest, target: AnyObject, action: String?, sequence: Int,
        cancelled: (@MainActor @Sendable () -> Void)? = nil,
        preview: (@MainActor @Sendable (AnyObject, ImageResponse) -> Void)? = nil,
        progress: (@MainActor @Sendable (AnyObject, ImageTask.Progress) -> Void)? = nil,
        success: @escaping @MainActor @Sendable (AnyObject, ImageResponse) -> Void,
        failure: (@MainActor @Sendable (AnyObject, ImagoError) -> Void)?
    ) -> ImageTask {
        let url = request.url
        let handle = WeakReference(target)
        let cache = loader.cache
        let task = loader.task(with: request) { [weak self] result in
            guard let self else { return }
            // The outcome is only looked at on the main actor, where every call that
            // changes the binding runs too: no cancel or newer image can slip in
            // between the check and the delivery.
            Task { @MainActor in
                guard let target = handle.object,
                    let (load, earlier) = self.claim(sequence, of: action, on: target, delivering: result.isSuccess)
                else { return }
                switch result {
                case .success(let response):
                    success(target, response)
                case .failure(.cancelled):
                    load.cancelled?()
                    return
                case .failure(let error):
                    failure?(target, error)
                }
                self.announce(result, url: url, target: handle, cache: cache)
                self.endCancelled(earlier)
            }
        }
        let registered = registry.withLock { registry -> Bool in
            guard let record = registry.record(of: target), sequence >= record[action].floor else { return false }
            record.withBinding(action) { $0.loads.append(.init(task: task, url: url, sequence: sequence, cancelled: cancelled)) }
            return true
        }
        // Overtaken before it could start (the view's own code made a newer call from
        // inside `display`): it never delivers, and nobody waits for its transfer.
        guard registered else {
            loader.cancel([task])
            return task
        }
        startSweeping()
        if let preview, request.options.contains(.progressivePreviews) {
            showPreviews(of: task, sequence: sequence, action: action, target: handle, with: preview)
        }
        if let progress {
            showProgress(of: task, sequence: sequence, action: action, target: handle, with: progress)
        }
        return task
    }

    /// Hands `task`'s progress to `show` on the main actor while the load is pending
    /// on its binding and nothing delivered since: a determinate indicator never moves
    /// for a load overtaken, cancelled, or showing an image already.
    @MainActor
    private func showProgress(
        of task: ImageTask, sequence: Int, action: String?, target handle: WeakReference,
        with show: @escaping @MainActor @Sendable (AnyObject, ImageTask.Progress) -> Void
    ) {
        let updates = task.progress
        Task { @MainActor [weak self] in
            for await update in updates {
                guard let self, let target = handle.object else { return }
                let pending = registry.withLock { registry in
                    registry.record(of: target).map { $0[action].isPending(sequence) } ?? false
                }
                guard pending else { return }
                show(target, update)
            }
        }
    }

    /// Hands `task`'s previews to `show` on the main actor while the load is pending
    /// on its binding. A preview shown counts as the load's image for the order:
    /// the earlier loads are cancelled, and never replace it.
    @MainActor
    private func showPreviews(
        of task: ImageTask, sequence: Int, action: String?, target handle: WeakReference,
        with show: @escaping @MainActor @Sendable (AnyObject, ImageResponse) -> Void
    ) {
        let previews = task.previews
        Task { @MainActor [weak self] in
            for await preview in previews {
                guard let self, let target = handle.object else { return }
                let earlier = registry.withLock { registry -> [TargetRegistry.Binding.Load]? in
                    registry.record(of: target)?.withBinding(action) { binding in
                        binding.isPending(sequence) ? binding.raiseFloor(to: sequence) : nil
                    }
                }
                guard let earlier else { return }
                show(target, preview)
                endCancelled(earlier)
            }
        }
    }

    /// Takes load `sequence` of the binding for delivery if it is still pending; nil
    /// when it must deliver nothing. A load delivering an image also takes the
    /// binding's earlier loads, which the caller cancels.
    @MainActor
    private func claim(
        _ sequence: Int, of action: String?, on target: AnyObject, delivering image: Bool
    ) -> (TargetRegistry.Binding.Load, earlier: [TargetRegistry.Binding.Load])? {
        registry.withLock { registry in
            registry.record(of: target)?.withBinding(action) { binding in
                guard binding.isPending(sequence), let load = binding.take(where: { $0.sequence == sequence }).first else { return nil }
                return (load, image ? binding.raiseFloor(to: sequence + 1) : [])
            }
        }
    }

    /// Cancels loads taken from their bindings, and tells those that asked.
    @MainActor
    func endCancelled(_ loads: [TargetRegistry.Binding.Load]) {
        guard !loads.isEmpty else { return }
        loader.cancel(loads.map(\.task))
        for load in loads { load.cancelled?() }
    }

    /// Indexes an unfinished URL-only task by URL, for `cancelLoading(url:)`.
    func track(_ task: ImageTask, url: URL) {
        registry.withLock { registry in
            if !task.isFinished { registry.byURL[url, default: []].append(task) }
        }
        // The task may have finished between the check and the insertion.
        if task.isFinished { registry.withLock { $0.forget(task, url: url) } }
    }

    /// A URL-only load ended: it leaves the index.
    func untrack(url: URL) {
        registry.withLock { registry in
            registry.byURL[url]?.removeAll { $0.isFinished }
            if registry.byURL[url]?.isEmpty == true { registry.byURL[url] = nil }
        }
    }

    /// Tells the notifications' observers and the `events` listeners of an outcome,
    /// in that order, from an operation of the main operation queue.
    /// swift-corelibs-foundation runs an observer registered with `queue: .main` by
    /// adding an operation to that queue and waiting for it, unless the post itself
    /// runs in one: posted from the main actor anywhere else, it would wait on itself
    /// for ever. Observers with `queue: nil` run there too, on the main thread.
    @MainActor
    func announce(_ result: Result<ImageResponse, ImagoError>, url: URL, target: WeakReference, cache: (any ImageCaching)?) {
        let announcement = Announcement(event: Event(url: url, result: result, reference: target), cache: cache)
        if OperationQueue.current === OperationQueue.main {
            announcement.post(to: self)
        } else {
            OperationQueue.main.addOperation { [weak self] in if let self { announcement.post(to: self) } }
        }
    }

    // MARK: - Cancelling

    /// Cancels the loads of `target` that match (by action and URL).
    @MainActor
    func cancelTargetLoads(_ target: AnyObject, where matches: (String?, URL) -> Bool) {
        let cancelled = registry.withLock { registry in
            registry.record(of: target)?.takeLoads(where: matches) ?? []
        }
        endCancelled(cancelled)
    }

    // MARK: - Look-ups

    /// Whether `target`'s binding for `action` has an unfinished load.
    @MainActor func isLoading(_ target: AnyObject, action: String?) -> Bool {
        registry.withLock { $0.record(of: target).map { !$0[action].loads.isEmpty } ?? false }
    }

    // MARK: - Targets that go away

    /// How often the sweep looks for targets that went away, while any target has an
    /// unfinished load (none when none has).
    static let sweepInterval: Duration = .milliseconds(500)

    /// Swift on Linux has no associated objects to learn of a target's end, and an
    /// Apple view cannot be told of leaving its window from an extension, so while any
    /// target has an unfinished load, a sweep every half second cancels the loads of
    /// targets that are gone or left their view hierarchy, and forgets the gone ones;
    /// with no load left, it stops.
    private func startSweeping() {
        let start = registry.withLock { registry -> Bool in
            guard !registry.isSweeping else { return false }
            registry.isSweeping = true
            return true
        }
        guard start else { return }
        Task { @MainActor [weak self] in
            while self != nil {
                try? await Task.sleep(for: Self.sweepInterval)
                guard let self, self.sweep() else { return }
            }
        }
    }

    /// Cancels the loads of targets that are gone, and of views that left their view
    /// hierarchy (`ImageDisplaying.isInViewHierarchy`) for a whole sweep after being
    /// in one; forgets the gone targets. Returns whether sweeping should go on (some
    /// live target still has a load).
    ///
    /// A slot whose view has gone (`ImageSlot`) counts as gone too. A view out of
    /// its hierarchy counts as gone even while something keeps it alive: most often a completion handler that captured it, held until its load
    /// ends. Cancelling releases the handler, and with it the view. The views are
    /// asked outside the lock, since a view's own code may call the loader.
    @MainActor @discardableResult
    func sweep() -> Bool {
        let (orphans, bound) = registry.withLock { registry -> ([TargetRegistry.Binding.Load], [TargetRegistry.Record]) in
            var orphans: [TargetRegistry.Binding.Load] = []
            var bound: [TargetRegistry.Record] = []
            for (id, record) in registry.targets {
                if record.target == nil {
                    orphans += record.loads.map(\.load)
                    registry.targets[id] = nil
                } else if record.isLoading {
                    bound.append(record)
                }
            }
            return (orphans, bound)
        }
        let placed = bound.compactMap { record in
            (record.target as? any ImageDisplaying).map { (record, $0.isInViewHierarchy, ($0 as? ImageSlot)?.isOrphaned ?? false) }
        }
        let (left, goOn) = registry.withLock { registry -> ([TargetRegistry.Binding.Load], Bool) in
            var left: [TargetRegistry.Binding.Load] = []
            for (record, inside, orphaned) in placed where record.noteSweep(inViewHierarchy: inside) || orphaned {
                left += record.takeLoads { _, _ in true }
            }
            let goOn = registry.targets.values.contains { $0.target != nil && $0.isLoading }
            registry.isSweeping = goOn
            return (left, goOn)
        }
        loader.cancel(orphans.map(\.task))
        for load in orphans { load.cancelled?() }
        endCancelled(left)
        return goOn
    }
}

/// An outcome on its way to the main operation queue. It holds the target weakly,
/// as the event does: an announcement waiting in the queue keeps no view alive.
///
/// `@unchecked Sendable`: the cache is only handed on, in the notification's
/// `userInfo`, on the main queue.
private final class Announcement: @unchecked Sendable {
    let event: ImageTargetLoader.Event
    let cache: (any ImageCaching)?

    init(event: ImageTargetLoader.Event, cache: (any ImageCaching)?) {
        self.event = event
        self.cache = cache
    }

    func post(to targets: ImageTargetLoader) {
        typealias Key = ImageTargetLoader.UserInfoKey
        var info: [String: Any] = [Key.url: event.url]
        let name: Notification.Name
        switch event.result {
        case .success(let response):
            name = ImageTargetLoader.didFinishNotification
            info[Key.image] = response.image
            if let cache { info[Key.cache] = cache }
        case .failure(let error):
            name = ImageTargetLoader.didFailNotification
            info[Key.error] = error
        }
        NotificationCenter.default.post(name: name, object: event.reference.object, userInfo: info)
        for stream in targets.registry.withLock({ Array($0.eventStreams.values) }) { stream.yield(event) }
    }
}

extension Result where Success == ImageResponse, Failure == ImagoError {
    /// Whether the outcome is told to anyone: cancellations are silent.
    var isDelivered: Bool {
        if case .failure(.cancelled) = self { return false }
        return true
    }

    /// Whether the outcome is an image.
    var isSuccess: Bool {
        if case .success = self { return true }
        return false
    }
}
