import Foundation

/// A decoder for one or more formats.
///
/// Conform to add a format Imago lacks (JPEG 2000, say) or to replace a built-in decoder,
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
            [ImageDecoders.JPEG(), ImageDecoders.PNG(), ImageDecoders.GIF(), ImageDecoders.WebP(), ImageDecoders.BMP(), ImageDecoders.ICO(), ImageDecoders.TIFF(), ImageDecoders.AVIF(), ImageDecoders.HEIF(),
             ImageDecoders.JXL(), ImageDecoders.SVG()]
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

extension ImageFormat {
    /// The `Accept` header Imago's loader sends over HTTP (unless the request has one):
    /// the formats a server may choose between by content negotiation, best first,
    /// named only when this build decodes them, then any image at a lower preference.
    ///
    /// Servers and CDNs that negotiate (Cloudflare, imgix, Akamai, Next.js) send AVIF
    /// or WebP only to clients that name them, and JPEG or PNG otherwise; naming a
    /// format this build cannot decode would get an image that fails to decode.
    package static let acceptHeader: String = {
        let negotiated: [(ImageFormat, String)] = [(.avif, "image/avif"), (.webp, "image/webp"), (.jxl, "image/jxl")]
        let decoders = ImageDecoders.Registry.builtIn
        let named = negotiated.filter { format, _ in decoders.contains { $0.canDecode(Data(), format: format) } }
        return (named.map(\.1) + ["image/*;q=0.8"]).joined(separator: ",")
    }()
}
