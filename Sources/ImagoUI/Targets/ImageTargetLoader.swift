import Foundation
import Imago

/// Loads images for targets (views, cells, any object), the way Nick Lockwood's
/// AsyncImageView's `AsyncImageLoader` does: loads are set on a target with an
/// action, cancelled by URL, target or action, looked up by target, and announced
/// through notifications. Built only on `ImageLoader`'s public API.
///
/// Targets are held weakly: the loader never keeps one alive, and the loads of a
/// target that goes away are cancelled (and so their transfers, when nobody else
/// waits for them). Handlers and notifications run on the main actor.
public final class ImageTargetLoader: Sendable {
    /// Loads for targets through `ImageLoader.shared`.
    public static let shared = ImageTargetLoader(loader: .shared)

    /// Posted on the main actor when a target-bound or URL-only load finishes.
    /// `object`: the target (nil for URL-only loads); `userInfo`: the image, URL and
    /// cache under `UserInfoKey`'s names.
    public static let didFinishNotification = Notification.Name("ImagoImageLoadDidFinish")
    /// Posted on the main actor when a target-bound or URL-only load fails.
    /// `object`: the target; `userInfo`: the error and URL under `UserInfoKey`'s names.
    public static let didFailNotification = Notification.Name("ImagoImageLoadDidFail")

    /// The names under which the notifications' `userInfo` carries its values.
    public enum UserInfoKey {
        /// The loaded `DecodedImage`.
        public static let image = "image"
        /// The `URL` loaded.
        public static let url = "url"
        /// The `ImageCaching` the image was stored in, when there is one.
        public static let cache = "cache"
        /// The `ImagoError`.
        public static let error = "error"
    }

    /// What the notifications say, as values for `events`.
    public struct Event: Sendable {
        /// The URL loaded.
        public let url: URL
        /// The image and where it came from, or why it failed.
        public let result: Result<ImageResponse, ImagoError>
        /// The target, held weakly: reached on the main actor only, where targets live.
        let reference: WeakReference

        /// The target it was loaded for; nil for URL-only loads or a target gone.
        @MainActor public var target: AnyObject? { reference.object }
    }

    /// The loader underneath.
    public let loader: ImageLoader
    let registry = Locked(TargetRegistry())

    /// Loads for targets through `loader`.
    public init(loader: ImageLoader) {
        self.loader = loader
    }

    /// The events of every target-bound and URL-only load, as the notifications post
    /// them, from the moment of the call on.
    public var events: AsyncStream<Event> {
        AsyncStream { continuation in
            let id = registry.withLock { registry -> Int in
                registry.lastStream += 1
                registry.eventStreams[registry.lastStream] = continuation
                return registry.lastStream
            }
            continuation.onTermination = { [weak self] _ in
                _ = self?.registry.withLock { $0.eventStreams.removeValue(forKey: id) }
            }
        }
    }
}

/// A weak reference that may cross isolation, handed back on the main actor.
///
/// `@unchecked Sendable`: the loader only stores targets and compares them by
/// identity; the object itself is only used on the main actor.
struct WeakReference: @unchecked Sendable {
    /// The object, while it lives.
    weak var object: AnyObject?

    init(_ object: AnyObject?) {
        self.object = object
    }
}

/// Every target's bindings, the URL-only loads, and the listeners of `events`; a value
/// behind the target loader's lock.
struct TargetRegistry {
    /// One target's bindings: one for the view calls (`setImage(with:)`, `imageURL`,
    /// the success/failure form) and one for each action. A class, so that reaching it
    /// through the table copies no weak reference (the costliest part of a view's
    /// memory hit otherwise).
    ///
    /// `@unchecked Sendable`: only touched with the target loader's lock held.
    final class Record: @unchecked Sendable {
        /// Held directly, not in a `WeakReference`: reading a weak reference kept in a
        /// struct copies it first, which costs more than the rest of a memory hit.
        /// Nothing pins the target's address: an Objective-C object's is free for the
        /// next object as soon as it is deallocated, so the record is the target's only
        /// while this still reads as that very object (`TargetRegistry.record(of:)`).
        weak var target: AnyObject?
        /// The binding of the calls without an action. Apart from `byAction`, so that
        /// the views' common case hashes no optional key.
        var withoutAction = Binding()
        var byAction: [String: Binding] = [:]
        /// The latest URL set on the target, by any call; nil after a nil URL.
        var latestURL: URL?
        /// What the view showed when it was first bound: shown again while each later
        /// load runs, unless the call names a placeholder of its own.
        let initialImage: DecodedImage?

        init(target: AnyObject, initialImage: DecodedImage?) {
            self.target = target
            self.initialImage = initialImage
        }

        /// Runs `body` on the binding for `action` in place (an action's is made when
        /// it has none).
        func withBinding<Result>(_ action: String?, _ body: (inout Binding) -> Result) -> Result {
            guard let action else { return body(&withoutAction) }
            return body(&byAction[action, default: Binding()])
        }

        /// The binding for `action`, read.
        subscript(action: String?) -> Binding {
            action.map { byAction[$0] ?? Binding() } ?? withoutAction
        }

        /// Where the view stood at the sweeps since its latest call: a view out of its
        /// hierarchy at two sweeps in a row, having been in it since, counts as gone.
        /// Only a view seen inside may be taken for gone: one being set up before it
        /// is added (a cell configured for display) keeps its loads.
        private var sweepsOutside: Int?

        /// A call was made on the target: its place in a hierarchy is looked at anew.
        func noteCall() {
            sweepsOutside = nil
        }

        /// A sweep found the view in or out of its view hierarchy; returns whether
        /// it now counts as gone.
        func noteSweep(inViewHierarchy inside: Bool) -> Bool {
            if inside {
                sweepsOutside = 0
            } else if let outside = sweepsOutside {
                sweepsOutside = outside + 1
            }
            return (sweepsOutside ?? 0) >= 2
        }

        /// Whether any binding has an unfinished load.
        var isLoading: Bool {
            !withoutAction.loads.isEmpty || byAction.values.contains { !$0.loads.isEmpty }
        }

        /// Every binding's unfinished loads.
        var loads: [(action: String?, load: Binding.Load)] {
            var loads = withoutAction.loads.map { (String?.none, $0) }
            for (action, binding) in byAction { loads += binding.loads.map { (action, $0) } }
            return loads
        }

        /// Takes the unfinished loads that match (by action and URL) from their bindings.
        func takeLoads(where matches: (String?, URL) -> Bool) -> [Binding.Load] {
            var taken = withoutAction.take { matches(nil, $0.url) }
            for action in Array(byAction.keys) {
                taken += byAction[action, default: Binding()].take { matches(action, $0.url) }
            }
            return taken
        }
    }

    /// What one target shows for one action (or for none), and the loads that may
    /// change it, as AsyncImageView's AsyncImageLoader keeps them: in the order they
    /// were asked for. Each load may deliver when it lands, unless a later one has
    /// already delivered its image; an image delivered cancels every earlier load
    /// still pending, so an older image never follows a newer one. A call that
    /// replaces (`setImage(with:)`, a nil URL) cancels the loads before it, and a
    /// cancel takes its loads away: a load delivers anything (image, preview, failure,
    /// handlers, completion) only while it is still among the binding's loads, checked
    /// on the main actor at the moment of delivery.
    struct Binding {
        /// An unfinished load, from its start until it delivers or is cancelled.
        struct Load {
            let task: ImageTask
            let url: URL
            /// Its place in the order calls were made, over all bindings.
            let sequence: Int
            /// Told on the main actor when the load is cancelled before it delivered.
            let cancelled: (@MainActor @Sendable () -> Void)?
        }

        /// The unfinished loads, oldest first.
        var loads: [Load] = []
        /// No load asked for before this place may start or deliver: it moves past an
        /// image delivered (or found in memory) and up to a replacing call.
        var floor = 0

        /// Takes the loads that match out of the binding.
        mutating func take(where matches: (Load) -> Bool) -> [Load] {
            guard loads.contains(where: matches) else { return [] }
            let taken = loads.filter(matches)
            loads.removeAll(where: matches)
            return taken
        }

        /// Whether load `sequence` is still pending, so may deliver.
        func isPending(_ sequence: Int) -> Bool {
            sequence >= floor && loads.contains { $0.sequence == sequence }
        }

        /// Nothing asked for before `sequence` may deliver any more: the loads before
        /// it are taken out, to be cancelled.
        mutating func raiseFloor(to sequence: Int) -> [Load] {
            floor = max(floor, sequence)
            return take { $0.sequence < sequence }
        }
    }

    var targets: [ObjectIdentifier: Record] = [:]
    /// The order of calls, over all targets and bindings.
    var lastSequence = 0
    /// Unfinished URL-only loads by URL, for cancelling by URL: arrays, not sets,
    /// because a URL rarely has more than a few loads.
    var byURL: [URL: [ImageTask]] = [:]
    var isSweeping = false
    var eventStreams: [Int: AsyncStream<ImageTargetLoader.Event>.Continuation] = [:]
    var lastStream = 0

    /// The record of `target`, if it has one. The table is keyed by address, and an
    /// address may have belonged to an object that has gone since: the record under it
    /// is `target`'s only if it still holds `target` itself, never a dead object's.
    func record(of target: AnyObject) -> Record? {
        guard let record = targets[ObjectIdentifier(target)], record.target === target else { return nil }
        return record
    }

    /// The next place in the order of calls.
    mutating func nextSequence() -> Int {
        lastSequence += 1
        return lastSequence
    }

    mutating func forget(_ task: ImageTask, url: URL) {
        byURL[url]?.removeAll { $0 === task }
        if byURL[url]?.isEmpty == true { byURL[url] = nil }
    }
}
