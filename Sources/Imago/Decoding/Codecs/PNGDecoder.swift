#if os(Linux)
import CLibPNG
import Foundation

/// PNG through libpng's simplified API: every bit depth (16-bit is reduced to 8),
/// palette, gray, tRNS transparency, gray+alpha and Adam7 interlace.
///
/// An animated PNG decodes to its default image, as in any viewer without APNG
/// support; libpng's simplified API does not read the `eXIf` orientation.
public struct PNGDecoder: ImageDecoding {
    /// Makes the decoder; it holds no state.
    public init() {}

    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        format == .png
    }

    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        var result: Result<DecodedImage, ImagoError>!
        data.withUnsafeBytes { raw in
            result = Result { () throws(ImagoError) in try decode(raw, options: options) }
        }
        return try result.get()
    }

    private func decode(_ raw: UnsafeRawBufferPointer, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        var image = png_image()
        image.version = UInt32(PNG_IMAGE_VERSION)
        defer { png_image_free(&image) }
        guard let base = raw.baseAddress, png_image_begin_read_from_memory(&image, base, raw.count) != 0 else {
            throw failure(image)
        }
        let width = Int(image.width), height = Int(image.height)
        try options.checkSize(width: width, height: height)
        guard width * 4 <= Int(Int32.max) else {
            throw .decodingFailed(format: .png, reason: "rows of \(width) pixels are too wide for libpng")
        }
        let hasAlpha = image.format & UInt32(PNG_FORMAT_FLAG_ALPHA) != 0
        // Untagged 16-bit data is sRGB like everything else on the web; without this
        // flag libpng takes it for linear light and brightens it on the way to 8 bits.
        image.flags |= UInt32(PNG_IMAGE_FLAG_16BIT_sRGB)
        image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
        let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
            guard png_image_finish_read(&image, nil, pixels.baseAddress, Int32(width * 4), nil) != 0 else {
                throw failure(image)
            }
            if hasAlpha { pixels.premultiplyRGBA(count: width * height) }
        }
        return DecodedImage(bitmap: bitmap, format: .png)
    }

    private func failure(_ image: png_image) -> ImagoError {
        .decodingFailed(format: .png, reason: image.failureMessage ?? "unreadable data")
    }
}
#endif
