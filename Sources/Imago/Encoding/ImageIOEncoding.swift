// Apple platforms only: the encoders' way into ImageIO. Choosing an encoder, its
// settings, compositing JPEG's background and writing files atomically are
// platform-neutral and shared with Linux.
#if canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

enum ImageIOEncoding {
    /// Encodes `bitmap` with ImageIO's writer for `format` (JPEG or PNG).
    /// `ignoringAlpha` skips the fourth byte of each pixel, as for a bitmap already
    /// flattened onto a background; `quality` is ImageIO's 0…1 scale.
    static func encode(
        _ bitmap: Bitmap, as format: ImageFormat, ignoringAlpha: Bool, quality: Double? = nil, progressive: Bool = false
    ) throws(ImagoError) -> Data {
        let type = format == .jpeg ? "public.jpeg" : "public.png"
        guard let image = bitmap.makeCGImage(alpha: ignoringAlpha ? .noneSkipLast : .premultipliedLast) else {
            throw .encodingFailed(format: format, reason: "Core Graphics could not wrap the pixels", codec: nil)
        }
        let output = NSMutableData()
        guard let destination = CGImageDestinationCreateWithData(output as CFMutableData, type as CFString, 1, nil) else {
            throw .encodingFailed(format: format, reason: "ImageIO has no writer for \(format.name) here", codec: nil)
        }
        var properties: [CFString: Any] = [:]
        if let quality { properties[kCGImageDestinationLossyCompressionQuality] = quality }
        if progressive { properties[kCGImagePropertyJFIFDictionary] = [kCGImagePropertyJFIFIsProgressive: true] }
        CGImageDestinationAddImage(destination, image, properties as CFDictionary)
        guard CGImageDestinationFinalize(destination) else {
            throw .encodingFailed(format: format, reason: "ImageIO could not write the image", codec: nil)
        }
        return output as Data
    }
}
#endif
