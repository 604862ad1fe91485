import Foundation

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

    /// Loads `url` into the view, as SDWebImage's `setImageWithURL:placeholderImage:`:
    /// the view's previous load is cancelled, the placeholder is shown, an image in
    /// the memory cache is shown before this returns, and a nil URL shows the
    /// placeholder and loads nothing. Without a placeholder, the image the view showed
    /// when it was first loaded into (`displayedImage`) stands in, as the original
    /// category's did. A file in the app bundle comes from the platform's named-image
    /// cache where there is one (`bundledImage(named:)`), also before this returns.
    ///
    /// The view shows an image only while its URL is still the view's latest and no
    /// cancel came since: a load overtaken by a newer call or cancelled, even after its
    /// image arrived but before it reached the main actor, shows nothing, and its
    /// `completion` gets `.failure(.cancelled)`. Otherwise `completion` runs on the main
    /// actor with the image and where it came from, or the error.
    ///
    /// `options` nil takes the view's own (`imageDisplayOptions`); given, they are the
    /// call's in full. Returns the load's task; nil when nothing loads (a nil URL, a
    /// memory hit).
    ///
    /// ```swift
    /// // In a list cell being reused: the previous row's load stops, the placeholder shows.
    /// cell.imageView.setImage(with: row.photoURL, placeholder: gray) { result in
    ///     if case .success(let response) = result { print(response) }  // "jpeg 240×160, 1 frame, from disk"
    /// }
    /// cell.imageView.setImage(with: nil, placeholder: gray)  // no URL: the placeholder, nothing loads
    /// ```
    @discardableResult
    public func setImage(
        with url: URL?, placeholder: DecodedImage? = nil, options: ImageDisplayOptions? = nil,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        let targets = imageTargetLoader
        let options = options ?? imageDisplayOptions
        // Every call moves the view's binding on, first: whatever an earlier load
        // still has on its way to the main actor is dropped from here on.
        let (generation, initialImage) = targets.rebind(self, action: nil, to: url) { displayedImage }
        let placeholder = placeholder ?? initialImage
        guard let url else {
            display(ImageDisplayContent(phase: .empty, image: placeholder, showsActivityIndicator: false, transition: .none))
            return nil
        }
        let targetSize = options.targetSize ?? displayTargetSize
        // A memory hit is the common case in a scrolling list: it is shown at once,
        // with no task, request or notification made for it.
        let key = ImageCacheKey(imageKey: url.absoluteString, targetSize: targetSize, processors: options.processors)
        if let image = targets.loader.cache?.image(forKey: key) {
            display(.success(image, transition: .none))
            completion?(.success(ImageResponse(image: image, url: url, source: .memory, metrics: ImageMetrics())))
            return nil
        }
        if options.processors.isEmpty, let name = BundledImages.main.resourceName(of: url), let image = bundledImage(named: name) {
            display(.success(image, transition: .none))
            completion?(.success(ImageResponse(image: image, url: url, source: .local, metrics: ImageMetrics())))
            return nil
        }
        display(ImageDisplayContent(
            phase: .loading, image: placeholder, showsActivityIndicator: options.showsActivityIndicator, transition: .none))
        let request = ImageRequest(
            url: url, targetSize: targetSize, processors: options.processors, priority: options.priority,
            options: options.showsProgressivePreviews ? .progressivePreviews : [])
        let crossfade = options.crossfadeDuration, failureImage = options.failureImage ?? placeholder
        // A preview is shown in the loading phase, without the activity indicator: the
        // picture sharpening is the sign of progress.
        var preview: (@MainActor @Sendable (AnyObject, ImageResponse) -> Void)?
        if options.showsProgressivePreviews {
            preview = { target, response in
                (target as? any ImageDisplaying)?.display(ImageDisplayContent(
                    phase: .loading, image: response.image, showsActivityIndicator: false, transition: .none))
            }
        }
        // A cancelled load displays nothing, so the view hears of its end apart: unless
        // a newer call of its own has a load running by the time this runs (a cancel
        // by URL reaches the main actor later).
        let handle = WeakReference(self)
        let cancelled: @MainActor @Sendable () -> Void = {
            if let view = handle.object as? any ImageDisplaying, !targets.isLoading(view, action: nil) {
                view.imageLoadDidCancel()
            }
            completion?(.failure(.cancelled))
        }
        return targets.start(
            request, target: self, action: nil, generation: generation, cancelled: cancelled,
            preview: preview,
            success: { target, response in
                (target as? any ImageDisplaying)?.display(.success(response, crossfade: crossfade))
                completion?(.success(response))
            },
            failure: { target, error in
                (target as? any ImageDisplaying)?.display(ImageDisplayContent(
                    phase: .failure, image: failureImage, showsActivityIndicator: false, transition: .none))
                completion?(.failure(error))
            })
    }

    /// The latest URL set on the view, by `imageURL` or `setImage(with:)`, loading or
    /// loaded; nil after a nil URL. Setting it is `setImage(with:)` with the view's own
    /// options (`imageDisplayOptions`): the placeholder or the view's first image and
    /// the activity indicator while loading, then the image faded in; the earlier
    /// load is cancelled, and the view only ever shows the latest URL's image, as
    /// AsyncImageView's `imageURL` ends on the newest URL. Nil cancels the load and
    /// clears the view.
    public var imageURL: URL? {
        get { imageTargetLoader.url(for: self) }
        set { setImage(with: newValue) }
    }

    /// Cancels the view's load; what it shows stays. The load delivers nothing, even
    /// if its image has already arrived and is on its way to the main actor.
    public func cancelImageLoad() {
        imageTargetLoader.cancelLoading(target: self)
    }
}
