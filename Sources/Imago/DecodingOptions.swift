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

    /// The default memory budget of a decode to a target size (a thumbnail): 64 MiB.
    ///
    /// A thumbnail's own pixels are small; what a decode can hold besides them is the
    /// codec's: libjpeg's coefficients of a progressive JPEG (2 bytes a sample,
    /// whatever the scale it outputs), a TIFF strip, a canvas. 64 MiB takes a
    /// progressive 4:2:0 photo of 21 megapixels and keeps a page of eight thumbnails
    /// decoding at once well under a gigabyte.
    public static let defaultThumbnailMemoryBudget = 64 << 20

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
    /// the strips of a thumbnail, libheif between a grid's tiles, librsvg as it
    /// draws), so a file made to be slow fails with
    /// `decodingTimedOut` in about this time rather than holding a core. A loader
    /// sets it to its `loadingTimeout`.
    public var timeout: Double?
    /// The most bytes one decode may hold at once, its output included (pixel
    /// buffers, the codec's own buffers, a canvas); nil (the default) for
    /// `effectiveMemoryBudget`'s figure. Each decoder counts what its way through
    /// the file needs from the header, before any pixel buffer exists, takes a
    /// smaller way where there is one (rows streamed into a thumbnail, an interlaced
    /// image's passes summed at the thumbnail's scale) and throws `overMemoryBudget`
    /// when none fits, so a small file claiming a large image fails rather than
    /// taking the process's memory. libavif, libheif and libjxl, which decode only at
    /// full size, are held to the full-size figure when this is nil, also for a
    /// thumbnail.
    public var memoryBudget: Int?
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

    /// The budget a decode runs with: `memoryBudget` when set; otherwise, for a
    /// target size, `defaultThumbnailMemoryBudget`, and for the full size the
    /// largest image the pixel limit allows (4 bytes a pixel) and as much again, for
    /// the codec's work and a turn by the orientation, or 256 MiB when the limit is
    /// lower (1 GiB with the default limit: an animation on the largest canvas, whose
    /// codec keeps two canvases, is refused at full size). libavif, libheif and
    /// libjxl, which decode only at full size, run with the full-size figure for a
    /// target size too.
    public var effectiveMemoryBudget: Int {
        if let memoryBudget { return memoryBudget }
        if targetSize != nil { return Self.defaultThumbnailMemoryBudget }
        return fullSizeMemoryBudget
    }

    /// The budget of a full-size decode when none is set.
    var fullSizeMemoryBudget: Int {
        let (bytes, overflow) = maximumPixelCount.multipliedReportingOverflow(by: 8)
        return overflow ? Int.max : max(bytes, 256 << 20)
    }

    /// Throws `overMemoryBudget` unless `bytes` is within `effectiveMemoryBudget`.
    /// Decoders call this with what their way through the file would hold at once,
    /// before allocating.
    public func checkMemory(_ bytes: Int, format: ImageFormat) throws(ImagoError) {
        try checkMemory(bytes, within: effectiveMemoryBudget, format: format)
    }

    /// The same for a codec that decodes only at full size whatever the target
    /// (libavif, libheif, libjxl): `memoryBudget` when set, otherwise the full-size budget,
    /// since a thumbnail's 64 MiB would refuse a phone's 12-megapixel photo that such
    /// a codec cannot decode any smaller. What it bounds is what a small file can
    /// make the codec hold beyond the image itself (a grid of thousands of tiles).
    func checkFullSizeMemory(_ bytes: Int, format: ImageFormat) throws(ImagoError) {
        try checkMemory(bytes, within: memoryBudget ?? fullSizeMemoryBudget, format: format)
    }

    private func checkMemory(_ bytes: Int, within budget: Int, format: ImageFormat) throws(ImagoError) {
        if bytes > budget { throw .overMemoryBudget(format: format, bytes: bytes, budget: budget) }
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
