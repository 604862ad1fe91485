// A SwiftUI view that loads its image through the same `setImage(with:)` binding as
// the UIKit and AppKit views (cancelling when the URL changes or the view goes away,
// a memory hit shown in the first frame), in the manner of Nuke's `LazyImage`. Every
// decision is the shared code's; this file only maps its content to SwiftUI. Not
// compiled on Linux.

#if canImport(SwiftUI)
import SwiftUI
import Imago

/// Shows the image at `url`: `placeholder` until it loads (or when it fails), in the
/// space offered to the view, with the options' indicator over it (a `ProgressView`,
/// spinning or filling as the bytes arrive, or the view given to `indicator(_:)`);
/// then `content` with the image, brought in with the options' transition (a 0.4 s
/// fade by default, as `imageTransition(_:)` says) unless it came from the memory
/// cache or Reduce Motion is on; an animation plays, each frame for its own delay, as
/// many times as the file says.
///
/// ```swift
/// RemoteImage(url: avatarURL) { $0.resizable().scaledToFill() } placeholder: { Color.gray }
///     .onSuccess { response in print(response.source) }
///     .frame(width: 64, height: 64).clipShape(Circle())
/// ```
///
/// Off screen, its load goes on at the lowest priority; a view that goes away for
/// good has its load cancelled. Built on what SwiftUI has had since iOS 15 and
/// macOS 12 (a state object, a geometry reader behind the content,
/// `onChange(of:perform:)`), so that it runs from the package's minimums on.
public struct RemoteImage<Content: View, Placeholder: View>: View {
    private let url: URL?
    private let options: ImageDisplayOptions
    private let content: (Image) -> Content
    private let placeholder: () -> Placeholder
    private var callbacks = RemoteImageModel.Callbacks()
    private var customIndicator: ((Double?) -> AnyView)?
    private var transition = AnyTransition.opacity
    @StateObject private var model = RemoteImageModel()
    @Environment(\.displayScale) private var displayScale
    @Environment(\.accessibilityReduceMotion) private var reduceMotion

    /// A view of `url`'s image, loaded with `options` (size, processors, priority,
    /// transition, indicator). Without a size in `options`, the image is decoded to
    /// fill the view's own frame at the screen's scale.
    public init(
        url: URL?, options: ImageDisplayOptions = ImageDisplayOptions(),
        @ViewBuilder content: @escaping (Image) -> Content, @ViewBuilder placeholder: @escaping () -> Placeholder
    ) {
        self.url = url
        self.options = options
        self.content = content
        self.placeholder = placeholder
    }

    /// Calls `action` with each image loaded, and where it came from.
    public func onSuccess(_ action: @escaping @MainActor (ImageResponse) -> Void) -> Self {
        var copy = self
        copy.callbacks.success = action
        return copy
    }

    /// Calls `action` when a load fails (not when it is cancelled).
    public func onFailure(_ action: @escaping @MainActor (ImagoError) -> Void) -> Self {
        var copy = self
        copy.callbacks.failure = action
        return copy
    }

    /// Calls `action` as the bytes of the current load arrive.
    public func onProgress(_ action: @escaping @MainActor (ImageTask.Progress) -> Void) -> Self {
        var copy = self
        copy.callbacks.progress = action
        return copy
    }

    /// The indicator of loads whose options ask for one of the caller's own
    /// (`ImageLoadingIndicator.custom`): `indicator` is handed the share of the bytes
    /// received (0 to 1), nil until the size is known.
    public func indicator<Indicator: View>(@ViewBuilder _ indicator: @escaping (Double?) -> Indicator) -> Self {
        var copy = self
        copy.customIndicator = { AnyView(indicator($0)) }
        return copy
    }

    /// How each new image comes in, over the options' duration (the crossfade's, or a
    /// custom transition's): a fade by default.
    public func imageTransition(_ transition: AnyTransition) -> Self {
        var copy = self
        copy.transition = transition
        return copy
    }

    public var body: some View {
        let (model, url, options, scale) = (model, url, options, Double(displayScale))
        model.callbacks = callbacks
        model.reducesMotion = reduceMotion
        return ZStack {
            if let image = model.shown.image {
                // A new identity for each image, so that the old goes as the new comes
                // in; an animation's frames change the image, not the identity.
                content(image).id(model.shown.generation).transition(transition)
            } else {
                // The placeholder takes the space offered, as the resizable image
                // will: the frame measured is the one the image gets, so it is decoded
                // at that size, not at the placeholder's own (a spinner's 20 points).
                placeholder().frame(maxWidth: .infinity, maxHeight: .infinity)
            }
        }
        .overlay(alignment: .center) { indicatorView(model.loading) }
        .animation(model.shown.fade.map { .easeInOut(duration: $0) }, value: model.shown.generation)
        // The view's own frame, read behind it without changing its layout.
        .background(alignment: .center) {
            GeometryReader { proxy in Color.clear.preference(key: RemoteImageSize.self, value: proxy.size) }
        }
        .onPreferenceChange(RemoteImageSize.self) { size in
            // Newer SDKs hand this closure over as `@Sendable`; SwiftUI calls it on the
            // main thread all the same.
            MainActor.assumeIsolated {
                model.size = size
                model.load(url, options: options, reportedScale: scale)
            }
        }
        .onAppear {
            model.isOnScreen = true
            model.current.isVisible = true
            if model.size != .zero { model.load(url, options: options, reportedScale: scale) }
        }
        .onChange(of: url) { newURL in model.load(newURL, options: options, reportedScale: scale) }
        .onDisappear {
            // Off screen, the load goes on behind those on screen; a view gone for
            // good is a gone target, its load cancelled.
            model.isOnScreen = false
            model.current.isVisible = false
        }
    }

    @ViewBuilder
    private func indicatorView(_ loading: RemoteImageModel.Loading) -> some View {
        switch loading.indicator {
        case .none:
            EmptyView()
        case .activity:
            ProgressView()
        case .progress:
            if let progress = loading.progress { ProgressView(value: progress) } else { ProgressView() }
        case .custom:
            if let customIndicator { customIndicator(loading.progress) } else { ProgressView() }
        }
    }
}

/// The size of a `RemoteImage`'s frame, as its geometry reader reports it.
struct RemoteImageSize: PreferenceKey {
    static let defaultValue = CGSize.zero

    static func reduce(value: inout CGSize, nextValue: () -> CGSize) {
        value = nextValue()
    }
}

/// The binding's target behind a `RemoteImage`: the image on screen, an animation
/// played a few frames ahead off the main thread (`AnimationDriver`).
@MainActor
final class RemoteImageModel: ObservableObject, ImageDisplaying {
    /// What SwiftUI draws.
    struct Shown {
        /// The frame on screen.
        var image: Image?
        /// How long the latest change fades, nil for at once.
        var fade: Double?
        /// Counts the images shown, so that each one animates in.
        var generation = 0
    }

    /// The indicator over the placeholder, and the share of the bytes received.
    struct Loading: Equatable {
        var indicator = ImageLoadingIndicator.none
        var progress: Double?
    }

    /// What the view's caller wants to hear of its loads.
    struct Callbacks {
        var success: (@MainActor (ImageResponse) -> Void)?
        var failure: (@MainActor (ImagoError) -> Void)?
        var progress: (@MainActor (ImageTask.Progress) -> Void)?
    }

    /// What SwiftUI draws; each change redraws the view.
    @Published private(set) var shown = Shown()
    /// The indicator SwiftUI draws while loading.
    @Published private(set) var loading = Loading()
    /// Told of each load's outcome and progress.
    var callbacks = Callbacks()
    /// Reduce Motion, from the view's environment.
    var reducesMotion = false
    /// The load running now, at a priority that follows the view's appearance.
    let current = CurrentLoad()
    /// The view's frame in points, and the screen's pixels per point.
    var size = CGSize.zero
    var scale: Double?
    /// Whether the view is on screen: an animation off screen decodes nothing.
    var isOnScreen = false
    /// What the latest load asked for.
    var sizedLoad = SizedLoad()
    /// The image on screen, and the toolkit image of the frame shown.
    private(set) var displayedImage: DecodedImage?
    private var frame: PlatformImage?

    /// Loads `url` at the view's size when `SizedLoad` says so: the geometry and the
    /// URL both call it, and a view that grows keeps its image until the sharper one
    /// replaces it.
    func load(_ url: URL?, options: ImageDisplayOptions, reportedScale: Double) {
        var options = options
        let scale = ViewGeometry.displayScale(reported: reportedScale)
        self.scale = scale
        if options.targetSize == nil {
            // SwiftUI's `.fill` sizing is the common case; a fill box also covers a fit.
            options.targetSize = ViewGeometry.targetSize(
                width: Double(size.width), height: Double(size.height), scale: scale, screen: nil, contentMode: .aspectFill)
        }
        guard let load = sizedLoad.load(url, at: options.targetSize, options: options, showing: displayedImage) else { return }
        let task = setImage(with: url, placeholder: load.placeholder, options: current.starting(with: load.options)) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let response): self.callbacks.success?(response)
            case .failure(.cancelled): return
            case .failure(let error): self.callbacks.failure?(error)
            }
            self.current.ended()
        }
        current.started(task) { [weak self] update in self?.callbacks.progress?(update) }
    }

    func display(_ content: ImageDisplayContent) {
        let loading = content.phase == .loading ? Loading(indicator: content.indicator, progress: content.progress) : Loading()
        if loading != self.loading { self.loading = loading }
        // A reload at a larger size shows the image on screen meanwhile: it stays as
        // it is, an animation playing on.
        if let new = content.image, let old = displayedImage, new.sharesPixels(with: old) { return }
        displayedImage = content.image
        var fade: Double?
        switch content.transition {
        case .crossfade(let seconds): fade = seconds
        case .custom(let custom): fade = custom.duration
        case .none: break
        }
        var next = Shown(fade: fade, generation: shown.generation + 1)
        AnimationDriver.show(
            content.image, scale: scale ?? 1, in: ObjectIdentifier(self), isOnScreen: { [weak self] in self?.isOnScreen ?? false },
            currentImage: { [weak self] in self?.frame },
            set: { [weak self] platform in
                next.image = platform.map(Self.image)
                self?.frame = platform
                self?.shown = next
            })
    }

    private static func image(_ platform: PlatformImage) -> Image {
        #if canImport(UIKit)
        Image(uiImage: platform)
        #else
        Image(nsImage: platform)
        #endif
    }
}
/// Shows the image at `url` through `content`, handed the load's phase as SwiftUI's
/// `AsyncImage` hands its own: empty, loading (with the bytes so far and the latest
/// progressive preview), the image with its response, or the error. The load is an
/// `ImageLoadModel`'s, decoded to fill the view's frame at the screen's scale unless
/// `options` name a size; it is cancelled when the view goes away.
///
/// ```swift
/// PhasedRemoteImage(url: photoURL) { phase in
///     switch phase {
///     case .success(let response): Image(uiImage: response.image.platformImage(scale: 2)!).resizable()
///     case .failure: Color.clear
///     default: Color.gray
///     }
/// }
/// ```
public struct PhasedRemoteImage<Content: View>: View {
    private let url: URL?
    private let options: ImageDisplayOptions
    private let content: (ImageLoadModel.Phase) -> Content
    @StateObject private var model = PhasedImageModel()
    @Environment(\.displayScale) private var displayScale

    /// A view of `url`'s image, loaded with `options`, shown by `content` in each phase.
    public init(
        url: URL?, options: ImageDisplayOptions = ImageDisplayOptions(),
        @ViewBuilder content: @escaping (ImageLoadModel.Phase) -> Content
    ) {
        self.url = url
        self.options = options
        self.content = content
    }

    public var body: some View {
        let (model, url, options, scale) = (model, url, options, Double(displayScale))
        return content(model.phase)
            .background(alignment: .center) {
                GeometryReader { proxy in Color.clear.preference(key: RemoteImageSize.self, value: proxy.size) }
            }
            .onPreferenceChange(RemoteImageSize.self) { size in
                // Newer SDKs hand this closure over as `@Sendable`; SwiftUI calls it on the
                // main thread all the same.
                MainActor.assumeIsolated { model.resize(to: size, url: url, options: options, reportedScale: scale) }
            }
            .onAppear {
                model.loader.isVisible = true
                if model.size != .zero { model.resize(to: model.size, url: url, options: options, reportedScale: scale) }
            }
            .onChange(of: url) { newURL in model.resize(to: model.size, url: newURL, options: options, reportedScale: scale) }
            .onDisappear { model.disappear() }
    }
}

/// The `ImageLoadModel` behind a `PhasedRemoteImage`, its phase published to SwiftUI.
@MainActor
final class PhasedImageModel: ObservableObject {
    /// The load's phase; each change redraws the view.
    @Published private(set) var phase = ImageLoadModel.Phase.empty
    /// The load.
    let loader = ImageLoadModel()
    /// The view's frame in points.
    private(set) var size = CGSize.zero

    init() {
        loader.onChange = { [weak self] phase in self?.phase = phase }
    }

    /// The view left the screen: its load goes on at the lowest priority until it
    /// comes back (or is cancelled when the view goes away for good).
    func disappear() {
        loader.isVisible = false
    }

    /// Loads `url` for a frame of `size`: a larger frame loads a sharper image while
    /// the one shown stays (`ImageLoadModel.load(_:fitting:options:)`).
    func resize(to size: CGSize, url: URL?, options: ImageDisplayOptions, reportedScale: Double) {
        self.size = size
        let box = ViewGeometry.targetSize(
            width: Double(size.width), height: Double(size.height),
            scale: ViewGeometry.displayScale(reported: reportedScale), screen: nil, contentMode: .aspectFill)
        loader.load(url, fitting: box, options: options)
    }
}
#endif
