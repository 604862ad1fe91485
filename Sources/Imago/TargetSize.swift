/// The size an image is wanted at, and how it fills that size: what a view asks for
/// (its bounds × the screen scale) and what a thumbnail is.
///
/// Decoders use it to decode small in the first place (JPEG DCT scaling, WebP scaled
/// decoding) instead of decoding in full and shrinking after.
public struct TargetSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How the image fills the box.
    public enum ContentMode: String, Sendable, Hashable, Codable {
        /// The whole image, inside the box; one side may come out shorter.
        case aspectFit
        /// The box filled exactly; what sticks out is cropped, evenly on both sides.
        case aspectFill
        /// The box covered, nothing cropped: the aspect ratio kept, each side at least
        /// the box's, for views that stretch the image to the box's shape (UIKit's
        /// `.scaleToFill`, AppKit's `.scaleAxesIndependently`).
        case scaleToFill
    }

    /// The box width in pixels.
    public let width: Int
    /// The box height in pixels.
    public let height: Int
    /// How the image fills the box.
    public let contentMode: ContentMode
    /// Whether an image smaller than the box is enlarged (off by default: enlarging
    /// adds memory and no detail).
    public let allowsUpscaling: Bool

    /// A box of `width` × `height` pixels (each at least 1).
    public init(width: Int, height: Int, contentMode: ContentMode = .aspectFit, allowsUpscaling: Bool = false) {
        precondition(width > 0 && height > 0, "a target size needs a positive width and height")
        self.width = width
        self.height = height
        self.contentMode = contentMode
        self.allowsUpscaling = allowsUpscaling
    }

    /// A box given in points, as views measure, on a screen of `scale` pixels per
    /// point; partial pixels round up so the image is never blurred by stretching.
    public init(points width: Double, _ height: Double, scale: Double, contentMode: ContentMode = .aspectFit, allowsUpscaling: Bool = false) {
        self.init(
            width: max(1, Int((width * scale).rounded(.up))), height: max(1, Int((height * scale).rounded(.up))),
            contentMode: contentMode, allowsUpscaling: allowsUpscaling)
    }

    /// A thumbnail: the longest side at most `pixels`, the aspect ratio kept.
    public static func thumbnail(_ pixels: Int) -> TargetSize {
        TargetSize(width: pixels, height: pixels, contentMode: .aspectFit)
    }

    /// A stable text form, part of cache keys: `fit-256x256`, `fill-100x50-up`,
    /// `cover-64x32`.
    public var description: String {
        let mode = switch contentMode {
        case .aspectFit: "fit"
        case .aspectFill: "fill"
        case .scaleToFill: "cover"
        }
        return mode + "-\(width)x\(height)" + (allowsUpscaling ? "-up" : "")
    }

    /// Where an upright source of `sourceWidth` × `sourceHeight` pixels ends up.
    package func layout(sourceWidth: Int, sourceHeight: Int) -> Layout {
        let sx = Double(width) / Double(sourceWidth), sy = Double(height) / Double(sourceHeight)
        var scale = contentMode == .aspectFit ? min(sx, sy) : max(sx, sy)
        if !allowsUpscaling { scale = min(scale, 1) }
        let scaledWidth = max(1, Int((Double(sourceWidth) * scale).rounded()))
        let scaledHeight = max(1, Int((Double(sourceHeight) * scale).rounded()))
        guard contentMode == .aspectFill else {
            return Layout(scaledWidth: scaledWidth, scaledHeight: scaledHeight, outputWidth: scaledWidth, outputHeight: scaledHeight)
        }
        guard !allowsUpscaling, max(sx, sy) > 1 else {
            return Layout(
                scaledWidth: scaledWidth, scaledHeight: scaledHeight,
                outputWidth: min(width, scaledWidth), outputHeight: min(height, scaledHeight))
        }
        // Too small to cover the box and not enlarged, a fill still keeps the box's
        // shape: a 640×480 photo filling a 1000×1000 avatar gives a 480×480 square,
        // not a 640×480 rectangle.
        let boxAspect = Double(width) / Double(height)
        let outputWidth = max(1, min(width, scaledWidth, Int((Double(scaledHeight) * boxAspect).rounded())))
        let outputHeight = max(1, min(height, scaledHeight, Int((Double(scaledWidth) / boxAspect).rounded())))
        return Layout(
            scaledWidth: scaledWidth, scaledHeight: scaledHeight,
            outputWidth: outputWidth, outputHeight: outputHeight)
    }

    /// The result of fitting a source into a target size.
    package struct Layout: Sendable, Hashable {
        /// The whole source, scaled.
        package let scaledWidth: Int
        /// The whole source, scaled.
        package let scaledHeight: Int
        /// The final size: the scaled source, cropped to the box for `aspectFill`.
        package let outputWidth: Int
        /// The final size: the scaled source, cropped to the box for `aspectFill`.
        package let outputHeight: Int

        /// Whether the source is used as it is.
        package func isIdentity(sourceWidth: Int, sourceHeight: Int) -> Bool {
            outputWidth == sourceWidth && outputHeight == sourceHeight && scaledWidth == sourceWidth && scaledHeight == sourceHeight
        }
    }
}
