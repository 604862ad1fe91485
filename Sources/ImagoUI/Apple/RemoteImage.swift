// A SwiftUI view that loads its image through the same `setImage(with:)` binding as
// the UIKit and AppKit views (cancelling when the URL changes or the view goes away,
// a memory hit shown in the first frame), in the manner of Nuke's `LazyImage`. Every
// decision is the shared code's; this file only maps its content to SwiftUI. Not
// compiled on Linux.

#if canImport(SwiftUI) && canImport(Observation)
import Observation
import SwiftUI
import Imago

/// Shows the image at `url`: `placeholder` until it loads (or when it fails), then
/// `content` with the image, faded in over `crossfadeDuration` unless it came from
/// the memory cache (from a progressive preview too); an animation plays, each
/// frame for its own delay, as many times as the file says.
///
/// ```swift
/// RemoteImage(url: avatarURL) { $0.resizable().scaledToFill() } placeholder: { Color.gray }
///     .frame(width: 64, height: 64).clipShape(Circle())
/// ```
///
/// From iOS 17, macOS 14, tvOS 17 and watchOS 10 on, for `onChange(of:initial:_:)`;
/// before, show images with the UIKit and AppKit views.
@available(iOS 17.0, macOS 14.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *)
public struct RemoteImage<Content: View, Placeholder: View>: View {
    private let url: URL?
    private let options: ImageDisplayOptions
    private let content: (Image) -> Content
    private let placeholder: () -> Placeholder
    @State private var model = RemoteImageModel()
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
        ZStack {
            if let image = model.image {
                // A new identity for each image, so that the old fades out as the new
                // fades in; an animation's frames change the image, not the identity.
                content(image).id(model.generation).transition(.opacity)
            } else {
                placeholder()
            }
        }
        .animation(model.fade.map { .easeInOut(duration: $0) }, value: model.generation)
        .onGeometryChange(for: CGSize.self, of: { $0.size }) { size in
            model.size = size
            load(url)
        }
        .onAppear {
            model.isOnScreen = true
            if model.size != .zero { load(url) }
        }
        .onChange(of: url) { _, newURL in load(newURL) }
        .onDisappear {
            model.isOnScreen = false
            model.cancelImageLoad()
            model.sizedLoad.reset()
        }
    }

    /// Loads `url` at the view's size when `SizedLoad` says so: the geometry and the
    /// URL both call it, and a view that grows keeps its image until the sharper one
    /// replaces it.
    private func load(_ url: URL?) {
        var options = options
        let scale = ViewGeometry.displayScale(reported: Double(displayScale))
        model.scale = scale
        if options.targetSize == nil {
            // SwiftUI's `.fill` sizing is the common case; a fill box also covers a fit.
            options.targetSize = ViewGeometry.targetSize(
                width: Double(model.size.width), height: Double(model.size.height), scale: scale, screen: nil,
                contentMode: .aspectFill)
        }
        guard let load = model.sizedLoad.load(url, at: options.targetSize, options: options, showing: model.displayedImage)
        else { return }
        model.setImage(with: url, placeholder: load.placeholder, options: load.options)
    }
}

/// The binding's target behind a `RemoteImage`: the image on screen, an animation
/// played a few frames ahead off the main thread (`AnimationDriver`).
@MainActor @Observable
final class RemoteImageModel: ImageDisplaying {
    /// The frame on screen.
    private(set) var image: Image?
    /// How long the latest change fades, nil for at once.
    private(set) var fade: Double?
    /// Counts the images shown, so that each one animates in.
    private(set) var generation = 0
    /// The view's frame in points, and the screen's pixels per point.
    @ObservationIgnored var size = CGSize.zero
    @ObservationIgnored var scale: Double?
    /// Whether the view is on screen: an animation off screen decodes nothing.
    @ObservationIgnored var isOnScreen = false
    /// What the latest load asked for.
    @ObservationIgnored var sizedLoad = SizedLoad()
    /// The image on screen, and the toolkit image of the frame shown.
    @ObservationIgnored private(set) var displayedImage: DecodedImage?
    @ObservationIgnored private var shown: PlatformImage?

    func display(_ content: ImageDisplayContent) {
        // A reload at a larger size shows the image on screen meanwhile: it stays as
        // it is, an animation playing on.
        if let new = content.image, let old = displayedImage, new.sharesPixels(with: old) { return }
        if case .crossfade(let seconds) = content.transition { fade = seconds } else { fade = nil }
        displayedImage = content.image
        let key = ObjectIdentifier(self)
        AnimationDriver.stop(in: key)
        let scale = scale ?? 1
        shown = content.image?.platformImage(scale: scale)
        image = shown.map(Self.image)
        generation += 1
        guard let decoded = content.image, decoded.isAnimated, let shown else { return }
        AnimationDriver.play(
            decoded, in: key, shown: shown, isOnScreen: { [weak self] in self?.isOnScreen ?? false },
            currentImage: { [weak self] in self?.shown },
            show: { [weak self] frame in
                let platform = DecodedImage.platformImage(frame.bitmap, scale: scale)
                self?.shown = platform
                self?.image = platform.map(Self.image)
                return platform
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
#endif
