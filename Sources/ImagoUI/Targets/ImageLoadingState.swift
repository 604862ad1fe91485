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

    /// What loads show while they run: the activity indicator by default, or none, a
    /// determinate one, or the view's own. A change reaches the next load; the one
    /// running keeps what it started with.
    public var indicator = ImageLoadingIndicator.activity
    /// Whether loads show an indicator (AsyncImageView's `showActivityIndicator`);
    /// setting it true picks the activity indicator.
    public var showsActivityIndicator: Bool {
        get { indicator != .none }
        set { indicator = newValue ? (indicator == .none ? .activity : indicator) : .none }
    }
    /// The indicator's look. Changing it during a load hides the indicator, as
    /// AsyncImageView does when it replaces its indicator view.
    public var activityIndicatorStyle: IndicatorStyle = .medium {
        didSet { if oldValue != activityIndicatorStyle { visibleIndicator = .none } }
    }
    /// How a new image replaces the old one in the view's own options
    /// (`imageDisplayOptions`): a 0.4 s crossfade by default. A call's own options
    /// decide for that call.
    public var transition = ImageTransition.default
    /// How long a new image fades in over the old one (AsyncImageView's
    /// `crossfadeDuration`, 0.4 s); 0 shows it at once.
    public var crossfadeDuration: Double {
        get { if case .crossfade(let seconds) = transition { seconds } else { 0 } }
        set { transition = newValue > 0 ? .crossfade(seconds: newValue) : .none }
    }

    /// The view's own options for `setImage(with:)` and `imageURL`: the defaults with
    /// this state's transition and indicator.
    public var displayOptions: ImageDisplayOptions {
        ImageDisplayOptions(transition: transition, indicator: indicator)
    }

    /// The image shown; during a crossfade, the one fading in.
    public private(set) var image: DecodedImage?
    /// The image fading out during a crossfade.
    public private(set) var previousImage: DecodedImage?
    /// The indicator visible: `.none` when none is.
    public private(set) var visibleIndicator = ImageLoadingIndicator.none
    /// How much of the transfer has arrived (0 to 1) while a determinate or custom
    /// indicator shows it; nil when not known.
    public private(set) var progress: Double?
    /// Whether an indicator is visible.
    public var isActivityIndicatorVisible: Bool { visibleIndicator != .none }
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
            visibleIndicator = indicator == .none ? .none : content.indicator
            progress = visibleIndicator == .none ? nil : content.progress
            show(content.image, transition: .none)
        case .empty, .success, .failure:
            isLoading = false
            visibleIndicator = .none
            progress = nil
            show(content.image, transition: content.phase == .success ? content.transition : .none)
        }
    }

    /// The load ended without an image (it was cancelled): the indicator stops, and
    /// the image shown stays.
    public func endLoading() {
        isLoading = false
        visibleIndicator = .none
        progress = nil
    }

    /// Tells a view's own indicator (`ImageLoadingIndicator.custom`) what to show:
    /// loading with the progress so far while it is the visible indicator, else
    /// nothing.
    public func render(into indicator: any ImageLoadingIndicatorView) {
        if visibleIndicator == .custom {
            indicator.showLoading(progress: progress)
        } else {
            indicator.hideLoading()
        }
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

/// An indicator of the caller's own, shown while an image loads
/// (`ImageLoadingIndicator.custom`), as Kingfisher's `Indicator`: a view that is told
/// when loading shows, how far it has come, and when it ends. The platform views
/// place it (centred over the image) and call it; `ImageLoadingState` decides what
/// it is told.
@MainActor
public protocol ImageLoadingIndicatorView: AnyObject {
    /// Loading shows, `progress` of the bytes received (0 to 1) when the size is known.
    func showLoading(progress: Double?)
    /// Nothing loads any more (the image arrived, the load failed or was cancelled).
    func hideLoading()
}
