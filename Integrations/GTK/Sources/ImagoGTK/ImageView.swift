import Foundation
import Imago

/// An image view for GTK 4: what `UIImageView` with SDWebImage, or AsyncImageView's
/// `AsyncImageView`, is on iOS. Call `setImage(with:placeholder:options:completion:)`
/// (or set `imageURL`) and it shows the placeholder, a spinner while loading, and the
/// image crossfading in; animated GIF, PNG, WebP and AVIF images play at their frame
/// durations while the view is on screen, their frames decoded a few ahead of the
/// display by an `AnimationPlayer` (only the textures of the frames on screen are
/// kept), so a long animation costs what a few frames cost.
///
/// What to show is decided in Imago's shared code (`ImageLoadingState` and the target
/// loader): this class only renders it. Loading and decoding run off the main thread;
/// results reach the view on the GLib main loop, through the main actor.
///
/// The GTK widget is `widget`; keep the `ImageView` for as long as its widget is in
/// use (a widget whose `ImageView` has gone keeps its last picture and loads nothing).
@MainActor
public final class ImageView: ImageDisplaying {
    /// The widget to put in a window, a box, a list cell.
    public let widget: UnsafeMutablePointer<GtkWidget>
    /// The loading view's state (indicator, crossfade), shared with the other
    /// platforms' views; its settings (`crossfadeDuration`, `showsActivityIndicator`)
    /// are the view's.
    public let loadingState: ImageLoadingState
    /// The loader the view's images come through.
    public let imageTargetLoader: ImageTargetLoader
    /// How the image fills the view, as `UIView.contentMode` has it: fitted whole
    /// (`.aspectFit`, the default) or filling the view, cropped (`.aspectFill`). It
    /// also sets the size images are decoded to.
    public var contentMode: TargetSize.ContentMode {
        didSet { applyContentMode() }
    }
    /// Called after the view takes new content: for status lines, counters and tests.
    public var didDisplay: (@MainActor (ImageDisplayContent) -> Void)?
    /// Called when an animation moves to another frame, with the frame's index.
    public var didChangeFrame: (@MainActor (Int) -> Void)?
    /// The frame of the image shown (0 for a still image).
    public private(set) var frameIndex = 0
    /// How many frame textures the view holds now: a few at most, however long the
    /// animation (for tests and memory accounting).
    public var heldFrameTextureCount: Int { current?.textureCount ?? 0 }

    private let back: UnsafeMutablePointer<GtkWidget>
    private let front: UnsafeMutablePointer<GtkWidget>
    private let spinner: UnsafeMutablePointer<GtkWidget>
    /// The view's own reference to its widget, dropped with the view.
    private let ownWidget: ObjectReference
    private var current: FrameTextures?
    /// The playback position shown, counting across loops.
    private var position = 0
    /// The picture fading out during a crossfade.
    private var previous: ObjectReference?
    private var animation = AnimationClock()
    private var tickID: UInt32 = 0
    private var isMapped = false
    /// The URL whose load took its size from the view, and that size (nil when the
    /// view had none yet): when the view grows past it, or its scale changes, the
    /// image is asked for again at the new size.
    private var sizedLoad: (url: URL?, size: TargetSize?)?
    /// Whether a look at the new size is already queued.
    private var resizeQueued = false

    /// A view loading through `targetLoader`, fitting or filling its images as
    /// `contentMode` says, `width` × `height` pixels when given (else as big as its
    /// image, or as its parent allots).
    public init(
        targetLoader: ImageTargetLoader = .shared, contentMode: TargetSize.ContentMode = .aspectFit,
        width: Int? = nil, height: Int? = nil
    ) {
        attachMainActorToGLib()
        imageTargetLoader = targetLoader
        self.contentMode = contentMode
        loadingState = ImageLoadingState(now: monotonicSeconds)

        let overlay = gtk_overlay_new()!
        back = gtk_picture_new()
        front = gtk_picture_new()
        spinner = gtk_spinner_new()
        widget = overlay
        ownWidget = ObjectReference(taking: g_object_ref_sink(overlay.object))
        gtk_overlay_set_child(overlay.opaque, back)
        gtk_overlay_add_overlay(overlay.opaque, front)
        // The picture on top gives the view its natural size; the one below only ever
        // shows an image fading out.
        gtk_overlay_set_measure_overlay(overlay.opaque, front, 1)
        gtk_overlay_add_overlay(overlay.opaque, spinner)
        // A drawing area draws nothing: it is there for its resize signal, which tells
        // the view its allocation changed (GTK 4 widgets have no such signal of their own).
        let sizeProbe = gtk_drawing_area_new()!
        gtk_widget_set_can_target(sizeProbe, 0)
        gtk_overlay_add_overlay(overlay.opaque, sizeProbe)
        gtk_widget_set_halign(spinner, GTK_ALIGN_CENTER)
        gtk_widget_set_valign(spinner, GTK_ALIGN_CENTER)
        gtk_widget_set_size_request(spinner, 24, 24)
        gtk_widget_set_visible(spinner, 0)
        // A filled image is larger than the view: what sticks out must not draw over
        // the neighbours.
        gtk_widget_set_overflow(overlay, GTK_OVERFLOW_HIDDEN)
        for picture in [back, front] {
            gtk_picture_set_can_shrink(picture.opaque, 1)
            gtk_widget_set_can_target(picture, 0)
        }
        if width != nil || height != nil {
            gtk_widget_set_size_request(overlay, Int32(width ?? -1), Int32(height ?? -1))
        }
        applyContentMode()

        let handle = WeakImageView(self)
        connectSignal(overlay.object, "map") { _ in handle.view?.mappingChanged(true) }
        connectSignal(overlay.object, "unmap") { _ in handle.view?.mappingChanged(false) }
        connectSignal(sizeProbe.object, "resize") { _ in handle.view?.sizeChanged() }
        connectSignal(overlay.object, "notify::scale-factor") { _ in handle.view?.sizeChanged() }
    }

    // MARK: - ImageDisplaying

    /// Shows `content` as `ImageLoadingState` says: the image, the spinner, the
    /// crossfade from what was shown before.
    public func display(_ content: ImageDisplayContent) {
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
            // The picture fading out is the frame that was on screen.
            replacePrevious(with: shownBefore.texture(at: positionBefore))
        } else if !loadingState.isCrossfading {
            replacePrevious(with: nil)
        }
        render()
        updateTicking()
        didDisplay?(content)
    }

    /// The view's own crossfade and activity-indicator settings, from `loadingState`:
    /// what `imageURL` and a `setImage(with:)` without options load with.
    public var imageDisplayOptions: ImageDisplayOptions { loadingState.displayOptions }

    /// The image shown; the view's first one is the placeholder of the loads that
    /// name none. Setting it shows the image at once, as `UIImageView.image` does.
    public var image: DecodedImage? {
        get { loadingState.image }
        set { display(ImageDisplayContent(phase: .empty, image: newValue, showsActivityIndicator: false, transition: .none)) }
    }

    /// What the view shows now, asked at its first load to stand in as the
    /// placeholder of the loads that name none.
    public var displayedImage: DecodedImage? { image }

    /// A cancelled load shows nothing new, but the view is no longer loading: the
    /// spinner stops and the picture stays.
    public func imageLoadDidCancel() {
        loadingState.endLoading()
        render()
    }

    /// The view's size in pixels (its allocation, else its size request, times the
    /// scale factor) with its content mode; nil while it has neither. A load that
    /// takes its size from here (one whose options name none) is asked for again
    /// when the view grows past that size or its scale factor changes, so a view
    /// given its URL before its first layout shows its image at its real size. (The
    /// image is asked for again as a new load of the same URL: a completion handler of
    /// the earlier one, if it is still running, is told `.cancelled`.)
    public var displayTargetSize: TargetSize? {
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
    private func sizeChanged() {
        guard sizedLoad != nil, !resizeQueued else { return }
        resizeQueued = true
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                self?.resizeQueued = false
                self?.askAgainIfGrown()
            }
        }
    }

    private func askAgainIfGrown() {
        guard let sizedLoad, let url = sizedLoad.url, url == imageURL, let size = currentTargetSize else { return }
        // In pixels: a larger scale factor is a larger size. A view that shrank keeps
        // its sharper image.
        if let asked = sizedLoad.size, asked.width >= size.width, asked.height >= size.height { return }
        // What is shown stays until the sharper image replaces it, with no spinner.
        var options = imageDisplayOptions
        if image != nil { options.showsActivityIndicator = false }
        setImage(with: url, placeholder: image, options: options)
    }

    // MARK: - Rendering

    private func render() {
        let crossfading = loadingState.isCrossfading
        gtk_picture_set_paintable(front.opaque, current?.texture(at: position))
        gtk_picture_set_paintable(back.opaque, crossfading ? previous.map { OpaquePointer($0.pointer) } : nil)
        gtk_widget_set_opacity(front, crossfading ? loadingState.crossfadeProgress : 1)
        if !crossfading { replacePrevious(with: nil) }
        let spins = loadingState.isActivityIndicatorVisible
        gtk_widget_set_visible(spinner, spins ? 1 : 0)
        gtk_spinner_set_spinning(spinner.opaque, spins ? 1 : 0)
    }

    private func replacePrevious(with texture: OpaquePointer?) {
        previous = texture.map { ObjectReference(retaining: UnsafeMutableRawPointer($0)) }
    }

    private func applyContentMode() {
        let fit = contentMode == .aspectFill ? GTK_CONTENT_FIT_COVER : GTK_CONTENT_FIT_CONTAIN
        gtk_picture_set_content_fit(back.opaque, fit)
        gtk_picture_set_content_fit(front.opaque, fit)
    }

    // MARK: - Frames: crossfades and animations advance on the frame clock

    private var isAnimating: Bool {
        guard let current, current.image.isAnimated else { return false }
        return !animation.isFinished(current)
    }

    private func mappingChanged(_ mapped: Bool) {
        isMapped = mapped
        // Unmapped, the animation holds its place and resumes from it.
        if !mapped { animation.pause() }
        render()
        updateTicking()
    }

    private func updateTicking() {
        let needed = isMapped && (loadingState.isCrossfading || isAnimating)
        if needed, tickID == 0 {
            let handle = Unmanaged.passRetained(WeakImageView(self)).toOpaque()
            tickID = gtk_widget_add_tick_callback(widget, tickTrampoline, handle, releaseWeakImageView)
        } else if !needed, tickID != 0 {
            gtk_widget_remove_tick_callback(widget, UInt32(tickID))
            tickID = 0
        }
    }

    /// One frame of the frame clock; returns whether more frames are wanted.
    fileprivate func tick(at time: Double) -> Bool {
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

/// What GTK's callbacks hold: the view, weakly, so a widget outliving its view calls
/// nothing.
///
/// `@unchecked Sendable`: GTK calls back on the main thread only, where it is read.
private final class WeakImageView: @unchecked Sendable {
    weak var view: ImageView?
    init(_ view: ImageView) { self.view = view }
}

private let tickTrampoline: GtkTickCallback = { _, clock, data in
    guard let data else { return 0 }
    let handle = Unmanaged<WeakImageView>.fromOpaque(data).takeUnretainedValue()
    let time = Double(gdk_frame_clock_get_frame_time(clock)) / 1_000_000
    let goOn = MainActor.assumeIsolated { handle.view?.tick(at: time) ?? false }
    return goOn ? 1 : 0
}

private let releaseWeakImageView: GDestroyNotify = { data in
    if let data { Unmanaged<WeakImageView>.fromOpaque(data).release() }
}
