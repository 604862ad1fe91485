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

    /// Takes every detected format but SVG, which ImageIO does not rasterise.
    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        format != nil && format != .svg
    }

    /// Decodes every frame, refusing an image over the size limit from its header.
    /// Throws `decodingFailed` with ImageIO's status as the codec's word when it
    /// cannot read the data.
    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        let format = ImageFormat.detect(data) ?? .jpeg
        let sourceOptions = [kCGImageSourceShouldCache: false] as CFDictionary
        let source = CGImageSourceCreateWithData(data as CFData, sourceOptions)
        guard let source, CGImageSourceGetCount(source) > 0,
              let properties = CGImageSourceCopyPropertiesAtIndex(source, 0, nil) as? [CFString: Any],
              let width = properties[kCGImagePropertyPixelWidth] as? Int,
              let height = properties[kCGImagePropertyPixelHeight] as? Int
        else {
            throw .decodingFailed(
                format: format, reason: "ImageIO cannot read the data",
                codec: source.map { Self.codecMessage(CGImageSourceGetStatus($0)) })
        }
        let count = CGImageSourceGetCount(source)
        try options.checkSize(width: width, height: height, frames: count)
        let orientation = (properties[kCGImagePropertyOrientation] as? Int).flatMap(ImageOrientation.init(rawValue:)) ?? .up

        var frames: [DecodedImage.Frame] = []
        for index in 0..<count {
            guard let image = CGImageSourceCreateImageAtIndex(source, index, sourceOptions) else {
                throw .decodingFailed(
                    format: format, reason: "frame \(index) is damaged",
                    codec: Self.codecMessage(CGImageSourceGetStatusAtIndex(source, index)))
            }
            var bitmap = try Bitmap.drawing(image, format: format)
            if options.appliesOrientation { bitmap = bitmap.applying(orientation) }
            frames.append(.init(bitmap: bitmap, duration: Self.duration(source, index)))
        }
        return DecodedImage(frames: frames, loopCount: 0, format: format, orientation: orientation)
    }

    /// ImageIO's word on a source or frame: it has no messages, only a status, whose
    /// name stands for one.
    private static func codecMessage(_ status: CGImageSourceStatus) -> ImagoError.CodecMessage {
        let name = switch status {
        case .statusUnexpectedEOF: "kCGImageStatusUnexpectedEOF"
        case .statusInvalidData: "kCGImageStatusInvalidData"
        case .statusUnknownType: "kCGImageStatusUnknownType"
        case .statusReadingHeader: "kCGImageStatusReadingHeader"
        case .statusIncomplete: "kCGImageStatusIncomplete"
        case .statusComplete: "kCGImageStatusComplete"
        @unknown default: "CGImageSourceStatus \(status.rawValue)"
        }
        return .init(library: "ImageIO", message: name)
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
