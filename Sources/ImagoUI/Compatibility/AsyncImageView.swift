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

    /// The indicator, centred over the image.
    public let indicator = UIActivityIndicatorView(style: .medium)

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
        indicator.translatesAutoresizingMaskIntoConstraints = false
        addSubview(indicator)
        NSLayoutConstraint.activate([
            indicator.centerXAnchor.constraint(equalTo: centerXAnchor),
            indicator.centerYAnchor.constraint(equalTo: centerYAnchor),
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
        if loadingState.isActivityIndicatorVisible {
            bringSubviewToFront(indicator)
            indicator.startAnimating()
        } else {
            indicator.stopAnimating()
        }
    }
}
#endif
