// Apple platforms only: the system codecs through ImageIO, behind the same
// `ImageDecoding` protocol and the same size guard as the Linux decoders.
#if canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

/// Decodes every format ImageIO knows (JPEG, PNG, GIF, WebP, HEIC, AVIF, …).
public struct ImageIODecoder: ImageDecoding {
    /// Makes the decoder; it holds no state.
    public init() {}

    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        format != nil && format != .svg
    }

    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        let format = ImageFormat.detect(data) ?? .jpeg
        let sourceOptions = [kCGImageSourceShouldCache: false] as CFDictionary
        guard let source = CGImageSourceCreateWithData(data as CFData, sourceOptions),
              CGImageSourceGetCount(source) > 0,
              let properties = CGImageSourceCopyPropertiesAtIndex(source, 0, nil) as? [CFString: Any],
              let width = properties[kCGImagePropertyPixelWidth] as? Int,
              let height = properties[kCGImagePropertyPixelHeight] as? Int
        else { throw .decodingFailed(format: format, reason: "ImageIO cannot read the data") }
        let count = CGImageSourceGetCount(source)
        try options.checkSize(width: width, height: height, frames: count)
        let orientation = (properties[kCGImagePropertyOrientation] as? Int).flatMap(ImageOrientation.init(rawValue:)) ?? .up

        var frames: [DecodedImage.Frame] = []
        for index in 0..<count {
            guard let image = CGImageSourceCreateImageAtIndex(source, index, sourceOptions) else {
                throw .decodingFailed(format: format, reason: "frame \(index) is damaged")
            }
            var bitmap = try Bitmap.drawing(image, format: format)
            if options.appliesOrientation { bitmap = bitmap.applying(orientation) }
            frames.append(.init(bitmap: bitmap, duration: Self.duration(source, index)))
        }
        return DecodedImage(frames: frames, loopCount: 0, format: format, orientation: orientation)
    }

    /// A frame's delay from the GIF, PNG or WebP dictionary, clamped like browsers do.
    private static func duration(_ source: CGImageSource, _ index: Int) -> Double {
        guard let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any] else { return 0.1 }
        let dictionaries = [kCGImagePropertyGIFDictionary, kCGImagePropertyPNGDictionary, kCGImagePropertyWebPDictionary]
        for key in dictionaries {
            guard let entry = properties[key] as? [CFString: Any] else { continue }
            let delay = (entry[kCGImagePropertyGIFUnclampedDelayTime] as? Double)
                ?? (entry[kCGImagePropertyGIFDelayTime] as? Double)
                ?? (entry[kCGImagePropertyAPNGUnclampedDelayTime] as? Double)
                ?? (entry[kCGImagePropertyWebPUnclampedDelayTime] as? Double) ?? 0
            return delay <= 0.01 ? 0.1 : delay
        }
        return 0.1
    }
}
#endif
