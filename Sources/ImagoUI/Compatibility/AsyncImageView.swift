// AsyncImageView's `AsyncImageView` class for UIKit: an image view with an activity
// indicator and a cross-dissolve to each new image. Every rule (when the indicator
// shows, when a style change hides it, whether and how long to fade) is
// `ImageLoadingState`'s, tested on Linux; this file only renders its state. Not
// compiled on Linux.

#if canImport(UIKit) && !os(watchOS)
import UIKit
import Imago

/// An image view that shows an activity indicator while its image loads and
/// cross-dissolves to each new image, as AsyncImageView's `AsyncImageView` does. Load
/// into it with `imageURL` or `setImage(with:placeholder:options:completion:)`.
@MainActor
open class AsyncImageView: UIImageView {
    /// The rules this view renders.
    public let loadingState = ImageLoadingState(now: CACurrentMediaTime)

    /// Whether loads show the indicator (true); a change reaches the next load.
    public var showsActivityIndicator: Bool {
        get { loadingState.showsActivityIndicator }
        set { loadingState.showsActivityIndicator = newValue }
    }

    /// The indicator's look; changing it during a load hides the indicator.
    public var activityIndicatorStyle: UIActivityIndicatorView.Style {
        get { loadingState.activityIndicatorStyle == .large ? .large : .medium }
        set {
            loadingState.activityIndicatorStyle = newValue == .large ? .large : .medium
            indicator.style = newValue
            renderIndicator()
        }
    }

    /// How long a new image cross-dissolves in (0.4 s); 0 sets it at once.
    public var crossfadeDuration: Double {
        get { loadingState.crossfadeDuration }
        set { loadingState.crossfadeDuration = newValue }
    }

    /// How a new image replaces the old: a crossfade of `crossfadeDuration` by
    /// default, none, or one of the caller's own. None while Reduce Motion is on.
    public var transition: ImageTransition {
        get { loadingState.transition }
        set { loadingState.transition = newValue }
    }

    /// What loads show while they run: the activity indicator (the default), none,
    /// a progress bar filling as the bytes arrive, or `customIndicator`.
    public var loadingIndicator: ImageLoadingIndicator {
        get { loadingState.indicator }
        set { loadingState.indicator = newValue }
    }

    /// The indicator, centred over the image.
    public let indicator = UIActivityIndicatorView(style: .medium)
    /// The progress bar of `.progress` loads, centred over the image, two thirds of
    /// its width; the activity indicator spins until the size is known.
    public let progressView = UIProgressView(progressViewStyle: .default)
    /// The caller's own indicator, shown centred over the image for `.custom` loads.
    public var customIndicator: (UIView & ImageLoadingIndicatorView)? {
        didSet {
            oldValue?.hideLoading()
            oldValue?.removeFromSuperview()
            if let customIndicator { center(customIndicator) }
            renderIndicator()
        }
    }

    public override init(frame: CGRect) {
        super.init(frame: frame)
        addIndicator()
    }

    public override init(image: UIImage?) {
        super.init(image: image)
        addIndicator()
    }

    public required init?(coder: NSCoder) {
        super.init(coder: coder)
        addIndicator()
    }

    private func addIndicator() {
        indicator.hidesWhenStopped = true
        center(indicator)
        progressView.isHidden = true
        center(progressView)
        progressView.widthAnchor.constraint(equalTo: widthAnchor, multiplier: 2.0 / 3.0).isActive = true
    }

    private func center(_ view: UIView) {
        view.translatesAutoresizingMaskIntoConstraints = false
        addSubview(view)
        NSLayoutConstraint.activate([
            view.centerXAnchor.constraint(equalTo: centerXAnchor),
            view.centerYAnchor.constraint(equalTo: centerYAnchor),
        ])
    }

    /// Shows what the loading state makes of `content`.
    func render(_ content: ImageDisplayContent) {
        loadingState.apply(content)
        let image = loadingState.image
        if loadingState.isCrossfading, case .crossfade(let seconds) = content.transition {
            UIView.transition(
                with: self, duration: seconds, options: [.transitionCrossDissolve, .allowUserInteraction]
            ) { self.show(image) }
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
        if spins {
            bringSubviewToFront(indicator)
            indicator.startAnimating()
        } else {
            indicator.stopAnimating()
        }
        progressView.isHidden = !(shown == .progress && progress != nil)
        if let progress, shown == .progress {
            bringSubviewToFront(progressView)
            progressView.setProgress(Float(progress), animated: false)
        }
        if let customIndicator {
            bringSubviewToFront(customIndicator)
            loadingState.render(into: customIndicator)
        }
    }
}
#endif
