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

    /// When a decode started now must stop, from `timeout`.
    func deadline() -> DecodeDeadline { DecodeDeadline(seconds: timeout) }

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

/// A decoder for one or more formats.
///
/// Conform to add a format Imago lacks (JPEG XL, say) or to replace a built-in decoder,
/// then register it with `ImageDecoders.Registry.shared.register(_:)`.
public protocol ImageDecoding: Sendable {
    /// Whether this decoder takes `data`, whose sniffed format is `format` (nil when
    /// Imago did not recognise it; a decoder for a format Imago does not know looks at
    /// the bytes itself).
    func canDecode(_ data: Data, format: ImageFormat?) -> Bool

    /// Decodes `data`, honouring `options`; throws only `ImagoError`. A decoder may
    /// use `options.targetSize` to decode smaller than the full size (the registry
    /// fits the result to the target either way).
    func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage
}

/// Imago's decoding: `Registry`, which finds the decoder for the data. Its built-in
/// decoders are one a format: on Linux Debian's codecs (and Imago's own for BMP and
/// ICO), on Apple platforms ImageIO. A decoder of one's own (`ImageDecoding`) is
/// added with `Registry.register(_:)`, asked before the built-in ones, or a registry
/// made with exactly the decoders wanted.
public enum ImageDecoders {}

extension ImageDecoders {
    /// The decoders Imago uses, found by the format of the data.
    ///
    /// Decoders registered later are asked first, so a registered decoder can replace a
    /// built-in one.
    public final class Registry: Sendable {
        /// The registry the loader and the `imago` tool use.
        public static let shared = ImageDecoders.Registry()

        private let decoders: Locked<[any ImageDecoding]>

        /// Makes a registry with the platform's built-in decoders.
        public init() {
            decoders = Locked(Self.builtIn)
        }

        /// Makes a registry with exactly `decoders`, in order of preference.
        public init(decoders: [any ImageDecoding]) {
            self.decoders = Locked(decoders)
        }

        /// Adds a decoder, asked before those already registered.
        public func register(_ decoder: any ImageDecoding) {
            decoders.withLock { $0.insert(decoder, at: 0) }
        }

        /// The decoder that would take `data`, if any.
        public func decoder(for data: Data) -> (any ImageDecoding)? {
            let format = ImageFormat.detect(data)
            return decoders.withLock { $0 }.first { $0.canDecode(data, format: format) }
        }

        /// Decodes `data` with the first decoder that takes it, at `options.targetSize`
        /// when one is given.
        ///
        /// Decoders that can decode small (JPEG, WebP) do so themselves; whatever a
        /// decoder returns is then fitted to the target, which leaves an image that
        /// already fits untouched.
        public func decode(_ data: Data, options: DecodingOptions = DecodingOptions()) throws(ImagoError) -> DecodedImage {
            guard let decoder = decoder(for: data) else {
                throw .unsupportedFormat(ImageFormat.detect(data))
            }
            let image = try decoder.decode(data, options: options)
            return options.targetSize.map { image.fitted(to: $0) } ?? image
        }

        /// The decoders this platform has without any registration.
        static var builtIn: [any ImageDecoding] {
            #if os(Linux)
            [ImageDecoders.JPEG(), ImageDecoders.PNG(), ImageDecoders.GIF(), ImageDecoders.WebP(), ImageDecoders.BMP(), ImageDecoders.ICO(), ImageDecoders.TIFF(), ImageDecoders.AVIF(), ImageDecoders.HEIF()]
            #elseif canImport(ImageIO)
            [ImageDecoders.ImageIO()]
            #else
            []
            #endif
        }
    }
}

extension Data {
    /// Runs `body` on the bytes in place, passing its typed error through: what every
    /// C codec wrapper needs (`withUnsafeBytes` rethrows only untyped errors).
    func withBytes<T>(_ body: (UnsafeBufferPointer<UInt8>) throws(ImagoError) -> T) throws(ImagoError) -> T {
        let result = withUnsafeBytes { raw in
            Result { () throws(ImagoError) in try body(raw.bindMemory(to: UInt8.self)) }
        }
        return try result.get()
    }
}
