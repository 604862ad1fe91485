import Foundation
import Imago

/// The state of one image's load, for a view of one's own to show, as Nuke's
/// `FetchImage` and SwiftUI's `AsyncImage` phases give it: empty, loading (with the
/// progress so far and the latest progressive preview), the image with its response,
/// or the error. Loads go through the same binding as every view (`setImage(with:)`):
/// a new URL cancels the one before, and nothing of an overtaken or cancelled load
/// reaches the model, checked on the main actor when it arrives.
///
/// ```swift
/// let model = ImageLoadModel()
/// model.onSuccess = { response in print(response) }      // "jpeg 256×171, 1 frame, from network"
/// model.onProgress = { progress in print(progress.received) }
/// model.load(url, options: ImageDisplayOptions(targetSize: .thumbnail(256)))
/// if case .success(let response) = model.phase { show(response.image) }
/// ```
@MainActor
public final class ImageLoadModel: ImageDisplaying {
    /// Where a load stands.
    public enum Phase: Sendable {
        /// No URL.
        case empty
        /// Loading: the bytes received so far (when any arrived) and the latest
        /// progressive preview (when the options ask for previews).
        case loading(progress: ImageTask.Progress?, preview: DecodedImage?)
        /// The image, and where it came from.
        case success(ImageResponse)
        /// Why the load failed.
        case failure(ImagoError)
    }

    /// Where the load stands now.
    public private(set) var phase = Phase.empty {
        didSet { onChange?(phase) }
    }
    /// Told of every new phase, on the main actor.
    public var onChange: ((Phase) -> Void)?
    /// Told when a load succeeds.
    public var onSuccess: ((ImageResponse) -> Void)?
    /// Told when a load fails (not when it is cancelled).
    public var onFailure: ((ImagoError) -> Void)?
    /// Told as the bytes of the current load arrive.
    public var onProgress: ((ImageTask.Progress) -> Void)?

    /// The loader the model's images come through.
    public let imageTargetLoader: ImageTargetLoader
    /// The box images are decoded to when the options name no size; nil for full size.
    public var displayTargetSize: TargetSize?
    /// Whether the view showing the model is on screen (true until said otherwise).
    /// Off screen, its load goes on at the lowest priority, so that what is on screen
    /// loads first; back on screen, at the priority asked for, as Nuke's `LazyImage`
    /// does. A model that goes away has its load cancelled.
    public var isVisible: Bool {
        get { current.isVisible }
        set { current.isVisible = newValue }
    }
    /// The current load.
    let current = CurrentLoad()
    /// What `load(_:fitting:options:)` loaded last, for a view that decodes to its own size.
    private var sizedLoad = SizedLoad()
    /// Whether the current load only sharpens the image shown (the same URL for a
    /// larger box): the phase stays the image's until the sharper one replaces it.
    private var isSharpening = false

    /// A model loading through `loader` (`ImageTargetLoader.shared` by default).
    public init(loader: ImageTargetLoader = .shared) {
        imageTargetLoader = loader
    }

    /// Loads `url` (nil: empty), cancelling the load before.
    public func load(_ url: URL?, options: ImageDisplayOptions = ImageDisplayOptions()) {
        sizedLoad.reset()
        start(url, options: options, sharpening: false)
    }

    /// Loads `url` decoded to `box`, the laid-out size of a view that decodes images
    /// to its own size (unless `options` name a size), for every layout pass such a
    /// view reports: the same URL loads again only for a larger box (or another
    /// content mode), a view that shrank keeps its sharper image, and meanwhile the
    /// phase stays the image shown, with no loading phase, until the sharper one
    /// replaces it (or fails, when the image stays and `onFailure` is told).
    public func load(_ url: URL?, fitting box: TargetSize?, options: ImageDisplayOptions = ImageDisplayOptions()) {
        var options = options
        if options.targetSize == nil { options.targetSize = box }
        guard let sized = sizedLoad.load(url, at: options.targetSize, options: options, showing: shownImage) else { return }
        start(url, options: sized.options, sharpening: sized.placeholder != nil)
    }

    /// The image of the success phase, if the phase is one.
    private var shownImage: DecodedImage? {
        if case .success(let response) = phase { return response.image }
        return nil
    }

    private func start(_ url: URL?, options: ImageDisplayOptions, sharpening: Bool) {
        isSharpening = sharpening
        let task = setImage(with: url, options: current.starting(with: options)) { [weak self] result in
            self?.finished(result)
        }
        current.started(task) { [weak self] update in
            // Only while it is still loading.
            guard let self, case .loading(_, let preview) = self.phase else { return }
            self.phase = .loading(progress: update, preview: preview)
            self.onProgress?(update)
        }
    }

    /// Cancels the load; the phase stays what it was.
    public func cancel() {
        current.ended()
        sizedLoad.reset()
        cancelImageLoad()
    }

    /// The binding's content: the loading phase and previews; the image and the
    /// failure come with their response or error through `finished`.
    public func display(_ content: ImageDisplayContent) {
        if isSharpening, content.phase == .loading { return }
        switch content.phase {
        case .empty:
            current.ended()
            phase = .empty
        case .loading:
            // The placeholder first, then each preview (an image that is not the
            // placeholder, as the binding shows previews in the loading phase).
            if case .loading(let progress, _) = phase, content.image != nil {
                phase = .loading(progress: progress, preview: content.image)
            } else {
                phase = .loading(progress: nil, preview: nil)
            }
        case .success, .failure:
            break
        }
    }

    private func finished(_ result: Result<ImageResponse, ImagoError>) {
        switch result {
        case .success(let response):
            current.ended()
            phase = .success(response)
            onSuccess?(response)
        case .failure(.cancelled):
            break
        case .failure(let error):
            current.ended()
            if !isSharpening { phase = .failure(error) }
            onFailure?(error)
        }
    }
}
