import Foundation
import Imago

/// One of several images a view shows, loaded on a binding of its own: a button's
/// image and its background image for each state, as SDWebImage's `UIButton+WebCache`
/// keeps one operation per state. A slot is the view's target for that image: a
/// `setImage(with:)` on it replaces only that slot's load, and its content goes to
/// `render`.
///
/// Slots live as long as their view: the table holds them while the view does, and a
/// slot whose view has gone counts as gone at the target loader's next sweep, its
/// loads cancelled.
@MainActor
final class ImageSlot: ImageDisplaying {
    /// The view the slot belongs to.
    private(set) weak var owner: AnyObject?
    /// The slot's name among its view's ("image.1", "background.0").
    let name: String
    let imageTargetLoader: ImageTargetLoader
    /// Puts the content up on the view.
    var render: @MainActor (ImageDisplayContent) -> Void
    /// The view's own image in this slot now, the placeholder of loads that name none.
    var current: @MainActor () -> DecodedImage?

    private init(
        owner: AnyObject, name: String, loader: ImageTargetLoader, render: @escaping @MainActor (ImageDisplayContent) -> Void,
        current: @escaping @MainActor () -> DecodedImage?
    ) {
        self.owner = owner
        self.name = name
        imageTargetLoader = loader
        self.render = render
        self.current = current
    }

    /// Every view's slots, by view and name; views that have gone are dropped as
    /// slots are asked for.
    private static var table: [ObjectIdentifier: (owner: WeakReference, slots: [String: ImageSlot])] = [:]

    /// The slot `name` of `owner`, made on first use with `render` and `current`
    /// (a later call's closures replace them, so they may capture the state asked for).
    static func slot(
        _ name: String, of owner: AnyObject, loader: ImageTargetLoader,
        render: @escaping @MainActor (ImageDisplayContent) -> Void, current: @escaping @MainActor () -> DecodedImage?
    ) -> ImageSlot {
        let id = ObjectIdentifier(owner)
        if let entry = table[id], entry.owner.object === owner, let slot = entry.slots[name], slot.imageTargetLoader === loader {
            slot.render = render
            slot.current = current
            return slot
        }
        table = table.filter { $0.value.owner.object != nil }
        let slot = ImageSlot(owner: owner, name: name, loader: loader, render: render, current: current)
        var slots = table[id].flatMap { $0.owner.object === owner ? $0.slots : nil } ?? [:]
        slots[name] = slot
        table[id] = (WeakReference(owner), slots)
        return slot
    }

    /// The slots of `owner` whose names start with `prefix`, made or not.
    static func slots(of owner: AnyObject, prefix: String) -> [ImageSlot] {
        guard let entry = table[ObjectIdentifier(owner)], entry.owner.object === owner else { return [] }
        return entry.slots.filter { $0.key.hasPrefix(prefix) }.map(\.value)
    }

    func display(_ content: ImageDisplayContent) {
        guard owner != nil else { return }
        render(content)
    }

    var displayedImage: DecodedImage? { current() }

    /// A slot of a view that has gone is out of every hierarchy.
    var isInViewHierarchy: Bool {
        guard let owner else { return false }
        return (owner as? any ImageDisplaying)?.isInViewHierarchy ?? true
    }

    /// Whether the slot's view has gone: its loads are cancelled as a gone target's.
    var isOrphaned: Bool { owner == nil }
}

extension ImageTargetLoader {
    /// Loads `url` into the image `slot` of `view`, a view that shows several images
    /// (a button's image and background image for each state), with the calls of
    /// `setImage(with:)`: the slot's previous load is cancelled (the view's other
    /// slots load on), the placeholder is shown, an image in the memory cache is
    /// shown before this returns, and a nil URL shows the placeholder and loads
    /// nothing. `render` puts each content up on the view (it holds the view weakly);
    /// `current` reads the slot's image now, the placeholder when the call names none.
    /// A slot's loads are cancelled when its view goes away.
    @MainActor @discardableResult
    public func setImage(
        with url: URL?, on view: AnyObject, slot: String, placeholder: DecodedImage? = nil,
        options: ImageDisplayOptions = ImageDisplayOptions(),
        render: @escaping @MainActor (ImageDisplayContent) -> Void, current: @escaping @MainActor () -> DecodedImage? = { nil },
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        ImageSlot.slot(slot, of: view, loader: self, render: render, current: current)
            .setImage(with: url, placeholder: placeholder, options: options, completion: completion)
    }

    /// Cancels the loads of `view`'s image slots whose names start with `prefix`
    /// (every slot for an empty prefix); what they show stays.
    @MainActor
    public func cancelSlotLoads(of view: AnyObject, prefix: String = "") {
        for slot in ImageSlot.slots(of: view, prefix: prefix) { slot.cancelImageLoad() }
    }
}
