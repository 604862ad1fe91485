// Apple platforms only: the system codecs through ImageIO, behind the same
// `ImageDecoding` protocol, size guard and rules as the Linux decoders: which image of
// a file is shown (`ImageSourceRules.selection`), how large it is decoded
// (`ImageSourceRules.decodedLongestSide`), frame delays. This file only reads what
// ImageIO reports and asks it for pixels.
#if canImport(ImageIO)
import CoreGraphics
import Foundation
import ImageIO

extension ImageDecoders {
    /// Decodes every format ImageIO knows (JPEG, PNG, GIF, WebP, HEIC, AVIF, …).
    @_spi(Internals) public struct ImageIO: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes every detected format but SVG, which ImageIO does not rasterise, and
        /// JPEG XL before the systems whose ImageIO reads it.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format != nil && format != .svg && (format != .jxl || Self.readsJPEGXL)
        }

        /// Whether ImageIO reads JPEG XL ("public.jpeg-xl"): from iOS 17 and macOS 14 on.
        private static var readsJPEGXL: Bool {
            if #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *) { return true }
            return false
        }

        /// Decodes the image the file shows: one image, or an animation's first frame and
        /// the rest on demand. Each image is refused from its header when over the size
        /// limit, and decoded at the target size where there is one (ImageIO's
        /// thumbnails), never in full first. Throws `decodingFailed` with ImageIO's status
        /// as the codec's word when it cannot read the data.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let format = ImageFormat.detect(data) ?? .jpeg
            let source = Self.source(data)
            guard let source, CGImageSourceGetCount(source) > 0 else {
                throw .decodingFailed(
                    format: format, reason: "ImageIO cannot read the data", codec: source.map { Self.codecMessage(CGImageSourceGetStatus($0)) })
            }
            let count = CGImageSourceGetCount(source)
            let file = CGImageSourceCopyProperties(source, nil) as? [CFString: Any] ?? [:]
            let sequence = file[kCGImagePropertyHEICSDictionary] ?? Self.avisDictionary.flatMap { file[$0] }
            let selection = ImageSourceRules.selection(
                format: format, count: count, primaryIndex: CGImageSourceGetPrimaryImageIndex(source), isSequence: sequence != nil,
                target: options.targetSize) { Self.entry(source, $0) }
            guard case .animation = selection else {
                guard case .still(let index) = selection else { preconditionFailure("a selection is a still or an animation") }
                let (bitmap, orientation) = try Self.frame(source, index, format: format, options: options)
                return DecodedImage(bitmap: bitmap, format: format, orientation: orientation)
            }
            try options.checkSize(width: 1, height: 1, frames: count)
            for index in 0..<count {
                guard let entry = Self.entry(source, index) else { throw Self.damaged(source, index, format: format) }
                try options.checkSize(width: entry.width, height: entry.height)
            }
            let (first, orientation) = try Self.frame(source, 0, format: format, options: options)
            let durations = (0..<count).map { Self.duration(source, $0) }
            let loopCount = Self.loopCount(file)
            let animation = DecodedImage.AnimatedFrames(
                frameCount: count, durations: durations, loopCount: loopCount, width: first.width, height: first.height,
                retainedCost: data.count
            ) { () throws(ImagoError) -> any FrameProducing in
                guard let source = Self.source(data) else { throw .decodingFailed(format: format, reason: "ImageIO cannot read the data", codec: nil) }
                return ImageIOFrames(source: source, count: count, format: format, options: options)
            }
            return DecodedImage(
                firstFrame: .init(bitmap: first, duration: durations[0]), animation: animation, loopCount: loopCount,
                format: format, orientation: orientation)
        }

        private static func source(_ data: Data) -> CGImageSource? {
            CGImageSourceCreateWithData(data as CFData, [kCGImageSourceShouldCache: false] as CFDictionary)
        }

        /// The image at `index` as its header describes it; nil when there is no header.
        private static func entry(_ source: CGImageSource, _ index: Int) -> ImageSourceRules.Entry? {
            guard let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any],
                  let width = properties[kCGImagePropertyPixelWidth] as? Int,
                  let height = properties[kCGImagePropertyPixelHeight] as? Int
            else { return nil }
            return .init(width: width, height: height, depth: properties[kCGImagePropertyDepth] as? Int ?? 8)
        }

        /// Decodes the image at `index`, upright unless the options say otherwise, at the
        /// size the target asks for: refused from its header when over the size limit.
        static func frame(
            _ source: CGImageSource, _ index: Int, format: ImageFormat, options: DecodingOptions
        ) throws(ImagoError) -> (Bitmap, ImageOrientation) {
            guard let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any],
                  let width = properties[kCGImagePropertyPixelWidth] as? Int,
                  let height = properties[kCGImagePropertyPixelHeight] as? Int
            else { throw damaged(source, index, format: format) }
            try options.checkSize(width: width, height: height)
            let orientation = (properties[kCGImagePropertyOrientation] as? Int).flatMap(ImageOrientation.init(rawValue:)) ?? .up
            let upright = options.appliesOrientation && orientation.swapsDimensions ? (height, width) : (width, height)
            if let side = ImageSourceRules.decodedLongestSide(width: upright.0, height: upright.1, target: options.targetSize) {
                let thumbnailOptions: [CFString: Any] = [
                    kCGImageSourceCreateThumbnailFromImageAlways: true, kCGImageSourceThumbnailMaxPixelSize: side,
                    kCGImageSourceCreateThumbnailWithTransform: options.appliesOrientation, kCGImageSourceShouldCacheImmediately: true,
                ]
                guard let image = CGImageSourceCreateThumbnailAtIndex(source, index, thumbnailOptions as CFDictionary) else {
                    throw damaged(source, index, format: format)
                }
                return (try Bitmap.drawing(image, format: format), orientation)
            }
            guard let image = CGImageSourceCreateImageAtIndex(source, index, [kCGImageSourceShouldCache: false] as CFDictionary) else {
                throw damaged(source, index, format: format)
            }
            let bitmap = try Bitmap.drawing(image, format: format)
            return (options.appliesOrientation ? bitmap.applying(orientation) : bitmap, orientation)
        }

        static func damaged(_ source: CGImageSource, _ index: Int, format: ImageFormat) -> ImagoError {
            .decodingFailed(format: format, reason: "image \(index) is damaged", codec: codecMessage(CGImageSourceGetStatusAtIndex(source, index)))
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

        /// The key of an AVIF sequence's dictionary, which ImageIO names only from iOS 17
        /// and macOS 14 on; nil before, where no file has one to find.
        private static var avisDictionary: CFString? {
            if #available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, visionOS 1.0, *) { return kCGImagePropertyAVISDictionary }
            return nil
        }

        /// The dictionaries of the animated formats, each with its delay keys (unclamped
        /// first) and its loop-count key. ImageIO has no AVIS keys of its own: an AVIF
        /// sequence's dictionary holds the HEICS ones.
        private static var animationDictionaries: [(dictionary: CFString, delays: [CFString], loopCount: CFString)] {
            let heicsKeys = ([kCGImagePropertyHEICSUnclampedDelayTime, kCGImagePropertyHEICSDelayTime], kCGImagePropertyHEICSLoopCount)
            return [
                (kCGImagePropertyGIFDictionary, [kCGImagePropertyGIFUnclampedDelayTime, kCGImagePropertyGIFDelayTime], kCGImagePropertyGIFLoopCount),
                (kCGImagePropertyPNGDictionary, [kCGImagePropertyAPNGUnclampedDelayTime, kCGImagePropertyAPNGDelayTime], kCGImagePropertyAPNGLoopCount),
                (kCGImagePropertyWebPDictionary, [kCGImagePropertyWebPUnclampedDelayTime, kCGImagePropertyWebPDelayTime], kCGImagePropertyWebPLoopCount),
                (kCGImagePropertyHEICSDictionary, heicsKeys.0, heicsKeys.1),
            ] + (avisDictionary.map { [($0, heicsKeys.0, heicsKeys.1)] } ?? [])
        }

        /// A frame's delay from its format's dictionary, as browsers play it.
        private static func duration(_ source: CGImageSource, _ index: Int) -> Double {
            let properties = CGImageSourceCopyPropertiesAtIndex(source, index, nil) as? [CFString: Any] ?? [:]
            for (dictionary, delays, _) in animationDictionaries {
                guard let entry = properties[dictionary] as? [CFString: Any] else { continue }
                return ImageSourceRules.frameDelay(delays.lazy.compactMap { entry[$0] as? Double }.first)
            }
            return ImageSourceRules.frameDelay(nil)
        }

        /// How many times the animation plays (0: forever), from the file's dictionary.
        private static func loopCount(_ file: [CFString: Any]) -> Int {
            for (dictionary, _, key) in animationDictionaries {
                if let entry = file[dictionary] as? [CFString: Any] { return max(0, entry[key] as? Int ?? 0) }
            }
            return 0
        }
    }
}

/// An animation's frames decoded one at a time as it plays, each as the first was
/// (size, orientation): memory follows what is shown, not the frame count.
private final class ImageIOFrames: FrameProducing {
    private let source: CGImageSource
    private let count: Int
    private let format: ImageFormat
    private let options: DecodingOptions
    private var index = 0

    init(source: CGImageSource, count: Int, format: ImageFormat, options: DecodingOptions) {
        self.source = source
        self.count = count
        self.format = format
        self.options = options
    }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < count else { return nil }
        defer { index += 1 }
        return try ImageDecoders.ImageIO.frame(source, index, format: format, options: options).0
    }
}
#endif
