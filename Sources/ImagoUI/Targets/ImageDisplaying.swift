import Foundation
import Imago

/// Anything that shows an image: a `UIImageView`, an `NSImageView`, a GTK picture,
/// a cell of a contact sheet, a test double. The calls that SDWebImage's
/// `UIImageView+WebCache` and AsyncImageView's `UIImageView.imageURL` put on image
/// views, `setImage(with:)`, `imageURL` and `cancelImageLoad()`, come with it; they
/// decide what to show, and the view only renders `ImageDisplayContent`.
///
/// The view is held weakly while its images load: a view that goes away has its
/// loads cancelled, and so their transfers when nobody else waits for them.
@MainActor
public protocol ImageDisplaying: AnyObject {
    /// Shows `content`.
    func display(_ content: ImageDisplayContent)
    /// The box the view shows images in, in pixels (its size × the screen's scale),
    /// when it knows it: images are decoded to that size unless the options say
    /// otherwise. Nil by default (full size).
    var displayTargetSize: TargetSize? { get }
    /// The loader the view's images come through; `ImageTargetLoader.shared` by
    /// default.
    var imageTargetLoader: ImageTargetLoader { get }
    /// The image shipped in the app bundle under `name` (its path inside the bundle),
    /// from the platform's own named-image cache (`UIImage(named:)`), so that Imago's
    /// caches never hold a second copy of it; nil where the platform has no such cache
    /// (the default), and the file then loads as any other.
    func bundledImage(named name: String) -> DecodedImage?
    /// The options `setImage(with:)` loads with when the call gives none, and
    /// `imageURL` always: the defaults, or a loading view's own crossfade and
    /// activity-indicator settings.
    var imageDisplayOptions: ImageDisplayOptions { get }
    /// The image the view shows now, however it was set (in a storyboard, in code):
    /// asked once, at the view's first `setImage(with:)`, and kept as the view's
    /// placeholder for every later load that names none, as the original
    /// `setImageWithURL:` kept the view's first image. Nil by default.
    var displayedImage: DecodedImage? { get }
    /// Told when the view's load was cancelled (`cancelImageLoad()`, any
    /// `cancelLoading` of the target loader) and nothing else loads for it: the load
    /// ended without an image, and `display` hears nothing more of it. What the view
    /// shows stays; a loading view stops its indicator here
    /// (`ImageLoadingState.endLoading()`). Nothing by default.
    func imageLoadDidCancel()
    /// Whether the view is part of a view hierarchy (has a superview or a window).
    /// A view seen in one that then stays out of it for a sweep of the target loader
    /// (about a second) counts as gone: its loads are cancelled, even while something
    /// still keeps it alive, most often a completion handler that captured it, which
    /// the cancel releases. True by default (never taken for gone while alive).
    var isInViewHierarchy: Bool { get }
    /// Whether the system asks for reduced motion (iOS's Reduce Motion, macOS's
    /// Reduce motion, GTK's animations turned off): images then change at once,
    /// whatever transition the options name. False by default.
    var reducesMotion: Bool { get }
}

/// What a view shows at one moment.
public struct ImageDisplayContent: Sendable {
    /// Where a load stands.
    public enum Phase: Sendable, Equatable {
        /// No URL: the placeholder, if any.
        case empty
        /// Loading: the placeholder, if any, and the indicator if wanted.
        case loading
        /// The loaded image.
        case success
        /// The load failed: the failure image, else the placeholder.
        case failure
    }

    /// Where the load stands.
    public let phase: Phase
    /// The image to show; nil for none.
    public let image: DecodedImage?
    /// The indicator to show: `.none` but while loading.
    public let indicator: ImageLoadingIndicator
    /// How much of the transfer has arrived, from 0 to 1, when its size is known:
    /// what a determinate indicator draws. Nil before any byte, or when the size is
    /// not known.
    public let progress: Double?
    /// How to change to `image`.
    public let transition: ImageTransition

    /// Whether an indicator is shown.
    public var showsActivityIndicator: Bool { indicator != .none }

    /// Content to show: for views that render what they are given, and for code that
    /// shows an image of its own through the same path.
    public init(
        phase: Phase, image: DecodedImage?, indicator: ImageLoadingIndicator = .none, progress: Double? = nil,
        transition: ImageTransition = .none
    ) {
        self.phase = phase
        self.image = image
        self.indicator = indicator
        self.progress = progress
        self.transition = transition
    }

    /// Content with the activity indicator or none, as AsyncImageView has it.
    public init(phase: Phase, image: DecodedImage?, showsActivityIndicator: Bool, transition: ImageTransition) {
        self.init(phase: phase, image: image, indicator: showsActivityIndicator ? .activity : .none, transition: transition)
    }

    /// A loaded image, shown with `transition` and no indicator.
    static func success(_ image: DecodedImage, transition: ImageTransition) -> ImageDisplayContent {
        ImageDisplayContent(phase: .success, image: image, transition: transition)
    }

    /// A loaded image shown with `transition`, unless it came from the memory cache
    /// (shown at once, as a list scrolling over cached images must be) or the system
    /// asks for reduced motion.
    static func success(_ response: ImageResponse, transition: ImageTransition, reducesMotion: Bool) -> ImageDisplayContent {
        .success(response.image, transition: response.source == .memory || reducesMotion ? .none : transition)
    }
}

/// What a view shows while its image loads.
public enum ImageLoadingIndicator: Sendable, Hashable {
    /// Nothing.
    case none
    /// A spinner (AsyncImageView's activity indicator, GTK's spinner).
    case activity
    /// A determinate indicator, filled as the bytes arrive (`ImageDisplayContent.progress`);
    /// a spinner until the size is known.
    case progress
    /// The view's own indicator, given to the view (`AsyncImageView.customIndicator`,
    /// the GTK view's `customIndicator`), told of the progress as it comes.
    case custom
}

/// How a view changes to a new image.
public enum ImageTransition: Sendable, Equatable {
    /// At once.
    case none
    /// Fading the new image in over the old one for `seconds`.
    case crossfade(seconds: Double)
    /// The caller's own.
    case custom(Custom)

    /// A transition of the caller's own: `animate` is handed the view and a function
    /// that puts the new image up, and calls it inside whatever animation it makes
    /// (on UIKit, `UIView.transition(with:duration:options:animations:)` with it as
    /// the animations). Views call it instead of their own change, on the main actor.
    public struct Custom: Sendable, Equatable {
        /// Names the transition: two with the same name are the same transition.
        public let name: String
        /// How long it runs, in seconds.
        public let duration: Double
        /// Animates `view` to the new image, calling `commit` to put it up.
        public let animate: @MainActor @Sendable (_ view: AnyObject, _ commit: @escaping @MainActor () -> Void) -> Void

        /// A transition named `name`, running `duration` seconds, made by `animate`.
        public init(
            name: String, duration: Double,
            animate: @escaping @MainActor @Sendable (_ view: AnyObject, _ commit: @escaping @MainActor () -> Void) -> Void
        ) {
            self.name = name
            self.duration = duration
            self.animate = animate
        }

        public static func == (lhs: Custom, rhs: Custom) -> Bool {
            lhs.name == rhs.name && lhs.duration == rhs.duration
        }
    }

    /// The default: a 0.4 s crossfade, as AsyncImageView's `crossfadeDuration`.
    public static let `default` = ImageTransition.crossfade(seconds: 0.4)
}

/// How `setImage(with:)` loads and shows an image.
public struct ImageDisplayOptions: Sendable {
    /// The values, in one object: a view's options are copied at every call (a memory
    /// hit included), and a copy is then one reference counted, not one per array,
    /// image and URL in them. Setting a value makes a new object; options are set up
    /// once and read at every call.
    private final class Storage: Sendable {
        struct Values: Sendable {
            var targetSize: TargetSize?
            var processors: [any ImageProcessing]
            var priority: ImageRequest.Priority
            var transition: ImageTransition
            var indicator: ImageLoadingIndicator
            var failureImage: DecodedImage?
            var showsProgressivePreviews: Bool
            var alternativeURLs: [URL] = []
            var constrainedURL: URL?
        }

        let values: Values

        init(_ values: Values) { self.values = values }
    }

    private var storage: Storage

    private mutating func change(_ body: (inout Storage.Values) -> Void) {
        var values = storage.values
        body(&values)
        storage = Storage(values)
    }

    /// The size to decode to; nil for the view's `displayTargetSize`.
    public var targetSize: TargetSize? {
        get { storage.values.targetSize }
        set { change { $0.targetSize = newValue } }
    }
    /// Applied in order after decoding.
    public var processors: [any ImageProcessing] {
        get { storage.values.processors }
        set { change { $0.processors = newValue } }
    }
    /// How urgent the load is.
    public var priority: ImageRequest.Priority {
        get { storage.values.priority }
        set { change { $0.priority = newValue } }
    }
    /// How a loaded image replaces what the view shows: a 0.4 s crossfade by default.
    /// An image from the memory cache is always shown at once, and so is every image
    /// while the system asks for reduced motion (`ImageDisplaying.reducesMotion`).
    public var transition: ImageTransition {
        get { storage.values.transition }
        set { change { $0.transition = newValue } }
    }
    /// What the view shows while loading: the activity indicator by default.
    public var indicator: ImageLoadingIndicator {
        get { storage.values.indicator }
        set { change { $0.indicator = newValue } }
    }
    /// Shown when the load fails; nil keeps the placeholder.
    public var failureImage: DecodedImage? {
        get { storage.values.failureImage }
        set { change { $0.failureImage = newValue } }
    }
    /// Whether a progressive JPEG or an interlaced PNG is shown as it arrives,
    /// sharpening in place of the placeholder (`ImageRequest.Options.progressivePreviews`):
    /// each preview is displayed in the loading phase (without the indicator), the
    /// final image replaces it, and no preview is shown after the final image or once
    /// the view has moved on to another URL. Off by default, as in Nuke.
    public var showsProgressivePreviews: Bool {
        get { storage.values.showsProgressivePreviews }
        set { change { $0.showsProgressivePreviews = newValue } }
    }
    /// URLs tried in order when the URL set fails, each cached under its own key
    /// (`ImageRequest.alternativeURLs`; Kingfisher's `alternativeSources`).
    public var alternativeURLs: [URL] {
        get { storage.values.alternativeURLs }
        set { change { $0.alternativeURLs = newValue } }
    }
    /// A URL loaded first while the loader is told the network is constrained
    /// (`ImageRequest.constrainedURL`).
    public var constrainedURL: URL? {
        get { storage.values.constrainedURL }
        set { change { $0.constrainedURL = newValue } }
    }

    /// How long a loaded image fades in (AsyncImageView's `crossfadeDuration`); 0 for
    /// no transition. Reads 0 for a custom transition.
    public var crossfadeDuration: Double {
        get { if case .crossfade(let seconds) = transition { seconds } else { 0 } }
        set { transition = newValue > 0 ? .crossfade(seconds: newValue) : .none }
    }

    /// Whether an indicator shows while loading (AsyncImageView's
    /// `showActivityIndicator`); setting it true picks the activity indicator.
    public var showsActivityIndicator: Bool {
        get { indicator != .none }
        set { indicator = newValue ? (indicator == .none ? .activity : indicator) : .none }
    }

    /// Made once: every memory hit of a view with the default options asks for them.
    static let defaults = ImageDisplayOptions()

    /// The defaults, with AsyncImageView's crossfade and activity-indicator settings.
    public init(
        targetSize: TargetSize? = nil, processors: [any ImageProcessing] = [], priority: ImageRequest.Priority = .normal,
        crossfadeDuration: Double = 0.4, showsActivityIndicator: Bool = true, failureImage: DecodedImage? = nil,
        showsProgressivePreviews: Bool = false
    ) {
        self.init(
            targetSize: targetSize, processors: processors, priority: priority,
            transition: crossfadeDuration > 0 ? .crossfade(seconds: crossfadeDuration) : .none,
            indicator: showsActivityIndicator ? .activity : .none, failureImage: failureImage,
            showsProgressivePreviews: showsProgressivePreviews)
    }

    /// Options with a transition and an indicator of any kind.
    public init(
        targetSize: TargetSize? = nil, processors: [any ImageProcessing] = [], priority: ImageRequest.Priority = .normal,
        transition: ImageTransition, indicator: ImageLoadingIndicator = .activity, failureImage: DecodedImage? = nil,
        showsProgressivePreviews: Bool = false
    ) {
        storage = Storage(.init(
            targetSize: targetSize, processors: processors, priority: priority, transition: transition, indicator: indicator,
            failureImage: failureImage, showsProgressivePreviews: showsProgressivePreviews))
    }
}

extension ImageDisplaying {
    public var displayTargetSize: TargetSize? { nil }

    public var imageTargetLoader: ImageTargetLoader { .shared }

    public func bundledImage(named name: String) -> DecodedImage? { nil }

    public var imageDisplayOptions: ImageDisplayOptions { ImageDisplayOptions.defaults }

    public var displayedImage: DecodedImage? { nil }

    public func imageLoadDidCancel() {}

    public var isInViewHierarchy: Bool { true }

    public var reducesMotion: Bool { false }
}
