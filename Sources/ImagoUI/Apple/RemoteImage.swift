// A SwiftUI view that loads its image through the same `setImage(with:)` binding as
// the UIKit and AppKit views (cancelling when the URL changes or the view goes away,
// a memory hit shown in the first frame), in the manner of Nuke's `LazyImage`. Every
// decision is the shared code's; this file only maps its content to SwiftUI. Not
// compiled on Linux.

#if canImport(SwiftUI)
import SwiftUI
import Imago

/// Shows the image at `url`: `placeholder` until it loads (or when it fails), in the
/// space offered to the view, then `content` with the image, faded in over `crossfadeDuration` unless it came from
/// the memory cache (from a progressive preview too); an animation plays, each
/// frame for its own delay, as many times as the file says.
///
/// ```swift
/// RemoteImage(url: avatarURL) { $0.resizable().scaledToFill() } placeholder: { Color.gray }
///     .frame(width: 64, height: 64).clipShape(Circle())
/// ```
///
/// Built on what SwiftUI has had since iOS 14 and macOS 11 (a state object, a
/// geometry reader behind the content, `onChange(of:perform:)`), so that it runs from
/// the package's minimums on.
public struct RemoteImage<Content: View, Placeholder: View>: View {
    private let url: URL?
    private let options: ImageDisplayOptions
    private let content: (Image) -> Content
    private let placeholder: () -> Placeholder
    @StateObject private var model = RemoteImageModel()
    @Environment(\.displayScale) private var displayScale

    /// A view of `url`'s image, loaded with `options` (size, processors, priority,
    /// crossfade). Without a size in `options`, the image is decoded to fill the
    /// view's own frame at the screen's scale.
    public init(
        url: URL?, options: ImageDisplayOptions = ImageDisplayOptions(),
        @ViewBuilder content: @escaping (Image) -> Content, @ViewBuilder placeholder: @escaping () -> Placeholder
    ) {
        self.url = url
        self.options = options
        self.content = content
        self.placeholder = placeholder
    }

    public var body: some View {
        let (model, url, options, scale) = (model, url, options, Double(displayScale))
        return ZStack {
            if let image = model.shown.image {
                // A new identity for each image, so that the old fades out as the new
                // fades in; an animation's frames change the image, not the identity.
                content(image).id(model.shown.generation).transition(.opacity)
            } else {
                // The placeholder takes the space offered, as the resizable image
                // will: the frame measured is the one the image gets, so it is decoded
                // at that size, not at the placeholder's own (a spinner's 20 points).
                placeholder().frame(maxWidth: .infinity, maxHeight: .infinity)
            }
        }
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
            if model.size != .zero { model.load(url, options: options, reportedScale: scale) }
        }
        .onChange(of: url) { newURL in model.load(newURL, options: options, reportedScale: scale) }
        .onDisappear {
            model.isOnScreen = false
            model.cancelImageLoad()
            model.sizedLoad.reset()
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

    /// What SwiftUI draws; each change redraws the view.
    @Published private(set) var shown = Shown()
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
        setImage(with: url, placeholder: load.placeholder, options: load.options)
    }

    func display(_ content: ImageDisplayContent) {
        // A reload at a larger size shows the image on screen meanwhile: it stays as
        // it is, an animation playing on.
        if let new = content.image, let old = displayedImage, new.sharesPixels(with: old) { return }
        displayedImage = content.image
        var fade: Double?
        if case .crossfade(let seconds) = content.transition { fade = seconds }
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
            .onAppear { if model.size != .zero { model.resize(to: model.size, url: url, options: options, reportedScale: scale) } }
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

    /// The view went away: its load stops, and is asked again if it comes back.
    func disappear() {
        loader.cancel()
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
