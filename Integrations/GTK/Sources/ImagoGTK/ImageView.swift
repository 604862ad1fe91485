import Foundation
import Imago
import ImagoUI

/// An image view for GTK 4: what `UIImageView` with SDWebImage, or AsyncImageView's
/// `AsyncImageView`, is on iOS. Call `setImage(with:placeholder:options:completion:)`
/// (or set `imageURL`) and it shows the placeholder, a spinner while loading, and the
/// image crossfading in; animated GIF, PNG, WebP and AVIF images play at their frame
/// durations while the view is on screen, their frames decoded a few ahead of the
/// display by an `AnimationPlayer` (only the textures of the frames on screen are
/// kept), so a long animation costs what a few frames cost.
///
/// The widget is an `ImagoPicture` (see `ImagoPicture.register()`), and an
/// `ImageView` is its Swift face: what the view shows and loads lives with the
/// widget, so dropping the `ImageView` stops nothing while GTK holds the widget, and
/// `ImageView(picture:)` is the face of a picture made elsewhere (by GtkBuilder from
/// a `.ui` file, say). The view holds its widget, so a widget no container took
/// goes with its last face.
///
/// What to show is decided in Imago's shared code (`ImageLoadingState` and the target
/// loader): the widget only renders it. Loading and decoding run off the main thread;
/// results reach the view on the GLib main loop, through the main actor.
@MainActor
public final class ImageView {
    /// The widget to put in a window, a box, a list cell: an `ImagoPicture`.
    public let widget: UnsafeMutablePointer<GtkWidget>
    private let ownWidget: ObjectReference
    private let state: PictureState

    /// A view loading through `targetLoader`, fitting or filling its images as
    /// `contentMode` says, `width` × `height` points when given (else as big as its
    /// image, or as its parent allots).
    public convenience init(
        targetLoader: ImageTargetLoader = .shared, contentMode: TargetSize.ContentMode = .aspectFit,
        width: Int? = nil, height: Int? = nil
    ) {
        let picture = UnsafeMutableRawPointer(g_object_new_with_properties(ImagoPicture.register(), 0, nil, nil)!)
        self.init(picture: picture.assumingMemoryBound(to: GtkWidget.self))
        // The new widget's floating reference is the view's own until a container
        // takes the widget.
        g_object_ref_sink(picture)
        g_object_unref(picture)
        imageTargetLoader = targetLoader
        self.contentMode = contentMode
        if width != nil || height != nil {
            gtk_widget_set_size_request(widget, Int32(width ?? -1), Int32(height ?? -1))
        }
    }

    /// The face of `picture`, an `ImagoPicture` made elsewhere (from a `.ui` file,
    /// from C): the same widget, its loads and state.
    public init(picture: UnsafeMutablePointer<GtkWidget>) {
        let type = ImagoPicture.register()
        precondition(
            g_type_check_instance_is_a(UnsafeMutableRawPointer(picture).assumingMemoryBound(to: GTypeInstance.self), type) != 0,
            "ImageView(picture:) takes an ImagoPicture")
        widget = picture
        ownWidget = ObjectReference(retaining: picture.object)
        guard let state = PictureState.of(imago_picture_get_state(OpaquePointer(picture))) else {
            preconditionFailure("ImageView(picture:) takes a picture that is not disposed")
        }
        self.state = state
    }

    /// The loading view's state (indicator, crossfade), shared with the other
    /// platforms' views; its settings (`crossfadeDuration`, `showsActivityIndicator`)
    /// are the widget's.
    public var loadingState: ImageLoadingState { state.loadingState }

    /// The loader the widget's images come through (`ImageTargetLoader.shared` for a
    /// picture made outside Swift); a new one serves the next load.
    public var imageTargetLoader: ImageTargetLoader {
        get { state.imageTargetLoader }
        set { state.imageTargetLoader = newValue }
    }

    /// How the image fills the view, as `UIView.contentMode` has it: fitted whole
    /// (`.aspectFit`, the default), filling the view, cropped (`.aspectFill`), or
    /// stretched to it (`.scaleToFill`); the "content-fit" property as Imago's sizes
    /// name it. It also sets the size images are decoded to.
    public var contentMode: TargetSize.ContentMode {
        get { state.contentMode }
        set {
            state.contentFit =
                switch newValue {
                case .aspectFit: GTK_CONTENT_FIT_CONTAIN
                case .aspectFill: GTK_CONTENT_FIT_COVER
                case .scaleToFill: GTK_CONTENT_FIT_FILL
                }
        }
    }

    /// The "content-fit" property, GtkPicture's: fill, contain, cover or scale-down.
    public var contentFit: GtkContentFit {
        get { state.contentFit }
        set { state.contentFit = newValue }
    }

    /// The "alternative-text" property: what the image shows, the widget's
    /// accessible label.
    public var alternativeText: String? {
        get { imago_picture_get_alternative_text(state.picture).map { String(cString: $0) } }
        set { imago_picture_set_alternative_text(state.picture, newValue) }
    }

    /// The "placeholder-icon-name" property: the icon shown while there is no image.
    public var placeholderIconName: String? {
        get { imago_picture_get_placeholder_icon_name(state.picture).map { String(cString: $0) } }
        set { imago_picture_set_placeholder_icon_name(state.picture, newValue) }
    }

    /// Called after the view takes new content: for status lines, counters and tests.
    public var didDisplay: (@MainActor (ImageDisplayContent) -> Void)? {
        get { state.didDisplay }
        set { state.didDisplay = newValue }
    }

    /// Called when an animation moves to another frame, with the frame's index.
    public var didChangeFrame: (@MainActor (Int) -> Void)? {
        get { state.didChangeFrame }
        set { state.didChangeFrame = newValue }
    }

    /// Called when a load of the widget fails (not when it is cancelled), whoever
    /// started it: a `url` that is no URL is `.invalidURL`. The widget's
    /// "load-failed" signal tells GTK code the same, as a sentence.
    public var didFail: (@MainActor (ImagoError) -> Void)? {
        get { state.didFail }
        set { state.didFail = newValue }
    }

    /// The frame of the image shown (0 for a still image).
    public var frameIndex: Int { state.frameIndex }

    /// How many frame textures the view holds now: a few at most, however long the
    /// animation (for tests and memory accounting).
    public var heldFrameTextureCount: Int { state.heldFrameTextureCount }

    /// Loads `url` into the view, as `ImageDisplaying.setImage(with:placeholder:options:completion:)`
    /// does for every view (the earlier load cancelled, a memory hit shown before this
    /// returns, a nil URL showing the placeholder); the URL becomes the widget's "url"
    /// property. Returns the load's task; nil when nothing loads.
    @discardableResult
    public func setImage(
        with url: URL?, placeholder: DecodedImage? = nil, options: ImageDisplayOptions? = nil,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        state.load(url, placeholder: placeholder, options: options, completion: completion)
    }

    /// The "url" property, as a URL. Setting it loads with the view's own options
    /// (`imageDisplayOptions`), at the widget's size once it has one: a widget given
    /// its URL before its first layout waits for it rather than decoding the whole
    /// image. Setting the URL it already has changes nothing; nil clears the view.
    public var imageURL: URL? {
        get { state.url }
        set { imago_picture_set_url(state.picture, newValue.map { $0.isFileURL ? $0.path : $0.absoluteString }) }
    }

    /// Cancels the view's load; what it shows stays.
    public func cancelImageLoad() {
        state.cancelImageLoad()
    }

    /// Shows `content` as `ImageLoadingState` says: the image, the indicator (the
    /// spinner, a progress bar, or `customIndicator`), the crossfade from what was
    /// shown before, or a custom transition, handed this view and the function that
    /// puts the image up (none at all when GTK's "gtk-enable-animations" setting is
    /// off).
    public func display(_ content: ImageDisplayContent) {
        state.display(content)
    }

    /// The view's own indicator, shown while loading when `loadingState.indicator` is
    /// `.custom` (Kingfisher's custom `Indicator`): told when loading shows, how far it
    /// has come, and when it ends. Set with `setCustomIndicator(_:widget:)`.
    public var customIndicator: (any ImageLoadingIndicatorView)? { state.customIndicator?.indicator }

    /// Makes `indicator` the view's own (see `customIndicator`); `widget`, when given,
    /// is placed centred over the image while the indicator shows (a GtkLabel with
    /// a percentage, a GtkLevelBar); nil removes the indicator, and its widget.
    public func setCustomIndicator(_ indicator: (any ImageLoadingIndicatorView)?, widget: UnsafeMutablePointer<GtkWidget>? = nil) {
        state.setCustomIndicator(indicator, widget: widget)
    }

    /// The view's own crossfade and activity-indicator settings, from `loadingState`:
    /// what `imageURL` and a `setImage(with:)` without options load with.
    public var imageDisplayOptions: ImageDisplayOptions { state.imageDisplayOptions }

    /// The image shown; the view's first one is the placeholder of the loads that
    /// name none. Setting it shows the image at once, as `UIImageView.image` does.
    public var image: DecodedImage? {
        get { state.loadingState.image }
        set { display(ImageDisplayContent(phase: .empty, image: newValue, showsActivityIndicator: false, transition: .none)) }
    }

    /// The view's size in pixels (its allocation, else its size request, times the
    /// scale factor) with its content mode; nil while it has neither. A load that
    /// takes its size from here (one whose options name none) is asked for again
    /// when the view grows past that size, its scale factor or its content fit
    /// changes, so a view given its URL before its first layout shows its image at
    /// its real size. (The image is asked for again as a new load of the same URL: a
    /// completion handler of the earlier one, if it is still running, is told
    /// `.cancelled`.)
    public var displayTargetSize: TargetSize? { state.displayTargetSize }
}
