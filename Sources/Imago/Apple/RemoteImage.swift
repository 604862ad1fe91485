// A SwiftUI view that loads its image through the same `setImage(with:)` binding as
// the UIKit and AppKit views (cancelling when the URL changes or the view goes away,
// a memory hit shown in the first frame), in the manner of Nuke's `LazyImage`. Every
// decision is the shared code's; this file only maps its content to SwiftUI. Not
// compiled on Linux.

#if canImport(SwiftUI) && canImport(Observation)
import Observation
import SwiftUI

/// Shows the image at `url`: `placeholder` until it loads (or when it fails), then
/// `content` with the image, faded in over `crossfadeDuration` unless it came from
/// the memory cache.
///
/// ```swift
/// RemoteImage(url: avatarURL) { $0.resizable().scaledToFill() } placeholder: { Color.gray }
///     .frame(width: 64, height: 64).clipShape(Circle())
/// ```
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
                content(image).transition(.opacity)
            } else {
                placeholder()
            }
        }
        .animation(model.fade.map { .easeInOut(duration: $0) }, value: model.generation)
        .onGeometryChange(for: CGSize.self, of: { $0.size }) { size in
            model.size = size
            load(url)
        }
        .onAppear { if model.size != .zero { load(url) } }
        .onChange(of: url) { _, newURL in load(newURL) }
        .onDisappear {
            model.cancelImageLoad()
            model.loadedURL = nil
        }
    }

    /// Loads `url` at the view's size, once: the geometry and the URL both call it.
    private func load(_ url: URL?) {
        var options = options
        if options.targetSize == nil {
            // SwiftUI's `.fill` sizing is the common case; a fill box also covers a fit.
            options.targetSize = ViewGeometry.targetSize(
                width: Double(model.size.width), height: Double(model.size.height), reportedScale: Double(displayScale),
                contentMode: .aspectFill)
        }
        model.scale = ViewGeometry.displayScale(Double(displayScale))
        guard url != model.loadedURL || options.targetSize != model.loadedSize else { return }
        model.loadedURL = url
        model.loadedSize = options.targetSize
        model.setImage(with: url, options: options)
    }
}

/// The binding's target behind a `RemoteImage`.
@MainActor @Observable
final class RemoteImageModel: ImageDisplaying {
    private(set) var image: Image?
    /// How long the latest change fades, nil for at once.
    private(set) var fade: Double?
    /// Counts the changes, so that each one animates.
    private(set) var generation = 0
    /// The view's frame in points, and the screen's pixels per point.
    @ObservationIgnored var size = CGSize.zero
    @ObservationIgnored var scale = 3.0
    /// What the latest load asked for, so that a layout pass at the same size loads
    /// nothing again.
    @ObservationIgnored var loadedURL: URL?
    @ObservationIgnored var loadedSize: TargetSize?

    func display(_ content: ImageDisplayContent) {
        if case .crossfade(let seconds) = content.transition { fade = seconds } else { fade = nil }
        #if canImport(UIKit)
        image = content.image?.platformImage(scale: scale).map { Image(uiImage: $0) }
        #else
        image = content.image?.platformImage(scale: scale).map { Image(nsImage: $0) }
        #endif
        generation += 1
    }
}
#endif
