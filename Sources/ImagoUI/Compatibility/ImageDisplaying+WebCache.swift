// The calls SDWebImage's `UIImageView+WebCache` category and AsyncImageView's
// `UIImageView` category put on image views, on every `ImageDisplaying` view:
// `setImage(with:)` for `setImageWithURL:placeholderImage:`, `imageURL`, and
// `cancelImageLoad()`. They decide what the view shows; the binding of loads to views
// is `ImageTargetLoader`'s.

import Foundation
import Imago

extension ImageDisplaying {
    /// Loads `url` into the view, as SDWebImage's `setImageWithURL:placeholderImage:`:
    /// the view's previous load is cancelled, the placeholder is shown, an image in
    /// the memory cache is shown before this returns, and a nil URL shows the
    /// placeholder and loads nothing. Without a placeholder, the image the view showed
    /// when it was first loaded into (`displayedImage`) stands in, as the original
    /// category's did. A file in the app bundle comes from the platform's named-image
    /// cache where there is one (`bundledImage(named:)`), also before this returns.
    ///
    /// The load shows its image only while no later call replaced it, no newer image
    /// was shown and no cancel came since: a load overtaken or cancelled, even after
    /// its image arrived but before it reached the main actor, shows nothing, and its
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
        // Unwrapped here rather than with `??`, which would copy the options again.
        if let options {
            return show(url, in: self, placeholder: placeholder, options: options, replacing: true, completion: completion)
        }
        return show(url, in: self, placeholder: placeholder, options: imageDisplayOptions, replacing: true, completion: completion)
    }

    /// The latest URL set on the view, by `imageURL` or `setImage(with:)`, loading or
    /// loaded; nil after a nil URL.
    ///
    /// Setting it loads with the view's own options (`imageDisplayOptions`): the
    /// placeholder or the view's first image and the activity indicator while loading,
    /// then the image faded in. As AsyncImageView's `imageURL` does, a URL set while
    /// earlier ones still load is queued behind them, and images are set in the order
    /// set: set a small thumbnail and then the large image at once, and the thumbnail
    /// still loads and is set before the large image. If the large image is already
    /// in memory, or arrives first, the thumbnail's load is cancelled and it is never
    /// set. A view being reused for other content takes `setImage(with:)`, which
    /// cancels what the view loaded before (or calls `cancelImageLoad()` first). Nil
    /// cancels every load and clears the view.
    public var imageURL: URL? {
        get { imageTargetLoader.url(for: self) }
        set { _ = show(newValue, in: self, placeholder: nil, options: imageDisplayOptions, replacing: false, completion: nil) }
    }

    /// Cancels the view's loads; what it shows stays. They deliver nothing, even if
    /// an image has already arrived and is on its way to the main actor.
    public func cancelImageLoad() {
        imageTargetLoader.cancelLoading(target: self)
    }
}

/// Shows `url`'s image in `view`: `setImage(with:)` when `replacing`, else after the
/// view's earlier loads, in the order set (`imageURL`).
///
/// Not generic over the view: a memory hit, the common case in a scrolling list, runs
/// code compiled for the types it copies, not through their value witnesses.
@MainActor
private func show(
    _ url: URL?, in view: any ImageDisplaying, placeholder: DecodedImage?, options: ImageDisplayOptions, replacing: Bool,
    completion: (@MainActor @Sendable (Result<ImageResponse, ImagoError>) -> Void)?
) -> ImageTask? {
    let targets = view.imageTargetLoader
    // Every call takes its place on the view's binding before it shows anything: a
    // replacing call drops whatever an earlier load still has on its way to the
    // main actor.
    guard let url else {
        targets.bind(view, action: nil, to: nil, replacing: true) { view.displayedImage }
        view.display(ImageDisplayContent(phase: .empty, image: placeholder ?? targets.initialImage(of: view)))
        return nil
    }
    let targetSize = options.targetSize ?? view.displayTargetSize
    // A memory hit is the common case in a scrolling list: it is shown at once,
    // with no task, request or notification made for it, and takes its place on
    // the binding and cancels the view's earlier loads, overtaken, in one step.
    // Looked for before the place is taken: nothing can be delivered in between,
    // deliveries being made on the main actor too.
    func showAtOnce(_ image: DecodedImage, from source: ImageResponse.Source) {
        targets.bind(view, action: nil, to: url, replacing: replacing, answeredAtOnce: true) { view.displayedImage }
        view.display(.success(image, transition: .none))
        completion?(.success(ImageResponse(image: image, url: url, source: source)))
    }
    let key = ImageCacheKey(imageKey: url.absoluteString, targetSize: targetSize, processors: options.processors)
    if let image = targets.loader.cache?.image(forKey: key) {
        showAtOnce(image, from: .memory)
        return nil
    }
    if options.processors.isEmpty, let name = BundledImages.main.resourceName(of: url), let image = view.bundledImage(named: name) {
        showAtOnce(image, from: .local)
        return nil
    }
    let sequence = targets.bind(view, action: nil, to: url, replacing: replacing) { view.displayedImage }
    // Chosen only now: a memory hit shows no placeholder.
    let placeholder = placeholder ?? targets.initialImage(of: view)
    view.display(ImageDisplayContent(phase: .loading, image: placeholder, indicator: options.indicator))
    var request = ImageRequest(
        url: url, targetSize: targetSize, processors: options.processors, priority: options.priority,
        options: options.showsProgressivePreviews ? .progressivePreviews : [])
    request.alternativeURLs = options.alternativeURLs
    request.constrainedURL = options.constrainedURL
    let transition = options.transition, failureImage = options.failureImage ?? placeholder
    // A preview is shown in the loading phase, without the activity indicator: the
    // picture sharpening is the sign of progress.
    let previewShown = PreviewShown()
    var preview: (@MainActor @Sendable (AnyObject, ImageResponse) -> Void)?
    if options.showsProgressivePreviews {
        preview = { target, response in
            previewShown.value = true
            (target as? any ImageDisplaying)?.display(ImageDisplayContent(phase: .loading, image: response.image))
        }
    }
    // A determinate or custom indicator is told the share of the bytes received,
    // with the placeholder, while the load is pending and shows no preview yet.
    var progress: (@MainActor @Sendable (AnyObject, ImageTask.Progress) -> Void)?
    if options.indicator == .progress || options.indicator == .custom {
        let indicator = options.indicator
        progress = { target, update in
            guard !previewShown.value, let expected = update.expected, expected > 0 else { return }
            (target as? any ImageDisplaying)?.display(ImageDisplayContent(
                phase: .loading, image: placeholder, indicator: indicator,
                progress: min(1, Double(update.received) / Double(expected))))
        }
    }
    // A cancelled load displays nothing, so the view hears of its end apart: unless
    // another load of its own is still running by the time this runs (a cancel by
    // URL reaches the main actor later).
    let handle = WeakReference(view)
    let cancelled: @MainActor @Sendable () -> Void = {
        if let view = handle.object as? any ImageDisplaying, !targets.isLoading(view, action: nil) {
            view.imageLoadDidCancel()
        }
        completion?(.failure(.cancelled))
    }
    return targets.start(
        request, target: view, action: nil, sequence: sequence, cancelled: cancelled,
        preview: preview, progress: progress,
        success: { target, response in
            if let view = target as? any ImageDisplaying {
                view.display(.success(response, transition: transition, reducesMotion: view.reducesMotion))
            }
            completion?(.success(response))
        },
        failure: { target, error in
            // The failure shows once nothing else loads for the view: a later URL
            // still on its way (or an earlier one, which may yet be set) keeps
            // the view loading.
            if let view = target as? any ImageDisplaying, !targets.isLoading(view, action: nil) {
                view.display(ImageDisplayContent(phase: .failure, image: failureImage))
            }
            completion?(.failure(error))
        })
}

/// Whether a load has shown a progressive preview: its progress then moves no
/// indicator, the picture sharpening being the sign of progress.
@MainActor
private final class PreviewShown: Sendable {
    var value = false
}
