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
            if let frames = model.frames {
                // A new identity for each image, so that the old fades out as the new fades in.
                PlayedFrames(frames: frames, content: content).id(model.generation).transition(.opacity)
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

/// An image's frames as SwiftUI shows them: one a tick of its uniform timeline
/// (`UniformFrameTimeline`), one for a still, played from `start`.
struct RemoteFrames {
    let images: [Image]
    let tick: Double
    let loopCount: Int
    let start: Date

    /// Whether there is more than one frame to play.
    var isAnimated: Bool { images.count > 1 && tick > 0 }

    /// The frame on screen at `date`.
    func image(at date: Date) -> Image {
        guard isAnimated else { return images[0] }
        let tick = Int(max(0, date.timeIntervalSince(start)) / self.tick)
        return images[UniformFrameTimeline.entry(atTick: tick, of: images.count, loopCount: loopCount).entry]
    }
}

/// The ticks of an animation's play: for ever, or until its last loop ends, so that a
/// finished animation no longer redraws.
struct FrameSchedule: TimelineSchedule {
    let frames: RemoteFrames

    func entries(from startDate: Date, mode: TimelineScheduleMode) -> UnfoldSequence<Date, Int> {
        let frames = frames
        let first = max(0, Int(startDate.timeIntervalSince(frames.start) / frames.tick))
        let end = frames.loopCount > 0 ? frames.images.count * frames.loopCount : Int.max
        return sequence(state: first) { tick in
            guard tick < end else { return nil }
            defer { tick += 1 }
            return frames.start.addingTimeInterval(frames.tick * Double(tick))
        }
    }
}

/// A still as it is; an animation redrawn at each tick of its schedule.
struct PlayedFrames<Content: View>: View {
    let frames: RemoteFrames
    let content: (Image) -> Content

    var body: some View {
        if frames.isAnimated {
            TimelineView(FrameSchedule(frames: frames)) { context in content(frames.image(at: context.date)) }
        } else {
            content(frames.images[0])
        }
    }
}

/// The binding's target behind a `RemoteImage`.
@MainActor @Observable
final class RemoteImageModel: ImageDisplaying {
    private(set) var frames: RemoteFrames?
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
        frames = content.image.flatMap(frames(of:))
        generation += 1
    }

    /// The image's frames at the screen's scale, built once for an animation
    /// (`builtAnimations`).
    private func frames(of image: DecodedImage) -> RemoteFrames? {
        #if canImport(UIKit)
        guard let platform = image.platformImage(scale: scale) else { return nil }
        // An animated `UIImage` holds its frames already laid out one a tick.
        let images = platform.images ?? [platform]
        return RemoteFrames(
            images: images.map { Image(uiImage: $0) }, tick: platform.duration / Double(images.count),
            loopCount: image.loopCount, start: Date())
        #else
        if let animation = image.appKitAnimation(scale: scale) {
            return RemoteFrames(
                images: animation.timeline.frames.map { Image(nsImage: animation.frames[$0]) },
                tick: animation.timeline.tick, loopCount: animation.loopCount, start: Date())
        }
        return image.platformImage(scale: scale).map {
            RemoteFrames(images: [Image(nsImage: $0)], tick: 0, loopCount: 0, start: Date())
        }
        #endif
    }
}
#endif
