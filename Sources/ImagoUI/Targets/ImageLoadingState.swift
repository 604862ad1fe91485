import Imago

/// What a loading image view shows, as AsyncImageView's `AsyncImageView` class
/// does it: the image, an activity indicator while loading, and a crossfade to each
/// new image. The platform views (a UIKit `AsyncImageView`, the GTK view) feed it
/// the content `setImage(with:)` decides and render what it says; every rule lives
/// here, tested with a clock the tests control.
@MainActor
public final class ImageLoadingState {
    /// The indicator's look, as `UIActivityIndicatorView.Style` has it.
    public enum IndicatorStyle: Sendable, Hashable {
        /// The small indicator.
        case medium
        /// The large indicator.
        case large
    }

    /// Whether loads show the activity indicator (true by default). A change reaches
    /// the next load; the one running keeps what it started with.
    public var showsActivityIndicator = true
    /// The indicator's look. Changing it during a load hides the indicator, as
    /// AsyncImageView does when it replaces its indicator view.
    public var activityIndicatorStyle: IndicatorStyle = .medium {
        didSet { if oldValue != activityIndicatorStyle { isActivityIndicatorVisible = false } }
    }
    /// How long a new image fades in over the old one (0.4 s) in the view's own
    /// options (`imageDisplayOptions`); 0 shows it at once. A call's own options
    /// decide for that call.
    public var crossfadeDuration = 0.4

    /// The view's own options for `setImage(with:)` and `imageURL`: the defaults with
    /// this state's crossfade and activity-indicator settings.
    public var displayOptions: ImageDisplayOptions {
        ImageDisplayOptions(crossfadeDuration: crossfadeDuration, showsActivityIndicator: showsActivityIndicator)
    }

    /// The image shown; during a crossfade, the one fading in.
    public private(set) var image: DecodedImage?
    /// The image fading out during a crossfade.
    public private(set) var previousImage: DecodedImage?
    /// Whether the indicator is visible.
    public private(set) var isActivityIndicatorVisible = false
    /// Whether a load is running.
    public private(set) var isLoading = false

    private var crossfade: (start: Double, duration: Double)?
    private let now: () -> Double

    /// A state reading the time in seconds from `now` (a monotonic clock).
    public init(now: @escaping () -> Double) {
        self.now = now
    }

    /// Takes what `setImage(with:)` decided, at the current time.
    public func apply(_ content: ImageDisplayContent) {
        switch content.phase {
        case .loading:
            isLoading = true
            isActivityIndicatorVisible = showsActivityIndicator && content.showsActivityIndicator
            show(content.image, transition: .none)
        case .empty, .success, .failure:
            isLoading = false
            isActivityIndicatorVisible = false
            show(content.image, transition: content.phase == .success ? content.transition : .none)
        }
    }

    /// The load ended without an image (it was cancelled): the indicator stops, and
    /// the image shown stays.
    public func endLoading() {
        isLoading = false
        isActivityIndicatorVisible = false
    }

    /// How far the new image has faded in, from 0 to 1 (1 when no crossfade runs).
    public var crossfadeProgress: Double {
        guard let crossfade, crossfade.duration > 0 else { return 1 }
        return min(1, max(0, (now() - crossfade.start) / crossfade.duration))
    }

    /// Whether a crossfade is still under way; the view redraws until it is not.
    public var isCrossfading: Bool {
        guard crossfade != nil else { return false }
        if crossfadeProgress < 1 { return true }
        crossfade = nil
        previousImage = nil
        return false
    }

    private func show(_ newImage: DecodedImage?, transition: ImageTransition) {
        if case .crossfade(let seconds) = transition, seconds > 0, image != nil || newImage != nil {
            previousImage = image
            crossfade = (now(), seconds)
        } else {
            previousImage = nil
            crossfade = nil
        }
        image = newImage
    }
}
