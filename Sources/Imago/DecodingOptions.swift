import Foundation

/// Settings that bound and shape one decode.
public struct DecodingOptions: Sendable, Hashable {
    /// The default limit on decoded pixels: 2²⁷ (134,217,728), that is 512 MiB of RGBA.
    ///
    /// Large enough for a 108-megapixel phone photo or a long panorama, small enough
    /// that a crafted header claiming 65535 × 65535 (17 GB of pixels) is refused before
    /// anything is allocated. An animation's canvas counts once: its frames are
    /// decoded as they are shown, not held together.
    public static let defaultMaximumPixelCount = 1 << 27

    /// The default limit on an animation's frames: 10,000, several minutes at the
    /// fastest rate browsers play. Longer files are crafted, not drawn.
    public static let defaultMaximumFrameCount = 10_000

    /// The default limit on a JPEG's scans: 200. A progressive photo has about ten
    /// (a few dozen at most from any encoder); each scan passes over the whole image,
    /// so a small file of thousands of empty scans would hold a core for minutes.
    package static let defaultMaximumScanCount = 200

    /// The most pixels one image (an animation's canvas) may have; checked from the
    /// header before any pixel buffer exists.
    public var maximumPixelCount: Int
    /// The most frames an animation may have; checked from a scan of the file,
    /// before any frame is decoded.
    public var maximumFrameCount: Int
    /// The most scans a JPEG may have; counted from the file, before any is decoded.
    public var maximumScanCount: Int
    /// The most seconds one decode may take, on the wall clock; nil (the default) for
    /// no limit. The codecs whose work a small file can make long check it as they
    /// work (libjpeg between rows of every scan, libpng at each row, libtiff between
    /// the strips of a thumbnail), so a file made to be slow fails with
    /// `decodingTimedOut` in about this time rather than holding a core. A loader
    /// sets it to its `loadingTimeout`.
    public var timeout: Double?
    /// Turn photos upright according to their EXIF orientation (the default).
    public var appliesOrientation: Bool
    /// Decode to this size (orientation is applied first) instead of the full size;
    /// nil for the full size. The pixel limit still applies to the source. Each frame
    /// of an animation is scaled as it is produced.
    public var targetSize: TargetSize?

    /// Makes options; the defaults suit almost every use.
    public init(
        maximumPixelCount: Int = DecodingOptions.defaultMaximumPixelCount,
        maximumFrameCount: Int = DecodingOptions.defaultMaximumFrameCount,
        appliesOrientation: Bool = true
    ) {
        self.maximumPixelCount = maximumPixelCount
        self.maximumFrameCount = maximumFrameCount
        self.maximumScanCount = Self.defaultMaximumScanCount
        self.appliesOrientation = appliesOrientation
    }

    /// Throws `imageTooLarge` unless `width × height` is within the pixel limit, and
    /// `tooManyFrames` unless `frames` is within the frame limit. Decoders call this
    /// with the header's figures, before allocating.
    public func checkSize(width: Int, height: Int, frames: Int = 1) throws(ImagoError) {
        let (area, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || area > maximumPixelCount {
            throw .imageTooLarge(width: width, height: height, frames: 1, limit: maximumPixelCount)
        }
        if frames > maximumFrameCount {
            throw .tooManyFrames(count: frames, limit: maximumFrameCount)
        }
    }
}

extension DecodingOptions {
    /// Options for decoding straight to `targetSize`.
    public init(targetSize: TargetSize?, maximumPixelCount: Int = DecodingOptions.defaultMaximumPixelCount) {
        self.init(maximumPixelCount: maximumPixelCount)
        self.targetSize = targetSize
    }
}
