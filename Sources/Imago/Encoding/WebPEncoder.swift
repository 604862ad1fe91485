#if os(Linux)
import CLibWebP
import Foundation

extension ImageEncoders {
    /// Writes WebP through libwebp's advanced API: lossy (VP8, with a losslessly coded
    /// alpha plane when the bitmap has transparency) or lossless (VP8L).
    public struct WebP: ImageEncoding {
        /// The lossy quality used when none is given: 80 (cwebp's default is 75). On the
        /// Kodak photos it matches ImageEncoders.JPEG's default of 85 to within about 1 dB PSNR,
        /// in half to three quarters of the bytes.
        public static let defaultQuality: Float = 80

        /// libwebp's quality scale, 0…100, for lossy encoding. Values outside it are
        /// clamped, at initialisation and on assignment, like `ImageEncoders.JPEG.quality`.
        ///
        /// Ignored when `lossless`: the pixels come out exact whatever it says, and the
        /// effort is fixed at libwebp's default lossless preset (level 6, what
        /// `cwebp -lossless` uses).
        package var quality: Float {
            didSet { quality = Self.clamp(quality) }
        }
        /// Writes VP8L, which keeps every pixel exactly: for screenshots, drawings and
        /// anything that will be edited again. Usually larger than lossy for photos.
        package var lossless: Bool

        /// Always `.webp`.
        public var format: ImageFormat { .webp }

        /// Makes an encoder; `quality` is clamped to 0…100 and must not be NaN.
        public init(quality: Float = ImageEncoders.WebP.defaultQuality, lossless: Bool = false) {
            self.quality = Self.clamp(quality)
            self.lossless = lossless
        }

        private static func clamp(_ quality: Float) -> Float {
            precondition(!quality.isNaN, "WebP quality must be a number")
            return min(max(quality, 0), 100)
        }

        /// Encodes `bitmap`, with an alpha channel only when some pixel is not opaque.
        ///
        /// `WebPConfig.exact` is left off: the bitmap is premultiplied, so a fully
        /// transparent pixel has no colour to keep (it reaches libwebp as 0, 0, 0, 0) and
        /// decodes premultiplied to zero whatever RGB the file stores there. Off, libwebp
        /// may pick whatever RGB compresses best under those pixels, for a smaller file
        /// that decodes to the same bitmap.
        public func encode(_ bitmap: Bitmap) throws(ImagoError) -> Data {
            var config = WebPConfig()
            let configured = lossless
                ? WebPConfigInit(&config) != 0 && WebPConfigLosslessPreset(&config, 6) != 0
                : WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, quality) != 0
            guard configured, WebPValidateConfig(&config) != 0 else {
                throw Self.failure("the libwebp library does not match the headers Imago was built with")
            }

            var picture = WebPPicture()
            guard WebPPictureInit(&picture) != 0 else {
                throw Self.failure("the libwebp library does not match the headers Imago was built with")
            }
            defer { WebPPictureFree(&picture) }
            // Clamping, not trapping, for absurd sizes: libwebp refuses anything over
            // 16383 pixels a side with BAD_DIMENSION.
            picture.width = Int32(clamping: bitmap.width)
            picture.height = Int32(clamping: bitmap.height)
            // Importing straight into the form the encoder works in (ARGB for lossless,
            // YUV for lossy) saves a conversion of the whole picture inside WebPEncode.
            picture.use_argb = config.lossless

            let alpha = bitmap.hasAlpha
            let pixels = bitmap.straightAlphaPixels(alpha: alpha)
            let imported = pixels.withUnsafeBufferPointer { p in
                alpha
                    ? WebPPictureImportRGBA(&picture, p.baseAddress, Int32(clamping: bitmap.width * 4))
                    : WebPPictureImportRGB(&picture, p.baseAddress, Int32(clamping: bitmap.width * 3))
            }
            guard imported != 0 else { throw Self.failure(picture.error_code) }

            var writer = WebPMemoryWriter()
            WebPMemoryWriterInit(&writer)
            defer { WebPMemoryWriterClear(&writer) }
            picture.writer = WebPMemoryWrite
            let encoded = withUnsafeMutablePointer(to: &writer) { writer in
                picture.custom_ptr = UnsafeMutableRawPointer(writer)
                defer { picture.custom_ptr = nil }
                return WebPEncode(&config, &picture)
            }
            guard encoded != 0, let bytes = writer.mem else { throw Self.failure(picture.error_code) }
            return Data(bytes: bytes, count: writer.size)
        }

        /// A failure Imago found itself, without a code from libwebp.
        private static func failure(_ reason: String) -> ImagoError {
            .encodingFailed(format: .webp, reason: reason, codec: nil)
        }

        /// libwebp gives only a code: the reason is its header's description, reworded,
        /// and the codec's word is the code's name.
        private static func failure(_ code: WebPEncodingError) -> ImagoError {
            let reason = switch code {
            case VP8_ENC_ERROR_OUT_OF_MEMORY: "out of memory"
            case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: "out of memory while writing the bitstream"
            case VP8_ENC_ERROR_NULL_PARAMETER: "a required parameter was missing"
            case VP8_ENC_ERROR_INVALID_CONFIGURATION: "the configuration is invalid"
            case VP8_ENC_ERROR_BAD_DIMENSION: "the size is not encodable (WebP allows 1 to 16383 pixels a side)"
            case VP8_ENC_ERROR_PARTITION0_OVERFLOW: "the first partition is over 512 KiB; try a lower quality"
            case VP8_ENC_ERROR_PARTITION_OVERFLOW: "a partition is over 16 MiB; try a lower quality"
            case VP8_ENC_ERROR_BAD_WRITE: "the output could not be written"
            case VP8_ENC_ERROR_FILE_TOO_BIG: "the file would be over 4 GiB"
            case VP8_ENC_ERROR_USER_ABORT: "encoding was cancelled"
            default: "libwebp failed (error \(code.rawValue))"
            }
            return .encodingFailed(format: .webp, reason: reason, codec: .init(library: "libwebp", message: name(code)))
        }

        /// The error code's name in libwebp's header.
        static func name(_ code: WebPEncodingError) -> String {
            switch code {
            case VP8_ENC_OK: "VP8_ENC_OK"
            case VP8_ENC_ERROR_OUT_OF_MEMORY: "VP8_ENC_ERROR_OUT_OF_MEMORY"
            case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY: "VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY"
            case VP8_ENC_ERROR_NULL_PARAMETER: "VP8_ENC_ERROR_NULL_PARAMETER"
            case VP8_ENC_ERROR_INVALID_CONFIGURATION: "VP8_ENC_ERROR_INVALID_CONFIGURATION"
            case VP8_ENC_ERROR_BAD_DIMENSION: "VP8_ENC_ERROR_BAD_DIMENSION"
            case VP8_ENC_ERROR_PARTITION0_OVERFLOW: "VP8_ENC_ERROR_PARTITION0_OVERFLOW"
            case VP8_ENC_ERROR_PARTITION_OVERFLOW: "VP8_ENC_ERROR_PARTITION_OVERFLOW"
            case VP8_ENC_ERROR_BAD_WRITE: "VP8_ENC_ERROR_BAD_WRITE"
            case VP8_ENC_ERROR_FILE_TOO_BIG: "VP8_ENC_ERROR_FILE_TOO_BIG"
            case VP8_ENC_ERROR_USER_ABORT: "VP8_ENC_ERROR_USER_ABORT"
            default: "WebPEncodingError \(code.rawValue)"
            }
        }
    }
}
#endif
