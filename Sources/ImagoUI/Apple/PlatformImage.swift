// Apple platforms only: thin adapters between Imago's platform-neutral `DecodedImage`
// and UIKit and AppKit (the Core Graphics bitmaps underneath are Imago's). All
// behaviour lives in the platform-neutral code that the Linux tests exercise.

#if canImport(UIKit) || canImport(AppKit)
import Imago
#if canImport(UIKit)
import UIKit
/// The image type of the platform's UI toolkit.
public typealias PlatformImage = UIImage
#else
import AppKit
/// The image type of the platform's UI toolkit.
public typealias PlatformImage = NSImage
#endif

/// A toolkit image a `DecodedImage` was made from, read on the main actor only: the
/// toolkit's images are not all `Sendable`, and this one is never changed once made.
final class PlatformOrigin: Sendable {
    @MainActor let image: PlatformImage

    @MainActor init(_ image: PlatformImage) {
        self.image = image
    }
}

/// The toolkit images drawn into bitmaps once (bundled images, a view's first image).
@MainActor let drawnPlatformImages = PlatformImageMemo()

extension DecodedImage {
    /// The image for the toolkit at `scale` pixels per point, so that it measures in
    /// points what it was decoded for: the pixels themselves, not a copy. For an
    /// animation its first frame, the poster: views play the rest a few frames ahead
    /// off the main thread (`AnimationPlayback`), never holding every frame. An image
    /// made from a toolkit image (`init(platformImage:)`) is that image, at its own
    /// scale.
    @MainActor
    public func platformImage(scale: Double) -> PlatformImage? {
        if let origin = platformOrigin as? PlatformOrigin { return origin.image }
        return Self.platformImage(bitmap, scale: scale)
    }

    /// `bitmap` as a toolkit image at `scale` pixels per point, made on its pixels.
    static func platformImage(_ bitmap: Bitmap, scale: Double) -> PlatformImage? {
        guard let cgImage = bitmap.makeCGImage() else { return nil }
        #if canImport(UIKit)
        return UIImage(cgImage: cgImage, scale: CGFloat(scale), orientation: .up)
        #else
        return NSImage(cgImage: cgImage, size: NSSize(width: Double(bitmap.width) / scale, height: Double(bitmap.height) / scale))
        #endif
    }

    /// The pixels of a toolkit image (its first frame), drawn into a bitmap once per
    /// image object (`drawnPlatformImages`) and turned upright as its orientation
    /// says; shown, it is the toolkit image itself.
    @MainActor
    public init?(platformImage image: PlatformImage) {
        guard let drawn = drawnPlatformImages.image(for: image, draw: { Self.drawing(image) }) else { return nil }
        self = drawn
    }

    @MainActor
    private static func drawing(_ image: PlatformImage) -> DecodedImage? {
        #if canImport(UIKit)
        guard let cgImage = image.cgImage, let bitmap = try? Bitmap.drawing(cgImage, format: .png) else { return nil }
        let orientation = ViewGeometry.orientation(uiImageOrientation: image.imageOrientation.rawValue) ?? .up
        var decoded = DecodedImage(bitmap: bitmap.applying(orientation), format: .png, orientation: orientation)
        #else
        guard let cgImage = image.cgImage(forProposedRect: nil, context: nil, hints: nil),
              let bitmap = try? Bitmap.drawing(cgImage, format: .png) else { return nil }
        var decoded = DecodedImage(bitmap: bitmap, format: .png)
        #endif
        decoded.platformOrigin = PlatformOrigin(image)
        return decoded
    }
}
#endif
