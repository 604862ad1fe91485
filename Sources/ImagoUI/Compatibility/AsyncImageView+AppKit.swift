// AsyncImageView's `AsyncImageView` class for AppKit: an image view with an activity
// indicator (or a progress bar, or the caller's own) and a fade to each new image,
// as the UIKit one. Every rule is `ImageLoadingState`'s, tested on Linux; this file
// only renders its state. Not compiled on Linux.

#if canImport(AppKit) && !canImport(UIKit)
import AppKit
import Imago

/// An image view that shows an indicator while its image loads and fades to each new
/// image, as AsyncImageView's `AsyncImageView` does on iOS. Load into it with
/// `imageURL` or `setImage(with:placeholder:options:completion:)`.
@MainActor
open class AsyncImageView: NSImageView {
    /// The rules this view renders.
    public let loadingState = ImageLoadingState(now: CACurrentMediaTime)

    /// Whether loads show an indicator (true); a change reaches the next load.
    public var showsActivityIndicator: Bool {
        get { loadingState.showsActivityIndicator }
        set { loadingState.showsActivityIndicator = newValue }
    }

    /// How long a new image fades in (0.4 s); 0 sets it at once.
    public var crossfadeDuration: Double {
        get { loadingState.crossfadeDuration }
        set { loadingState.crossfadeDuration = newValue }
    }

    /// How a new image replaces the old: a fade of `crossfadeDuration` by default,
    /// none, or one of the caller's own. None while Reduce motion is on.
    public var transition: ImageTransition {
        get { loadingState.transition }
        set { loadingState.transition = newValue }
    }

    /// What loads show while they run: the spinning indicator (the default), none, a
    /// progress bar filling as the bytes arrive, or `customIndicator`.
    public var loadingIndicator: ImageLoadingIndicator {
        get { loadingState.indicator }
        set { loadingState.indicator = newValue }
    }

    /// The spinning indicator, centred over the image.
    public let indicator = NSProgressIndicator(frame: NSRect(x: 0, y: 0, width: 16, height: 16))
    /// The progress bar of `.progress` loads, centred over the image; the spinning
    /// indicator turns until the size is known.
    public let progressBar = NSProgressIndicator(frame: NSRect(x: 0, y: 0, width: 120, height: 12))
    /// The caller's own indicator, shown centred over the image for `.custom` loads.
    public var customIndicator: (NSView & ImageLoadingIndicatorView)? {
        didSet {
            oldValue?.hideLoading()
            oldValue?.removeFromSuperview()
            if let customIndicator { addSubview(customIndicator) }
            renderIndicator()
        }
    }

    public override init(frame frameRect: NSRect) {
        super.init(frame: frameRect)
        addIndicators()
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        addIndicators()
    }

    private func addIndicators() {
        indicator.style = .spinning
        indicator.isDisplayedWhenStopped = false
        progressBar.style = .bar
        progressBar.isIndeterminate = false
        progressBar.minValue = 0
        progressBar.maxValue = 1
        progressBar.isHidden = true
        addSubview(indicator)
        addSubview(progressBar)
    }

    open override func layout() {
        super.layout()
        for view in [indicator, progressBar] + (customIndicator.map { [$0] } ?? []) {
            let size = view.frame.size
            view.setFrameOrigin(NSPoint(x: (bounds.width - size.width) / 2, y: (bounds.height - size.height) / 2))
        }
    }

    /// Shows what the loading state makes of `content`.
    func render(_ content: ImageDisplayContent) {
        loadingState.apply(content)
        let image = loadingState.image
        layer?.removeAnimation(forKey: "imago.crossfade")
        if loadingState.isCrossfading, case .crossfade(let seconds) = content.transition, let layer {
            let fade = CATransition()
            fade.type = .fade
            fade.duration = seconds
            layer.add(fade, forKey: "imago.crossfade")
            show(image)
        } else if content.phase == .success, case .custom(let custom) = content.transition {
            custom.animate(self) { [weak self] in self?.show(image) }
        } else {
            show(image)
        }
        renderIndicator()
    }

    /// Shows that the load ended without an image (it was cancelled).
    func renderEndOfLoading() {
        loadingState.endLoading()
        renderIndicator()
    }

    private func renderIndicator() {
        let shown = loadingState.visibleIndicator, progress = loadingState.progress
        let spins = shown == .activity || (shown == .progress && progress == nil) || (shown == .custom && customIndicator == nil)
        if spins { indicator.startAnimation(nil) } else { indicator.stopAnimation(nil) }
        progressBar.isHidden = !(shown == .progress && progress != nil)
        if let progress, shown == .progress { progressBar.doubleValue = progress }
        if let customIndicator { loadingState.render(into: customIndicator) }
    }
}
#endif
