#if os(Linux)
import CLibAVIF
import Foundation

/// AVIF through libavif (with dav1d for AV1 where libavif has it): stills and image
/// sequences with their frame durations, alpha, 8, 10 and 12 bits (converted to 8),
/// and the `irot`/`imir` transforms applied.
///
/// As in Chrome and Firefox, the rotation and mirroring boxes decide the orientation
/// and EXIF orientation inside an AVIF is not applied; libavif's strict checks (a
/// missing `pixi` box and the like, common in early files) are off, as in browsers.
/// A sequence plays forever: libavif 0.11 does not read the edit list that could say
/// otherwise.
public struct AVIFDecoder: ImageDecoding {
    /// Makes the decoder; it holds no state.
    public init() {}

    /// Takes data sniffed as AVIF, nothing else.
    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        format == .avif
    }

    /// The AV1 decoder libavif uses: dav1d when libavif was built with it (the
    /// fastest), else whichever it has.
    static let codecChoice: avifCodecChoice = avifCodecName(AVIF_CODEC_CHOICE_DAV1D, avifCodecFlags(AVIF_CODEC_FLAG_CAN_DECODE.rawValue)) != nil
        ? AVIF_CODEC_CHOICE_DAV1D : AVIF_CODEC_CHOICE_AUTO

    /// Decodes every frame. Throws `imageTooLarge` from the container's header (all
    /// frames counted), before any frame is decoded, and `decodingFailed` for truncated
    /// or corrupt data, with libavif's result and diagnostic as the codec's word.
    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
    }

    private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw Self.failure("no data", nil) }
        guard let decoder = avifDecoderCreate() else { throw Self.failure("out of memory", nil) }
        defer { avifDecoderDestroy(decoder) }
        decoder.pointee.codecChoice = Self.codecChoice
        decoder.pointee.maxThreads = 1  // decoding is already spread over the decoding queue
        decoder.pointee.strictFlags = avifStrictFlags(AVIF_STRICT_DISABLED.rawValue)
        decoder.pointee.ignoreXMP = AVIF_TRUE
        // libavif's own guard, tightened to Imago's limit for one frame.
        decoder.pointee.imageSizeLimit = UInt32(clamping: min(options.maximumPixelCount, Int(decoder.pointee.imageSizeLimit)))

        func fail(_ result: avifResult, _ reason: String) -> ImagoError {
            let name = avifResultToString(result).map { String(cString: $0) } ?? "error \(result.rawValue)"
            let detail = withUnsafeBytes(of: decoder.pointee.diag.error) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            return Self.failure(reason, detail.isEmpty ? name : "\(name): \(detail)")
        }

        var result = avifDecoderSetIOMemory(decoder, base, bytes.count)
        guard result == AVIF_RESULT_OK else { throw fail(result, "libavif could not read the data") }
        result = avifDecoderParse(decoder)
        guard result == AVIF_RESULT_OK else {
            throw fail(result, result == AVIF_RESULT_TRUNCATED_DATA ? "the data ends before the image does" : "the container is malformed")
        }
        guard let header = decoder.pointee.image else { throw Self.failure("the file holds no image", nil) }
        let width = Int(header.pointee.width), height = Int(header.pointee.height)
        let count = max(Int(decoder.pointee.imageCount), 1)
        guard width > 0, height > 0 else { throw Self.failure("the header gives an empty image (\(width)×\(height))", nil) }
        try options.checkSize(width: width, height: height, frames: count)

        var frames: [DecodedImage.Frame] = []
        var orientation = ImageOrientation.up
        for index in 0..<count {
            result = avifDecoderNextImage(decoder)
            guard result == AVIF_RESULT_OK, let image = decoder.pointee.image else {
                throw fail(result, result == AVIF_RESULT_TRUNCATED_DATA
                    ? "the data ends before the image does" : "frame \(index + 1) could not be decoded")
            }
            // Every frame of a sequence has the size the header gave; a file whose
            // frames disagree is refused rather than trusted.
            guard Int(image.pointee.width) == width, Int(image.pointee.height) == height else {
                throw Self.failure("frame \(index + 1) is \(image.pointee.width)×\(image.pointee.height), not \(width)×\(height)", nil)
            }
            if index == 0 { orientation = Self.orientation(image.pointee) }
            let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
                var rgb = avifRGBImage()
                avifRGBImageSetDefaults(&rgb, image)
                rgb.format = AVIF_RGB_FORMAT_RGBA
                rgb.depth = 8
                rgb.alphaPremultiplied = AVIF_TRUE
                rgb.pixels = pixels.baseAddress!.assumingMemoryBound(to: UInt8.self)
                rgb.rowBytes = UInt32(width * 4)
                let converted = avifImageYUVToRGB(image, &rgb)
                guard converted == AVIF_RESULT_OK else { throw fail(converted, "frame \(index + 1) could not be converted to RGBA") }
            }
            let upright = options.appliesOrientation ? bitmap.applying(orientation) : bitmap
            let duration = count > 1 ? decoder.pointee.imageTiming.duration : 0
            frames.append(DecodedImage.Frame(bitmap: upright, duration: duration.isFinite && duration > 0 ? duration : 0.1))
        }
        return DecodedImage(frames: frames, loopCount: 0, format: .avif, orientation: orientation)
    }

    /// The EXIF orientation equal to the file's `irot` (anticlockwise quarter turns)
    /// followed by its `imir` (mode 0: top and bottom exchanged; 1: left and right),
    /// the order the MIAF rules fix.
    static func orientation(_ image: avifImage) -> ImageOrientation {
        let flags = image.transformFlags
        let turns = flags & avifTransformFlags(AVIF_TRANSFORM_IROT.rawValue) != 0 ? Int(image.irot.angle & 3) : 0
        let mirror: Int? = flags & avifTransformFlags(AVIF_TRANSFORM_IMIR.rawValue) != 0 ? Int(image.imir.mode & 1) : nil
        return orientation(quarterTurnsAnticlockwise: turns, mirror: mirror)
    }

    /// The same for figures already read: `mirror` nil for none, 0 for a vertical
    /// flip (top and bottom exchanged), 1 for a horizontal one.
    static func orientation(quarterTurnsAnticlockwise turns: Int, mirror: Int?) -> ImageOrientation {
        switch (turns & 3, mirror) {
        case (0, nil): .up
        case (1, nil): .left
        case (2, nil): .down
        case (3, nil): .right
        case (0, 1?): .upMirrored
        case (0, _?): .downMirrored
        case (1, 1?): .rightMirrored
        case (1, _?): .leftMirrored
        case (2, 1?): .downMirrored
        case (2, _?): .upMirrored
        case (3, 1?): .leftMirrored
        default: .rightMirrored
        }
    }

    static func failure(_ reason: String, _ message: String?) -> ImagoError {
        .decodingFailed(format: .avif, reason: reason, codec: message.map { .init(library: "libavif", message: $0) })
    }
}
#endif
