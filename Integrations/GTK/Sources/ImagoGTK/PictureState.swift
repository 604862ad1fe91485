import Foundation
import Imago
import ImagoUI

/// What one ImagoPicture does and shows: made when GObject makes the instance, held
/// by it and let go in its dispose, so loads go on for as long as the widget lives,
/// whoever holds the Swift side. It is the `ImageDisplaying` target of the widget's
/// loads; `ImageView`s are faces of it.
@MainActor
final class PictureState: ImageDisplaying {
    let picture: OpaquePointer
    let widget: UnsafeMutablePointer<GtkWidget>
    let loadingState: ImageLoadingState
    var imageTargetLoader: ImageTargetLoader = .shared
    var didDisplay: (@MainActor (ImageDisplayContent) -> Void)?
    var didChangeFrame: (@MainActor (Int) -> Void)?
    var didFail: (@MainActor (ImagoError) -> Void)?
    var frameIndex = 0
    var heldFrameTextureCount: Int { current?.textureCount ?? 0 }

    let spinner: UnsafeMutablePointer<GtkWidget>
    /// The determinate indicator (`ImageLoadingIndicator.progress`), filled as the
    /// bytes arrive.
    let progressBar: UnsafeMutablePointer<GtkWidget>
    /// The caller's own indicator (`ImageLoadingIndicator.custom`), told what to show,
    /// and the widget the picture places over the image for it, if any.
    var customIndicator: (indicator: any ImageLoadingIndicatorView, widget: ObjectReference?)?
    /// Counts what the view was given to show, so a custom transition that commits
    /// after a newer image (or none) was given puts nothing up.
    private var displayGeneration = 0
    var current: FrameTextures?
    /// The playback position shown, counting across loops.
    var position = 0
    /// The texture fading out during a crossfade.
    var previous: ObjectReference?
    var animation = AnimationClock()
    var tickID: UInt32 = 0
    var isMapped = false
    var isDetached = false
    /// The URL whose load took its size from the widget, and that size (nil when the
    /// widget had none yet): when the widget grows past it, or its scale changes, the
    /// image is asked for again at the new size.
    private var sizedLoad: (url: URL, size: TargetSize?)?
    /// A URL set through the "url" property before the widget had a size: loaded at
    /// its first allocation, never at full size first.
    private var pendingURL: URL?
    var isAllocated = false
    /// Whether a look at the new size is already queued.
    private var resizeQueued = false
    /// The size in pixels of the image shown, which the widget's natural size follows.
    var measuredImageSize: (width: Int, height: Int)?
    /// The placeholder icon, looked up once per name, size and scale.
    var icon: (key: String, paintable: ObjectReference)?
    /// The placeholder paintable whose changes redraw the widget, and its handlers.
    private var watchedPlaceholder: (paintable: ObjectReference, handlers: [UInt])?

    /// The state of `picture` (an ImagoPicture being made).
    init(_ picture: OpaquePointer) {
        self.picture = picture
        widget = UnsafeMutablePointer(picture)
        loadingState = ImageLoadingState(now: monotonicSeconds)
        // A GtkSpinner, so the loading indicator is the theme's and follows the
        // animation setting as every spinner does.
        spinner = gtk_spinner_new()
        gtk_widget_set_parent(spinner, widget)
        gtk_widget_set_visible(spinner, 0)
        progressBar = gtk_progress_bar_new()
        gtk_widget_set_parent(progressBar, widget)
        gtk_widget_set_visible(progressBar, 0)
        gtk_widget_set_overflow(widget, GTK_OVERFLOW_HIDDEN)
        let handle = WeakPictureState(self)
        connectSignal(widget.object, "notify::scale-factor") { _ in handle.state?.sizeChanged() }
    }

    /// The state behind an ImagoPicture's state pointer.
    static func of(_ pointer: UnsafeMutableRawPointer?) -> PictureState? {
        pointer.map { Unmanaged<PictureState>.fromOpaque($0).takeUnretainedValue() }
    }

    /// The widget is being disposed: its loads stop, its children and callbacks go.
    func detach() {
        isDetached = true
        cancelImageLoad()
        pendingURL = nil
        if tickID != 0 {
            gtk_widget_remove_tick_callback(widget, tickID)
            tickID = 0
        }
        gtk_widget_unparent(spinner)
        gtk_widget_unparent(progressBar)
        setCustomIndicator(nil, widget: nil)
        unwatchPlaceholder()
        current = nil
        previous = nil
        icon = nil
    }

    // MARK: - Properties

    var contentFit: GtkContentFit {
        get { imago_picture_get_content_fit(picture) }
        set { imago_picture_set_content_fit(picture, newValue) }
    }

    /// The decoding box's content mode for the widget's content fit: "scale-down"
    /// decodes as "contain" does (Imago never enlarges), "fill" covers the box
    /// uncropped, to be stretched to its shape.
    var contentMode: TargetSize.ContentMode {
        switch contentFit {
        case GTK_CONTENT_FIT_COVER: .aspectFill
        case GTK_CONTENT_FIT_FILL: .scaleToFill
        default: .aspectFit
        }
    }

    /// The URL the "url" property names: an absolute path is a file.
    var url: URL? {
        guard let string = imago_picture_get_url(picture).map({ String(cString: $0) }) else { return nil }
        return string.hasPrefix("/") ? URL(fileURLWithPath: string) : URL(string: string)
    }

    func propertyChanged(_ property: ImagoPictureProperty) {
        switch property {
        case IMAGO_PICTURE_PROP_URL:
            loadURLProperty()
        case IMAGO_PICTURE_PROP_CONTENT_FIT:
            gtk_widget_queue_draw(widget)
            sizeChanged()
        case IMAGO_PICTURE_PROP_ALTERNATIVE_TEXT:
            updateAccessibleLabel()
        case IMAGO_PICTURE_PROP_PLACEHOLDER_PAINTABLE:
            watchPlaceholder()
            gtk_widget_queue_resize(widget)
        default:
            icon = nil
            gtk_widget_queue_draw(widget)
        }
    }

    /// Loads the "url" property's URL with the widget's own options: at the widget's
    /// size once it has one, so a widget given its URL before its first layout (from
    /// a `.ui` file, say) waits for it rather than decoding the image whole.
    private func loadURLProperty() {
        guard !isDetached else { return }
        guard let string = imago_picture_get_url(picture).map({ String(cString: $0) }) else {
            pendingURL = nil
            start(nil)
            return
        }
        guard let url else {
            // Not a URL: nothing can load, the placeholder stays.
            pendingURL = nil
            cancelImageLoad()
            display(ImageDisplayContent(phase: .failure, image: nil, showsActivityIndicator: false, transition: .none))
            failed(.invalidURL(string))
            return
        }
        if !hasSize {
            cancelImageLoad()
            pendingURL = url
            display(ImageDisplayContent(
                phase: .loading, image: nil, showsActivityIndicator: imageDisplayOptions.showsActivityIndicator,
                transition: .none))
            return
        }
        pendingURL = nil
        start(url)
    }

    /// A load asked for in Swift (`ImageView.setImage(with:)`): its URL becomes the
    /// "url" property, without a second load.
    @discardableResult
    func load(
        _ url: URL?, placeholder: DecodedImage?, options: ImageDisplayOptions?,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)?
    ) -> ImageTask? {
        // A disposed widget loads nothing more; its faces may still be held.
        guard !isDetached else { return nil }
        pendingURL = nil
        imago_picture_store_url(picture, url.map { $0.isFileURL ? $0.path : $0.absoluteString })
        return start(url, placeholder: placeholder, options: options, completion: completion)
    }

    /// Every load of the widget: `setImage(with:)`, telling of a failure as well
    /// as `completion`.
    @discardableResult
    private func start(
        _ url: URL?, placeholder: DecodedImage? = nil, options: ImageDisplayOptions? = nil,
        completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)? = nil
    ) -> ImageTask? {
        recordSizedLoad(of: url, options: options)
        let handle = WeakPictureState(self)
        return setImage(with: url, placeholder: placeholder, options: options) { result in
            if case .failure(let error) = result {
                if case .cancelled = error {} else { handle.state?.failed(error) }
            }
            completion?(result)
        }
    }

    /// Remembers the size a load of `url` takes from the widget, when its options name
    /// none: a widget that grows past it, or whose scale changes, asks again.
    private func recordSizedLoad(of url: URL?, options: ImageDisplayOptions?) {
        guard let url, (options ?? imageDisplayOptions).targetSize == nil else {
            sizedLoad = nil
            return
        }
        sizedLoad = (url, displayTargetSize)
    }

    /// Tells of a failed load: `didFail`, then the "load-failed" signal.
    private func failed(_ error: ImagoError) {
        didFail?(error)
        imago_picture_emit_load_failed(picture, String(describing: error))
    }

    /// A placeholder that changes (an animation, a media stream) redraws or resizes
    /// the widget, as GtkPicture's paintable does.
    private func watchPlaceholder() {
        unwatchPlaceholder()
        guard let placeholder = imago_picture_get_placeholder_paintable(picture) else { return }
        let paintable = ObjectReference(retaining: UnsafeMutableRawPointer(placeholder))
        let handle = WeakPictureState(self)
        let redraw = connectSignal(paintable.pointer, "invalidate-contents") { _ in
            handle.state.map { gtk_widget_queue_draw($0.widget) }
        }
        let resize = connectSignal(paintable.pointer, "invalidate-size") { _ in
            handle.state.map { gtk_widget_queue_resize($0.widget) }
        }
        watchedPlaceholder = (paintable, [redraw, resize])
    }

    private func unwatchPlaceholder() {
        guard let watched = watchedPlaceholder else { return }
        for handler in watched.handlers { g_signal_handler_disconnect(watched.paintable.pointer, gulong(handler)) }
        watchedPlaceholder = nil
    }

    private func updateAccessibleLabel() {
        let accessible = OpaquePointer(widget)
        guard let text = imago_picture_get_alternative_text(picture) else {
            gtk_accessible_reset_property(accessible, GTK_ACCESSIBLE_PROPERTY_LABEL)
            return
        }
        var value = GValue()
        g_value_init(&value, g_type_from_name("gchararray"))
        g_value_set_string(&value, text)
        var property = GTK_ACCESSIBLE_PROPERTY_LABEL
        gtk_accessible_update_property_value(accessible, 1, &property, &value)
        g_value_unset(&value)
    }

    /// GTK's "gtk-enable-animations" setting: off, images appear at once.
    private var animationsEnabled: Bool {
        guard let settings = gtk_widget_get_settings(widget) else { return true }
        var value = GValue()
        g_value_init(&value, g_type_from_name("gboolean"))
        defer { g_value_unset(&value) }
        g_object_get_property(UnsafeMutablePointer(settings), "gtk-enable-animations", &value)
        return g_value_get_boolean(&value) != 0
    }

    // MARK: - ImageDisplaying

    func display(_ content: ImageDisplayContent) {
        guard !isDetached else { return }
        var content = content
        if content.transition != .none, !animationsEnabled {
            content = ImageDisplayContent(
                phase: content.phase, image: content.image, indicator: content.indicator, progress: content.progress,
                transition: .none)
        }
        displayGeneration += 1
        if content.phase == .success, case .custom(let custom) = content.transition {
            // The caller's animation puts the image up when it calls `commit`; until
            // then what was shown stays, without the indicator. A commit after the
            // view was given something newer puts nothing up.
            loadingState.endLoading()
            render()
            let generation = displayGeneration
            custom.animate(ImageView(picture: widget)) { [weak self] in
                guard let self, self.displayGeneration == generation else { return }
                self.display(ImageDisplayContent(phase: .success, image: content.image, transition: .none))
            }
            return
        }
        let shownBefore = current
        let positionBefore = position
        loadingState.apply(content)
        let identity = loadingState.image?.bitmap.storageIdentity
        if identity != current?.identity {
            current = loadingState.image.map(FrameTextures.init)
            frameIndex = 0
            position = 0
            animation = AnimationClock()
        }
        if let previousImage = loadingState.previousImage, loadingState.isCrossfading,
            previousImage.bitmap.storageIdentity == shownBefore?.identity, let shownBefore
        {
            // The texture fading out is the frame that was on screen.
            replacePrevious(with: shownBefore.texture(at: positionBefore))
        } else if !loadingState.isCrossfading {
            replacePrevious(with: nil)
        }
        let size = loadingState.image.map { (width: $0.width, height: $0.height) }
        if size?.width != measuredImageSize?.width || size?.height != measuredImageSize?.height {
            measuredImageSize = size
            gtk_widget_queue_resize(widget)
        }
        render()
        updateTicking()
        didDisplay?(content)
    }

    var imageDisplayOptions: ImageDisplayOptions { loadingState.displayOptions }

    /// Makes `indicator` the view's own (`ImageLoadingIndicator.custom`), placing
    /// `widget`, when given, centred over the image while it shows.
    func setCustomIndicator(_ indicator: (any ImageLoadingIndicatorView)?, widget newWidget: UnsafeMutablePointer<GtkWidget>?) {
        if let old = customIndicator?.widget {
            gtk_widget_unparent(old.pointer.assumingMemoryBound(to: GtkWidget.self))
        }
        customIndicator = indicator.map { indicator in
            (indicator, newWidget.map { ObjectReference(retaining: UnsafeMutableRawPointer($0)) })
        }
        if let newWidget, indicator != nil, !isDetached {
            gtk_widget_set_parent(newWidget, widget)
            gtk_widget_set_visible(newWidget, 0)
        }
        if !isDetached { render() }
    }

    var displayedImage: DecodedImage? { loadingState.image }

    func imageLoadDidCancel() {
        loadingState.endLoading()
        render()
    }

    /// The widget's allocation, else its size request, in pixels, with its content
    /// mode; nil while it has neither. Reading it changes nothing (`ImageView` hands
    /// it out): `start` remembers the loads sized by it, since only it knows which are.
    var displayTargetSize: TargetSize? {
        var width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget)
        if width <= 0 || height <= 0 {
            gtk_widget_get_size_request(widget, &width, &height)
        }
        guard width > 0, height > 0 else { return nil }
        return TargetSize(
            points: Double(width), Double(height), scale: Double(gtk_widget_get_scale_factor(widget)),
            contentMode: contentMode)
    }

    /// Whether a load can take its size from the widget: it has been allocated, or
    /// has a size request.
    private var hasSize: Bool { isAllocated || displayTargetSize != nil }

    /// Told during layout: the new size is looked at once the layout is over, since
    /// showing another image queues a layout of its own.
    func sizeChanged() {
        guard sizedLoad != nil || pendingURL != nil, !resizeQueued else { return }
        resizeQueued = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let self, !self.isDetached else { return }
                self.resizeQueued = false
                if let url = self.pendingURL {
                    // A change of content fit before the first layout looks here too:
                    // the URL waits for a size, or the whole image would be decoded.
                    guard self.hasSize else { return }
                    self.pendingURL = nil
                    self.start(url)
                } else {
                    self.askAgainIfGrown()
                }
            }
        }
    }

    private func askAgainIfGrown() {
        guard let sizedLoad, sizedLoad.url == imageURL, let size = displayTargetSize else { return }
        // In pixels: a larger scale factor is a larger size. A widget that shrank keeps
        // its sharper image; one whose content fit changed asks for the box it needs.
        if let asked = sizedLoad.size, asked.width >= size.width, asked.height >= size.height,
            asked.contentMode == size.contentMode
        {
            return
        }
        // What is shown stays until the sharper image replaces it, with no spinner.
        var options = imageDisplayOptions
        if loadingState.image != nil { options.showsActivityIndicator = false }
        start(sizedLoad.url, placeholder: loadingState.image, options: options)
    }
}
