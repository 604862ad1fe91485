// Apple platforms only: thin adapters between Imago's platform-neutral `DecodedImage`
// and UIKit and AppKit (the Core Graphics bitmaps underneath are Imago's). All
// behaviour lives in the platform-neutral code that the Linux tests exercise.

#if canImport(UIKit)
import UIKit
import Imago

/// The image type of the platform's UI toolkit.
public typealias PlatformImage = UIImage

/// Animated images already built, so that showing one again does not decode and copy
/// its frames again.
@MainActor let builtAnimations = BuiltAnimationCache<UIImage>(capacity: 64 << 20)

extension DecodedImage {
    /// The image for UIKit at `scale` pixels per point (`ViewGeometry.displayScale`),
    /// so that it measures in points what it was decoded for. An animation becomes an
    /// animated `UIImage` holding every frame (UIKit has no frame source to decode on
    /// demand), each shown for its own delay on a uniform timeline
    /// (`UniformFrameTimeline`), built once and then found in `builtAnimations`.
    @MainActor
    public func platformImage(scale: Double) -> PlatformImage? {
        builtAnimations.image(for: self, scale: scale) { buildPlatformImage(scale: scale) }
    }

    private func buildPlatformImage(scale: Double) -> PlatformImage? {
        // `frames` decodes an animation's frames each time it is read: once here.
        let frames = self.frames
        let images = frames.compactMap { frame in
            frame.bitmap.makeCGImage().map { UIImage(cgImage: $0, scale: CGFloat(scale), orientation: .up) }
        }
        guard images.count == frames.count, let first = images.first else { return nil }
        if images.count == 1 { return first }
        let timeline = UniformFrameTimeline(durations: frames.map(\.duration))
        return UIImage.animatedImage(with: timeline.frames.map { images[$0] }, duration: timeline.duration)
    }

    /// The pixels of a UIKit image (its first frame), drawn once into a bitmap and
    /// turned upright as its `imageOrientation` says.
    public init?(platformImage image: PlatformImage) {
        guard let cgImage = image.cgImage, let bitmap = try? Bitmap.drawing(cgImage, format: .png) else { return nil }
        let orientation = ViewGeometry.orientation(uiImageOrientation: image.imageOrientation.rawValue) ?? .up
        self.init(bitmap: bitmap.applying(orientation), format: .png, orientation: orientation)
    }
}
#elseif canImport(AppKit)
import AppKit
import Imago

/// The image type of the platform's UI toolkit.
public typealias PlatformImage = NSImage

/// An animation's frames as AppKit images, each entry of `timeline` naming the frame
/// shown for one tick. AppKit animates only GIF data read by `NSBitmapImageRep`, not
/// frames Imago decoded, so `NSImageView` plays these on a timer (`play(_:)`).
// Not Sendable: NSImage is not (the macOS 14 SDK marks its conformance unavailable).
// An animation is built and played on the main actor, so it never needs to be.
final class AppKitAnimation {
    /// The frames, in order.
    let frames: [NSImage]
    /// Which frame shows at each tick, and how long a tick lasts.
    let timeline: UniformFrameTimeline
    /// How many times the animation plays; 0 means forever.
    let loopCount: Int

    init(frames: [NSImage], timeline: UniformFrameTimeline, loopCount: Int) {
        self.frames = frames
        self.timeline = timeline
        self.loopCount = loopCount
    }
}

/// Animations already built, so that showing one again does not decode and copy its
/// frames again.
@MainActor let builtAnimations = BuiltAnimationCache<AppKitAnimation>(capacity: 64 << 20)

extension DecodedImage {
    /// The image for AppKit at `scale` pixels per point (`ViewGeometry.displayScale`),
    /// so that it measures in points what it was decoded for; the first frame of an
    /// animation, which `appKitAnimation(scale:)` plays.
    public func platformImage(scale: Double) -> PlatformImage? {
        Self.nsImage(bitmap, scale: scale)
    }

    /// An animation's frames for AppKit at `scale`, built once and then found in
    /// `builtAnimations`; nil for a still image.
    @MainActor
    func appKitAnimation(scale: Double) -> AppKitAnimation? {
        guard isAnimated else { return nil }
        return builtAnimations.image(for: self, scale: scale) {
            // `frames` decodes an animation's frames each time it is read: once here.
            let frames = self.frames
            let images = frames.compactMap { Self.nsImage($0.bitmap, scale: scale) }
            guard images.count == frames.count else { return nil }
            return AppKitAnimation(
                frames: images, timeline: UniformFrameTimeline(durations: frames.map(\.duration)), loopCount: loopCount)
        }
    }

    private static func nsImage(_ bitmap: Bitmap, scale: Double) -> NSImage? {
        bitmap.makeCGImage().map {
            NSImage(cgImage: $0, size: NSSize(width: Double(bitmap.width) / scale, height: Double(bitmap.height) / scale))
        }
    }

    /// The pixels of an AppKit image, drawn once into a bitmap.
    public init?(platformImage image: PlatformImage) {
        guard let cgImage = image.cgImage(forProposedRect: nil, context: nil, hints: nil),
              let bitmap = try? Bitmap.drawing(cgImage, format: .png) else { return nil }
        self.init(bitmap: bitmap, format: .png)
    }
}
#endif
