#if os(Linux) || canImport(ImageIO)
#if os(Linux)
import CLibPNG
#endif
import Foundation

extension ImageEncoders {
    /// Writes PNG: through libpng's simplified API on Linux, 8-bit RGBA, or RGB when
    /// every pixel is opaque (a quarter smaller, and what other tools expect of a
    /// photo); through ImageIO on Apple platforms.
    public struct PNG: ImageEncoding {
        /// Always `.png`.
        public var format: ImageFormat { .png }

        /// Makes the encoder; it holds no state.
        public init() {}

        /// Encodes `bitmap`; a failure carries the codec library's message as its word.
        public func encode(_ bitmap: Bitmap) throws(ImagoError) -> Data {
            #if os(Linux)
            try encodeWithLibPNG(bitmap)
            #else
            try ImageIOEncoding.encode(bitmap, as: .png, ignoringAlpha: !bitmap.hasAlpha)
            #endif
        }

        #if os(Linux)
        private func encodeWithLibPNG(_ bitmap: Bitmap) throws(ImagoError) -> Data {
            let alpha = bitmap.hasAlpha
            let pixels = bitmap.straightAlphaPixels(alpha: alpha)
            let rowBytes = Int32(bitmap.width * (alpha ? 4 : 3))
            var image = png_image()
            image.version = UInt32(PNG_IMAGE_VERSION)
            image.width = UInt32(bitmap.width)
            image.height = UInt32(bitmap.height)
            image.format = UInt32(alpha ? PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA : PNG_FORMAT_FLAG_COLOR)
            defer { png_image_free(&image) }
            // Asking for the size first lets the file be written into one buffer.
            var size = 0
            guard png_image_write_to_memory(&image, nil, &size, 0, pixels, rowBytes, nil) != 0 else {
                throw failure(image)
            }
            var data = Data(count: size)
            let written = data.withUnsafeMutableBytes { out in
                png_image_write_to_memory(&image, out.baseAddress, &size, 0, pixels, rowBytes, nil)
            }
            guard written != 0 else { throw failure(image) }
            data.count = size
            return data
        }

        /// libpng's message as the reason, and as the codec's word.
        private func failure(_ image: png_image) -> ImagoError {
            guard let message = image.failureMessage else {
                return .encodingFailed(format: .png, reason: "libpng failed without a message", codec: nil)
            }
            return .encodingFailed(format: .png, reason: message, codec: .init(library: "libpng", message: message))
        }
        #endif
    }
}

#if os(Linux)
extension png_image {
    /// libpng's message for the last failure, if it left one.
    var failureMessage: String? {
        var message = self.message
        let text = withUnsafeBytes(of: &message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return text.isEmpty ? nil : text
    }
}
#endif
#endif
