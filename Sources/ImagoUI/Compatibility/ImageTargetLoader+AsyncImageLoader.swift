// AsyncImageLoader's API, as Nick Lockwood's AsyncImageView has it: loads set on a
// target with an action (a selector there, an `ImageLoadAction` here), cancelled by
// URL, target or action, looked up by target, and announced through notifications.
// With `setImage(with:)`, `imageURL` and `cancelImageLoad()` on any view (the calls of
// SDWebImage's `UIImageView+WebCache` and of AsyncImageView's `UIImageView` category)
// and the `AsyncImageView` class, this folder is what code written for those two
// libraries finds again; the binding underneath is `ImageTargetLoader`'s.

import Foundation
import Imago

extension ImageTargetLoader {
    // MARK: - Loading

    /// Loads `url` for `target`, calling `success` or `failure` on the main actor with
    /// the target (held weakly until then, so the closures need not capture it).
    ///
    /// Loads set on one target are queued in the order they were set, as
    /// AsyncImageLoader queues them: each calls `success` or `failure` when it lands,
    /// unless a load set later has already succeeded. A success cancels the target's
    /// earlier loads still pending, so an older image never follows a newer one: set
    /// a thumbnail and then the full image, and the thumbnail, arriving first, is set
    /// before the full image; arriving last, it is dropped. A cached image succeeds
    /// before this returns, and cancels the earlier loads. Checked on the main actor
    /// at the moment each would call: a cancelled load, or one whose target has gone,
    /// calls neither.
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
    /// are queued in the order set, as with `loadImage(with:target:success:failure:)`,
    /// and each load that is not overtaken posts its own notification; loads of other
    /// actions are queues of their own. A nil target loads with no handler: the
    /// outcome is seen through the notifications.
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
            self?.untrack(url: url)
            guard let self, result.isDelivered else { return }
            Task { @MainActor in self.announce(result, url: url, target: WeakReference(nil), cache: cache) }
        }
        track(task, url: url)
        return task
    }

    // MARK: - Cancelling: each call cancels exactly what it names

    /// Cancels the load of `url` set on `target` with `action`.
    @MainActor public func cancelLoading(url: URL, target: AnyObject, action: ImageLoadAction) {
        cancelTargetLoads(target) { $1 == url && $0 == action.name }
    }

    /// Cancels the loads of `url` set on `target`, whatever their action.
    @MainActor public func cancelLoading(url: URL, target: AnyObject) {
        cancelTargetLoads(target) { $1 == url }
    }

    /// Cancels every load of `url` made through this loader, for any target or none.
    /// Called off the main actor, the targets' completions hear of it on the main
    /// actor soon after; nothing of the cancelled loads is delivered in any case.
    public func cancelLoading(url: URL) {
        let (cancelled, urlOnly) = registry.withLock { registry -> ([TargetRegistry.Binding.Load], [ImageTask]) in
            var cancelled: [TargetRegistry.Binding.Load] = []
            for record in registry.targets.values {
                cancelled += record.takeLoads { $1 == url }
            }
            return (cancelled, registry.byURL[url] ?? [])
        }
        loader.cancel(urlOnly + cancelled.map(\.task))
        let callbacks = cancelled.compactMap(\.cancelled)
        if !callbacks.isEmpty { Task { @MainActor in for callback in callbacks { callback() } } }
    }

    /// Cancels the load set on `target` with `action`, whatever its URL.
    @MainActor public func cancelLoading(target: AnyObject, action: ImageLoadAction) {
        cancelTargetLoads(target) { name, _ in name == action.name }
    }

    /// Cancels every load set on `target`.
    @MainActor public func cancelLoading(target: AnyObject) {
        cancelTargetLoads(target) { _, _ in true }
    }

    // MARK: - Look-ups

    /// The URL of the latest load queued or running for `target` with `action` (not
    /// necessarily the next image set); nil once none is left, as AsyncImageLoader's
    /// `URLForTarget:action:`.
    @MainActor public func url(for target: AnyObject, action: ImageLoadAction) -> URL? {
        registry.withLock { $0.record(of: target)?.byAction[action.name]?.loads.last?.url }
    }

    /// The latest URL set on `target`, loading or loaded; nil after a nil URL. A
    /// view's `imageURL`.
    @MainActor public func url(for target: AnyObject) -> URL? {
        registry.withLock { $0.record(of: target)?.latestURL }
    }
}
