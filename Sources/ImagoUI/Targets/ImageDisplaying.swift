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
}

/// What a view shows at one moment.
public struct ImageDisplayContent: Sendable {
    /// Where a load stands.
    public enum Phase: Sendable, Equatable {
        /// No URL: the placeholder, if any.
        case empty
        /// Loading: the placeholder, if any, and the activity indicator if wanted.
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
    /// Whether the activity indicator is shown.
    public let showsActivityIndicator: Bool
    /// How to change to `image`.
    public let transition: ImageTransition

    /// Content to show: for views that render what they are given, and for code that
    /// shows an image of its own through the same path.
    public init(phase: Phase, image: DecodedImage?, showsActivityIndicator: Bool, transition: ImageTransition) {
        self.phase = phase
        self.image = image
        self.showsActivityIndicator = showsActivityIndicator
        self.transition = transition
    }

    /// A loaded image, shown with `transition` and no activity indicator.
    static func success(_ image: DecodedImage, transition: ImageTransition) -> ImageDisplayContent {
        ImageDisplayContent(phase: .success, image: image, showsActivityIndicator: false, transition: transition)
    }

    /// A loaded image fading in over `crossfade` seconds, unless it came from the
    /// memory cache (shown at once, as a list scrolling over cached images must be).
    static func success(_ response: ImageResponse, crossfade: Double) -> ImageDisplayContent {
        let transition: ImageTransition = response.source == .memory || crossfade <= 0 ? .none : .crossfade(seconds: crossfade)
        return .success(response.image, transition: transition)
    }
}

/// How a view changes to a new image.
public enum ImageTransition: Sendable, Equatable {
    /// At once.
    case none
    /// Fading the new image in over the old one for `seconds`.
    case crossfade(seconds: Double)
}

/// How `setImage(with:)` loads and shows an image.
public struct ImageDisplayOptions: Sendable {
    /// The size to decode to; nil for the view's `displayTargetSize`.
    public var targetSize: TargetSize?
    /// Applied in order after decoding.
    public var processors: [any ImageProcessing]
    /// How urgent the load is.
    public var priority: ImageRequest.Priority
    /// How long a loaded image fades in (0.4 s, as AsyncImageView's
    /// `crossfadeDuration`); 0 shows it at once. An image from the memory cache is
    /// always shown at once.
    public var crossfadeDuration: Double
    /// Whether the activity indicator shows while loading (AsyncImageView's
    /// `showActivityIndicator`, true by default).
    public var showsActivityIndicator: Bool
    /// Shown when the load fails; nil keeps the placeholder.
    public var failureImage: DecodedImage?
    /// Whether a progressive JPEG or an interlaced PNG is shown as it arrives,
    /// sharpening in place of the placeholder (`ImageRequest.Options.progressivePreviews`):
    /// each preview is displayed in the loading phase (without the activity
    /// indicator), the final image replaces it,
    /// and no preview is shown after the final image or once the view has moved on to
    /// another URL. Off by default, as in Nuke.
    public var showsProgressivePreviews: Bool

    /// The defaults.
    public init(
        targetSize: TargetSize? = nil, processors: [any ImageProcessing] = [], priority: ImageRequest.Priority = .normal,
        crossfadeDuration: Double = 0.4, showsActivityIndicator: Bool = true, failureImage: DecodedImage? = nil,
        showsProgressivePreviews: Bool = false
    ) {
        self.targetSize = targetSize
        self.processors = processors
        self.priority = priority
        self.crossfadeDuration = crossfadeDuration
        self.showsActivityIndicator = showsActivityIndicator
        self.failureImage = failureImage
        self.showsProgressivePreviews = showsProgressivePreviews
    }
}

extension ImageDisplaying {
    public var displayTargetSize: TargetSize? { nil }

    public var imageTargetLoader: ImageTargetLoader { .shared }

    public func bundledImage(named name: String) -> DecodedImage? { nil }

    public var imageDisplayOptions: ImageDisplayOptions { ImageDisplayOptions() }

    public var displayedImage: DecodedImage? { nil }

    public func imageLoadDidCancel() {}

    public var isInViewHierarchy: Bool { true }
}
