#if os(Linux)
import CImagoCodecs
import Foundation

/// PNG through libpng: every bit depth (16 bits are scaled to 8 with rounding),
/// palette, gray, tRNS transparency, gray+alpha and Adam7 interlace, with the `eXIf`
/// orientation applied.
///
/// The full libpng API rather than its simplified one: the simplified reader gets
/// the alpha of interlaced 16-bit gray+alpha images wrong (PngSuite `basi4a16`), and
/// does not expose `eXIf`. An animated PNG (APNG) decodes to its frames,
/// composited as browsers do, as they are played (see `APNG`).
public struct PNGDecoder: ImageDecoding {
    /// Makes the decoder; it holds no state.
    public init() {}

    /// Takes data sniffed as PNG, nothing else.
    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        format == .png
    }

    /// Decodes the image. Throws `imageTooLarge` from the header, before any pixel
    /// buffer exists, and `decodingFailed` for truncated or corrupt data, with
    /// libpng's message as the codec's word where libpng refused it.
    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        let still = try decodeStill(data, options: options)
        return try APNG.animation(data, still: still, options: options) ?? still
    }

    /// The default image alone: what a viewer without APNG support shows.
    func decodeStill(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
    }

    private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        guard let base = bytes.baseAddress, !bytes.isEmpty, let png = imago_png_create(base, bytes.count) else {
            throw .decodingFailed(format: .png, reason: "no data", codec: nil)
        }
        defer { imago_png_destroy(png) }
        // libpng's messages are precise ("IHDR: CRC error"), so they are the reason
        // as they stand.
        func fail() -> ImagoError {
            let message = String(cString: imago_png_message(png))
            let codec = imago_png_message_is_own(png) == 0 ? ImagoError.CodecMessage(library: "libpng", message: message) : nil
            return .decodingFailed(format: .png, reason: message, codec: codec)
        }

        var info = imago_png_info()
        guard imago_png_read_header(png, &info) == 0 else { throw fail() }
        let width = Int(info.width), height = Int(info.height)
        try options.checkSize(width: width, height: height)
        let orientation = info.exif.map {
            ImageOrientation(exif: UnsafeBufferPointer(start: $0, count: info.exif_length))
        } ?? nil
        let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
            guard imago_png_read_pixels(png, pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), width * 4) == 0 else {
                throw fail()
            }
            if info.has_alpha != 0 { pixels.premultiplyRGBA(count: width * height) }
        }
        let upright = options.appliesOrientation ? bitmap.applying(orientation ?? .up) : bitmap
        return DecodedImage(bitmap: upright, format: .png, orientation: orientation ?? .up)
    }
}
#endif
