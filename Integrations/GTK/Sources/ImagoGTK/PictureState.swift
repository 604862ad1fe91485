import Foundation
import Imago
import ImagoUI

/// The ImagoPicture widget type, registered with the GObject type system: a GTK 4
/// widget that GtkBuilder, C and every language with GObject bindings can make and
/// drive through its properties ("url", "content-fit", "alternative-text",
/// "placeholder-icon-name", "placeholder-paintable"). `ImageView` is its Swift face.
public enum ImagoPicture {
    /// Registers the type and installs its behaviour; returns the type. Call it
    /// before GtkBuilder parses a `.ui` file naming `ImagoPicture` (making an
    /// `ImageView` calls it too). Idempotent; main thread only.
    @MainActor @discardableResult
    public static func register() -> GType {
        attachMainActorToGLib()
        var behaviour = ImagoPictureBehaviour(
            init: { instance in
                // Pointers GTK hands over on the main thread, used there.
                guard let instance else { return nil }
                nonisolated(unsafe) let picture = instance
                nonisolated(unsafe) var state: UnsafeMutableRawPointer?
                MainActor.assumeIsolated { state = Unmanaged.passRetained(PictureState(picture)).toOpaque() }
                return state
            },
            dispose: { _, state in
                guard let state else { return }
                MainActor.assumeIsolated { Unmanaged<PictureState>.fromOpaque(state).takeRetainedValue().detach() }
            },
            property_changed: { state, property in
                MainActor.assumeIsolated { PictureState.of(state)?.propertyChanged(property) }
            },
            measure: { state, orientation, forSize, minimum, natural in
                MainActor.assumeIsolated {
                    PictureState.of(state)?.measure(orientation, forSize: forSize, minimum: minimum, natural: natural)
                }
            },
            size_allocate: { state, width, height in
                MainActor.assumeIsolated { PictureState.of(state)?.allocate(width: width, height: height) }
            },
            snapshot: { state, snapshot in
                guard let snapshot else { return }
                nonisolated(unsafe) let target = snapshot
                MainActor.assumeIsolated { PictureState.of(state)?.snapshot(target) }
            },
            mapping_changed: { state, mapped in
                MainActor.assumeIsolated { PictureState.of(state)?.mappingChanged(mapped != 0) }
            })
        return imago_picture_install(&behaviour)
    }
}

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
    private(set) var frameIndex = 0
    var heldFrameTextureCount: Int { current?.textureCount ?? 0 }

    private let spinner: UnsafeMutablePointer<GtkWidget>
    private var current: FrameTextures?
    /// The playback position shown, counting across loops.
    private var position = 0
    /// The texture fading out during a crossfade.
    private var previous: ObjectReference?
    private var animation = AnimationClock()
    private var tickID: UInt32 = 0
    private var isMapped = false
    private var isDetached = false
    /// The URL whose load took its size from the widget, and that size (nil when the
    /// widget had none yet): when the widget grows past it, or its scale changes, the
    /// image is asked for again at the new size.
    private var sizedLoad: (url: URL?, size: TargetSize?)?
    /// A URL set through the "url" property before the widget had a size: loaded at
    /// its first allocation, never at full size first.
    private var pendingURL: URL?
    private var isAllocated = false
    /// Whether a look at the new size is already queued.
    private var resizeQueued = false
    /// The size in pixels of the image shown, which the widget's natural size follows.
    private var measuredImageSize: (width: Int, height: Int)?
    /// The placeholder icon, looked up once per name, size and scale.
    private var icon: (key: String, paintable: ObjectReference)?
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
        if !isAllocated, currentTargetSize == nil {
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
        let handle = WeakPictureState(self)
        return setImage(with: url, placeholder: placeholder, options: options) { result in
            if case .failure(let error) = result {
                if case .cancelled = error {} else { handle.state?.failed(error) }
            }
            completion?(result)
        }
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
                phase: content.phase, image: content.image, showsActivityIndicator: content.showsActivityIndicator,
                transition: .none)
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

    var displayedImage: DecodedImage? { loadingState.image }

    func imageLoadDidCancel() {
        loadingState.endLoading()
        render()
    }

    var displayTargetSize: TargetSize? {
        let size = currentTargetSize
        sizedLoad = (imageTargetLoader.url(for: self), size)
        return size
    }

    private var currentTargetSize: TargetSize? {
        var width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget)
        if width <= 0 || height <= 0 {
            gtk_widget_get_size_request(widget, &width, &height)
        }
        guard width > 0, height > 0 else { return nil }
        return TargetSize(
            points: Double(width), Double(height), scale: Double(gtk_widget_get_scale_factor(widget)),
            contentMode: contentMode)
    }

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
                    self.pendingURL = nil
                    self.start(url)
                } else {
                    self.askAgainIfGrown()
                }
            }
        }
    }

    private func askAgainIfGrown() {
        guard let sizedLoad, let url = sizedLoad.url, url == imageURL, let size = currentTargetSize else { return }
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
        start(url, placeholder: loadingState.image, options: options)
    }

    // MARK: - Layout and drawing

    func measure(
        _ orientation: GtkOrientation, forSize: Int32, minimum: UnsafeMutablePointer<Int32>?,
        natural: UnsafeMutablePointer<Int32>?
    ) {
        minimum?.pointee = 0
        // Its natural size is the image's, in points: it was decoded for this scale.
        let scale = Double(max(1, gtk_widget_get_scale_factor(widget)))
        var width = 0.0, height = 0.0
        if let measuredImageSize {
            (width, height) = (Double(measuredImageSize.width) / scale, Double(measuredImageSize.height) / scale)
        } else if let placeholder = imago_picture_get_placeholder_paintable(picture) {
            (width, height) = (
                Double(gdk_paintable_get_intrinsic_width(placeholder)), Double(gdk_paintable_get_intrinsic_height(placeholder))
            )
        }
        let horizontal = orientation == GTK_ORIENTATION_HORIZONTAL
        var size = horizontal ? width : height
        if forSize >= 0, width > 0, height > 0 {
            size = horizontal ? Double(forSize) * width / height : Double(forSize) * height / width
        }
        natural?.pointee = Int32(size.rounded(.up))
    }

    func allocate(width: Int32, height: Int32) {
        // The spinner, measured as GTK wants before allocating, sits in the middle.
        var minimumWidth: Int32 = 0, minimumHeight: Int32 = 0
        gtk_widget_measure(spinner, GTK_ORIENTATION_HORIZONTAL, -1, &minimumWidth, nil, nil, nil)
        gtk_widget_measure(spinner, GTK_ORIENTATION_VERTICAL, -1, &minimumHeight, nil, nil, nil)
        let side = max(min(24, width, height), minimumWidth, minimumHeight)
        var box = GtkAllocation(x: (width - side) / 2, y: (height - side) / 2, width: side, height: side)
        gtk_widget_size_allocate(spinner, &box, -1)
        isAllocated = true
        sizeChanged()
    }

    func snapshot(_ snapshot: OpaquePointer) {
        let width = Double(gtk_widget_get_width(widget)), height = Double(gtk_widget_get_height(widget))
        guard width > 0, height > 0 else { return }
        var bounds = graphene_rect_t()
        graphene_rect_init(&bounds, 0, 0, Float(width), Float(height))
        gtk_snapshot_push_clip(snapshot, &bounds)
        let crossfading = loadingState.isCrossfading
        let front = current?.texture(at: position)
        if crossfading, let previous {
            draw(texture: OpaquePointer(previous.pointer), in: snapshot, width: width, height: height)
        } else if front == nil || crossfading {
            drawPlaceholder(in: snapshot, width: width, height: height)
        }
        if let front {
            if crossfading { gtk_snapshot_push_opacity(snapshot, loadingState.crossfadeProgress) }
            draw(texture: front, in: snapshot, width: width, height: height)
            if crossfading { gtk_snapshot_pop(snapshot) }
        }
        gtk_snapshot_pop(snapshot)
        gtk_widget_snapshot_child(widget, spinner, snapshot)
    }

    private func draw(texture: OpaquePointer, in snapshot: OpaquePointer, width: Double, height: Double) {
        let scale = Double(max(1, gtk_widget_get_scale_factor(widget)))
        draw(
            texture, intrinsicWidth: Double(gdk_texture_get_width(texture)) / scale,
            intrinsicHeight: Double(gdk_texture_get_height(texture)) / scale, in: snapshot, width: width,
            height: height)
    }

    /// The placeholder paintable, fitted as an image would be; else the placeholder
    /// icon, at most 48 points, in the middle.
    private func drawPlaceholder(in snapshot: OpaquePointer, width: Double, height: Double) {
        if let placeholder = imago_picture_get_placeholder_paintable(picture) {
            draw(
                placeholder, intrinsicWidth: Double(gdk_paintable_get_intrinsic_width(placeholder)),
                intrinsicHeight: Double(gdk_paintable_get_intrinsic_height(placeholder)), in: snapshot, width: width,
                height: height)
            return
        }
        guard let name = imago_picture_get_placeholder_icon_name(picture).map({ String(cString: $0) }) else { return }
        let side = Int32(min(48, width, height))
        let scale = gtk_widget_get_scale_factor(widget)
        let key = "\(name) \(side) \(scale)"
        if icon?.key != key {
            let theme = gtk_icon_theme_get_for_display(gtk_widget_get_display(widget))
            guard let found = gtk_icon_theme_lookup_icon(
                theme, name, nil, side, scale, gtk_widget_get_direction(widget), GtkIconLookupFlags(rawValue: 0))
            else { return }
            icon = (key, ObjectReference(taking: UnsafeMutableRawPointer(found)))
        }
        guard let icon else { return }
        gtk_snapshot_save(snapshot)
        var origin = graphene_point_t(x: Float((width - Double(side)) / 2), y: Float((height - Double(side)) / 2))
        gtk_snapshot_translate(snapshot, &origin)
        gdk_paintable_snapshot(OpaquePointer(icon.paintable.pointer), snapshot, Double(side), Double(side))
        gtk_snapshot_restore(snapshot)
    }

    /// Draws `paintable` as the content fit says, centred: stretched to the box
    /// ("fill"), whole inside it ("contain"), covering it ("cover", cropped by the
    /// clip), or whole at no more than its own size ("scale-down"). One without an
    /// intrinsic size fills the box.
    private func draw(
        _ paintable: OpaquePointer, intrinsicWidth: Double, intrinsicHeight: Double, in snapshot: OpaquePointer,
        width: Double, height: Double
    ) {
        var drawnWidth = width, drawnHeight = height
        if intrinsicWidth > 0, intrinsicHeight > 0, contentFit != GTK_CONTENT_FIT_FILL {
            let fit = min(width / intrinsicWidth, height / intrinsicHeight)
            let factor: Double =
                switch contentFit {
                case GTK_CONTENT_FIT_COVER: max(width / intrinsicWidth, height / intrinsicHeight)
                case GTK_CONTENT_FIT_SCALE_DOWN: min(1, fit)
                default: fit
                }
            drawnWidth = intrinsicWidth * factor
            drawnHeight = intrinsicHeight * factor
        }
        gtk_snapshot_save(snapshot)
        var origin = graphene_point_t(x: Float((width - drawnWidth) / 2), y: Float((height - drawnHeight) / 2))
        gtk_snapshot_translate(snapshot, &origin)
        gdk_paintable_snapshot(paintable, snapshot, drawnWidth, drawnHeight)
        gtk_snapshot_restore(snapshot)
    }

    /// Shows the spinner as the loading state says and redraws.
    private func render() {
        guard !isDetached else { return }
        if !loadingState.isCrossfading { replacePrevious(with: nil) }
        let spins = loadingState.isActivityIndicatorVisible
        gtk_widget_set_visible(spinner, spins ? 1 : 0)
        gtk_spinner_set_spinning(OpaquePointer(spinner), spins ? 1 : 0)
        gtk_widget_queue_draw(widget)
    }

    private func replacePrevious(with texture: OpaquePointer?) {
        previous = texture.map { ObjectReference(retaining: UnsafeMutableRawPointer($0)) }
    }

    // MARK: - Frames: crossfades and animations advance on the frame clock

    private var isAnimating: Bool {
        guard let current, current.image.isAnimated else { return false }
        return !animation.isFinished(current)
    }

    func mappingChanged(_ mapped: Bool) {
        isMapped = mapped
        // Unmapped, the animation holds its place and resumes from it.
        if !mapped { animation.pause() }
        render()
        updateTicking()
    }

    private func updateTicking() {
        let needed = isMapped && (loadingState.isCrossfading || isAnimating)
        if needed, tickID == 0 {
            let handle = WeakPictureState(self)
            tickID = addTickCallback(to: widget) { time in handle.state?.tick(at: time) ?? false }
        } else if !needed, tickID != 0 {
            gtk_widget_remove_tick_callback(widget, tickID)
            tickID = 0
        }
    }

    /// One frame of the frame clock; returns whether more frames are wanted.
    private func tick(at time: Double) -> Bool {
        if let current, current.image.isAnimated {
            let wanted = animation.position(of: current, at: time)
            // A frame not decoded yet leaves the one shown on screen until it is.
            if wanted != position, current.texture(at: wanted) != nil {
                position = wanted
                frameIndex = wanted % current.image.frameCount
                didChangeFrame?(frameIndex)
            }
        }
        render()
        let goOn = isMapped && (loadingState.isCrossfading || isAnimating)
        if !goOn { tickID = 0 }
        return goOn
    }
}

/// What GTK's callbacks hold: the state, weakly, so a callback outliving it calls
/// nothing.
///
/// `@unchecked Sendable`: GTK calls back on the main thread only, where it is read.
private final class WeakPictureState: @unchecked Sendable {
    weak var state: PictureState?
    init(_ state: PictureState) { self.state = state }
}

/// Where an animation stands: the time played so far, kept across pauses, so a view
/// that leaves the screen resumes where it was.
struct AnimationClock {
    /// Seconds played before the latest resumption.
    private var played = 0.0
    /// When playing resumed, on the frame clock; nil while paused.
    private var resumed: Double?
    private var lastTime = 0.0

    /// GIFs with no delay, or a delay of 10 ms or less, are shown for 100 ms, as
    /// browsers do: such files rely on it.
    static func duration(_ seconds: Double) -> Double {
        seconds <= 0.01 ? 0.1 : seconds
    }

    mutating func pause() {
        if let resumed { played += max(0, lastTime - resumed) }
        resumed = nil
    }

    /// The playback position to show at `time` (seconds on the frame clock),
    /// counting frames across loops; the last frame once a finite animation is done.
    fileprivate mutating func position(of frames: FrameTextures, at time: Double) -> Int {
        if resumed == nil { resumed = time }
        lastTime = time
        let elapsed = played + (time - (resumed ?? time))
        let count = frames.durations.count, total = frames.totalDuration
        let loops = frames.image.loopCount
        if loops > 0, elapsed >= total * Double(loops) { return loops * count - 1 }
        let loop = Int(elapsed / total)
        var t = elapsed - Double(loop) * total
        for (index, duration) in frames.durations.enumerated() {
            t -= duration
            if t < 0 { return loop * count + index }
        }
        return loop * count + count - 1
    }

    /// Whether a finite animation has played all its loops.
    fileprivate func isFinished(_ frames: FrameTextures) -> Bool {
        guard frames.image.loopCount > 0 else { return false }
        return played + (resumed.map { lastTime - $0 } ?? 0) >= frames.totalDuration * Double(frames.image.loopCount)
    }
}

/// The textures of one image's frames: for an animation, those of the few frames
/// around the one on screen, made from an `AnimationPlayer`'s bounded buffer; frames
/// already shown are let go.
private final class FrameTextures {
    /// Textures kept at most: the frame on screen and the few decoded after it.
    static let maximumTextures = 3

    let image: DecodedImage
    let identity: UnsafeRawPointer?
    let durations: [Double]
    let totalDuration: Double
    private let player: AnimationPlayer?
    /// Textures by playback position.
    private var textures: [Int: OpaquePointer] = [:]

    init(_ image: DecodedImage) {
        self.image = image
        identity = image.bitmap.storageIdentity
        durations = image.frameDurations.map(AnimationClock.duration)
        totalDuration = durations.reduce(0, +)
        player = image.isAnimated ? AnimationPlayer(image) : nil
    }

    deinit {
        for texture in textures.values { g_object_unref(UnsafeMutableRawPointer(texture)) }
    }

    var textureCount: Int { textures.count }

    /// The texture of the frame at `position`, or nil while it is being decoded.
    /// Textures of earlier positions are released (a crossfade holds its own
    /// reference to the one fading out).
    func texture(at position: Int) -> OpaquePointer? {
        if let texture = textures[position] { return texture }
        let bitmap: Bitmap
        if let player {
            guard let frame = player.frame(at: position) ?? (position == 0 ? image.firstFrame : nil) else { return nil }
            bitmap = frame.bitmap
        } else {
            bitmap = image.bitmap
        }
        for (key, texture) in textures where key < position || textures.count >= Self.maximumTextures {
            g_object_unref(UnsafeMutableRawPointer(texture))
            textures[key] = nil
        }
        let texture = bitmap.makeTexture()
        textures[position] = texture
        return texture
    }
}


