#if os(Linux)
import CLibAVIF
import Foundation

extension ImageDecoders {
    /// AVIF through libavif (with dav1d for AV1 where libavif has it): stills and image
    /// sequences with their frame durations, alpha, 8, 10 and 12 bits (converted to 8),
    /// and the `irot`/`imir` transforms applied.
    ///
    /// As in Chrome and Firefox, the rotation and mirroring boxes decide the orientation
    /// and EXIF orientation inside an AVIF is not applied; libavif's strict checks (a
    /// missing `pixi` box and the like, common in early files) are off, as in browsers.
    /// A sequence plays forever: libavif 0.11 does not read the edit list that could say
    /// otherwise. Only the first frame is decoded up front; the frame count and timings
    /// come from the container, and the other frames are decoded as they are played.
    @_spi(Internals) public struct AVIF: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as AVIF, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .avif
        }

        /// Decodes the first frame, and for a sequence keeps the data to decode the rest
        /// as they are played. Throws `imageTooLarge` and `tooManyFrames` from the
        /// container's header, before any frame is decoded, and `decodingFailed` for
        /// truncated or corrupt data, with libavif's result and diagnostic as the codec's
        /// word.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let cursor = try AVIFFrameCursor(bytes, options: options, keeping: nil, deadline: options.deadline())
            guard let first = try cursor.nextFrame() else { throw Self.failure("the file holds no image", nil) }
            let durations = cursor.durations
            let orientation = cursor.orientation
            let firstFrame = DecodedImage.Frame(bitmap: first, duration: durations[0])
            guard durations.count > 1 else {
                var image = DecodedImage(firstFrame: firstFrame, animation: nil, loopCount: 0, format: .avif, orientation: orientation)
                if let note = cursor.colourNote { image.notes.append(note) }
                return image
            }
            let pinned = PinnedBytes(bytes)
            let animation = DecodedImage.AnimatedFrames(
                frameCount: durations.count, durations: durations, loopCount: 0,
                width: first.width, height: first.height, retainedCost: pinned.count,
                open: { () throws(ImagoError) in try AVIFFrameCursor(pinned.buffer, options: options, keeping: pinned) })
            var image = DecodedImage(firstFrame: firstFrame, animation: animation, loopCount: 0, format: .avif, orientation: orientation)
            if let note = cursor.colourNote { image.notes.append(note) }
            return image
        }

        /// The image's colours: its ICC profile (`colr` of type `prof`/`rICC`), else its
        /// CICP code points (`colr` of type `nclx`, or the AV1 sequence header's).
        static func colours(_ image: avifImage) -> ColourDescription? {
            if image.icc.size > 0, let data = image.icc.data { return .icc(Data(bytes: data, count: image.icc.size)) }
            return .cicp(primaries: Int(image.colorPrimaries), transfer: Int(image.transferCharacteristics))
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
}
/// libavif open on data: the header parsed (size, frame count, timings), then frames
/// decoded in order, converted to premultiplied RGBA and turned upright.
final class AVIFFrameCursor: FrameProducing {
    private let decoder: UnsafeMutablePointer<avifDecoder>
    private let avif: LibAVIF
    private let storage: PinnedBytes?
    private let options: DecodingOptions
    /// libavif has no way to stop a frame's decode midway, so the deadline is
    /// checked around each of its calls: before the AV1 decode, before the
    /// conversion to RGBA, and after it.
    private let deadline: DecodeDeadline
    let width: Int
    let height: Int
    /// Each frame's display time in seconds, from the container.
    let durations: [Double]
    /// The first frame's transforms; found when it is decoded.
    private(set) var orientation = ImageOrientation.up
    /// Why the file's colour description was ignored, if it was.
    private(set) var colourNote: String?
    private var index = 0

    /// Parses `bytes`, which must stay valid for the cursor's life (they are
    /// `keeping`'s when given). `deadline` stops the frames' decoding; none for a
    /// sequence played after the decode returned.
    init(
        _ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions, keeping storage: PinnedBytes?, deadline: DecodeDeadline = .none
    ) throws(ImagoError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw ImageDecoders.AVIF.failure("no data", nil) }
        let avif = try LibAVIF.shared.get()
        guard let decoder = avif.decoderCreate() else { throw ImageDecoders.AVIF.failure("out of memory", nil) }
        self.avif = avif
        self.decoder = decoder
        self.storage = storage
        self.options = options
        self.deadline = deadline
        decoder.pointee.codecChoice = avif.codecChoice
        decoder.pointee.maxThreads = 1  // decoding is already spread over the decoding queue
        decoder.pointee.strictFlags = avifStrictFlags(AVIF_STRICT_DISABLED.rawValue)
        decoder.pointee.ignoreXMP = AVIF_TRUE
        // libavif's own guard, tightened to Imago's limit for one frame.
        decoder.pointee.imageSizeLimit = UInt32(clamping: min(options.maximumPixelCount, Int(decoder.pointee.imageSizeLimit)))

        var result = avif.decoderSetIOMemory(decoder, base, bytes.count)
        guard result == AVIF_RESULT_OK else {
            let error = Self.fail(avif, decoder, result, "libavif could not read the data")
            avif.decoderDestroy(decoder)
            throw error
        }
        result = avif.decoderParse(decoder)
        guard result == AVIF_RESULT_OK else {
            let error = Self.fail(avif, decoder, result, result == AVIF_RESULT_TRUNCATED_DATA ? "the data ends before the image does" : "the container is malformed")
            avif.decoderDestroy(decoder)
            throw error
        }
        guard let header = decoder.pointee.image else {
            avif.decoderDestroy(decoder)
            throw ImageDecoders.AVIF.failure("the file holds no image", nil)
        }
        width = Int(header.pointee.width)
        height = Int(header.pointee.height)
        let count = max(Int(decoder.pointee.imageCount), 1)
        var durations: [Double] = []
        do throws(ImagoError) {
            guard width > 0, height > 0 else { throw ImageDecoders.AVIF.failure("the header gives an empty image (\(width)×\(height))", nil) }
            try options.checkSize(width: width, height: height, frames: count)
            let tiles = max(1, HEIFReferences.itemCount(ofType: "av01", in: bytes))
            try options.checkFullSizeMemory(
                Self.peakBytes(header.pointee, tiles: tiles, alpha: decoder.pointee.alphaPresent != AVIF_FALSE, still: count == 1, options: options),
                format: .avif)
            durations.reserveCapacity(count)
            for frame in 0..<count {
                var timing = avifImageTiming()
                let duration = count > 1 && avif.decoderNthImageTiming(decoder, UInt32(frame), &timing) == AVIF_RESULT_OK ? timing.duration : 0
                durations.append(duration.isFinite && duration > 0 ? duration : 0.1)
            }
        } catch {
            avif.decoderDestroy(decoder)
            throw error
        }
        self.durations = durations
    }

    deinit { avif.decoderDestroy(decoder) }

    /// `image` converted to premultiplied RGBA a band of rows (about a quarter of a
    /// million pixels) at a time and given to `stream`, for the rows it reads.
    ///
    /// Each band is converted with two rows more on either side where the image has
    /// them, and those are not kept: libavif upsamples 4:2:0 and 4:2:2 chroma with a
    /// bilinear filter (libyuv's), which at a band's edge would otherwise stand in for
    /// the neighbouring rows, so the rows kept are those of the whole image converted.
    ///
    /// `straight` converts the colours of an image with alpha before they are
    /// premultiplied (`ColourManagement.Plan.convertAndPremultiply`).
    private func resample(
        _ image: UnsafeMutablePointer<avifImage>, through stream: Resampler.Stream, number: Int, straight: ColourManagement.Plan
    ) throws(ImagoError) -> Bitmap {
        let rows = stream.sourceRows
        let bandRows = Self.bandRows(width: width)
        let band = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bandBytes(width: width), alignment: 16)
        defer { band.deallocate() }
        // Bands start on even rows, as a view of subsampled chroma must.
        var top = rows.lowerBound & ~1
        while top < rows.upperBound {
            try deadline.check(.avif)
            let bottom = min(top + bandRows, rows.upperBound)
            let viewTop = max(0, top - 2), viewBottom = min(height, bottom + 2)
            var rect = avifCropRect(x: 0, y: UInt32(viewTop), width: UInt32(width), height: UInt32(viewBottom - viewTop))
            var view = avifImage()
            var result = avif.imageSetViewRect(&view, image, &rect)
            if result == AVIF_RESULT_OK {
                var rgb = avifRGBImage()
                avif.rgbImageSetDefaults(&rgb, &view)
                rgb.format = AVIF_RGB_FORMAT_RGBA
                rgb.depth = 8
                rgb.alphaPremultiplied = straight.converts ? AVIF_FALSE : AVIF_TRUE
                rgb.pixels = band.baseAddress!.assumingMemoryBound(to: UInt8.self)
                rgb.rowBytes = UInt32(width * 4)
                result = avif.imageYUVToRGB(&view, &rgb)
            }
            guard result == AVIF_RESULT_OK else { throw Self.fail(avif, decoder, result, "frame \(number) could not be converted to RGBA") }
            let pixels = band.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if straight.converts {
                let kept = UnsafeMutableRawBufferPointer(rebasing: band[(top - viewTop) * width * 4..<(bottom - viewTop) * width * 4])
                straight.convertAndPremultiply(kept, count: (bottom - top) * width)
            }
            for y in top..<bottom { stream.append(row: y, pixels + (y - viewTop) * width * 4) }
            top = bottom
        }
        try deadline.check(.avif)
        return stream.finish()
    }

    /// The rows of a band: an even number, so that every band starts on an even row.
    private static func bandRows(width: Int) -> Int { max(2, DecodeDeadline.rowsPerCheck(width: width) & ~1) }

    /// A band's RGBA, with its two rows either side.
    private static func bandBytes(width: Int) -> Int { width * (bandRows(width: width) + 4) * 4 }

    /// The stream a frame of `image` is converted into band by band: a still's
    /// thumbnail, not turned (the bands come in the stored order) nor tone mapped
    /// (which takes the whole 16-bit image); nil where the frame is converted whole.
    private static func bandedStream(
        _ image: avifImage, still: Bool, plan: ColourManagement.Plan, orientation: ImageOrientation, options: DecodingOptions
    ) -> Resampler.Stream? {
        if case .toneMap = plan { return nil }
        guard still, !options.appliesOrientation || orientation == .up, let target = options.targetSize else { return nil }
        return Resampler.stream(fitting: target, sourceWidth: Int(image.width), sourceHeight: Int(image.height))
    }

    /// What decoding a frame of `image` (as parsed) holds at once: an AV1 decoder
    /// for each tile, which libavif keeps until the frame is made (dav1d's context,
    /// about 400 KB with one thread), the tiles' planes and, for a grid, the image
    /// libavif assembles from them, then the RGBA bitmap, with a 16-bit one before it
    /// for tone mapping and a copy for a colour conversion or a turn (a still's
    /// thumbnail holds a band and its output instead). 1,024 tiles of 64 px (a 50 KB
    /// file): 461 MB counted, 455 MB measured.
    static func peakBytes(_ image: avifImage, tiles: Int, alpha: Bool, still: Bool, options: DecodingOptions) -> Int {
        let pixels = Int(image.width) * Int(image.height)
        // Samples a pixel, in halves: 4:4:4 six, 4:2:2 four, 4:2:0 three, grey two.
        let halves: Int = switch image.yuvFormat {
        case AVIF_PIXEL_FORMAT_YUV444: 6
        case AVIF_PIXEL_FORMAT_YUV422: 4
        case AVIF_PIXEL_FORMAT_YUV420: 3
        default: 2
        }
        let planes = pixels * (halves + (alpha ? 2 : 0)) * (image.depth > 8 ? 2 : 1) / 2
        let decoded = tiles * (400 << 10) + planes * (tiles > 1 ? 2 : 1)
        let plan = ColourManagement.plan(for: ImageDecoders.AVIF.colours(image))
        let orientation = ImageDecoders.AVIF.orientation(image)
        if let stream = bandedStream(image, still: still, plan: plan, orientation: orientation, options: options) {
            return decoded + stream.workingBytes + bandBytes(width: Int(image.width))
        }
        var copies = 1
        switch plan {
        case .toneMap: copies += image.depth > 8 ? 2 : 0
        case .transform: copies += 1
        default: break
        }
        if options.appliesOrientation && orientation != .up { copies += 1 }
        return decoded + pixels * 4 * copies
    }

    private static func fail(_ avif: LibAVIF, _ decoder: UnsafeMutablePointer<avifDecoder>, _ result: avifResult, _ reason: String) -> ImagoError {
        let name = avif.resultToString(result).map { String(cString: $0) } ?? "error \(result.rawValue)"
        let detail = withUnsafeBytes(of: decoder.pointee.diag.error) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ImageDecoders.AVIF.failure(reason, detail.isEmpty ? name : "\(name): \(detail)")
    }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < durations.count else { return nil }
        let number = index + 1
        // libavif scales a frame whose coded size differs from the container's
        // claim to the claim before handing it over: 64×64 of AV1 under an `ispe`
        // of 11000² became 484 MB of pixels, and more inside libavif. Its scaler
        // refuses a target wider or taller than the dimension limit, which nothing
        // else checks once the container is parsed (the size limit, which dav1d
        // checks too, stays): a limit one short of the claim refuses exactly that.
        decoder.pointee.imageDimensionLimit = UInt32(clamping: max(width, height) - 1)
        try deadline.check(.avif)
        let result = avif.decoderNextImage(decoder)
        guard result == AVIF_RESULT_OK, let image = decoder.pointee.image else {
            let error = Self.fail(avif, decoder, result, result == AVIF_RESULT_TRUNCATED_DATA
                ? "the data ends before the image does" : "frame \(number) could not be decoded")
            guard error.codecMessage?.message.contains("avifImageScale") == true else { throw error }
            throw ImageDecoders.AVIF.failure(
                "frame \(number) is not the \(width)×\(height) the container claims", error.codecMessage?.message)
        }
        // Every frame of a sequence has the size the header gave; a file whose
        // frames disagree is refused rather than trusted.
        guard Int(image.pointee.width) == width, Int(image.pointee.height) == height else {
            throw ImageDecoders.AVIF.failure("frame \(number) is \(image.pointee.width)×\(image.pointee.height), not \(width)×\(height)", nil)
        }
        if index == 0 { orientation = ImageDecoders.AVIF.orientation(image.pointee) }
        try deadline.check(.avif)
        let (width, height, decoder, avif) = (self.width, self.height, self.decoder, self.avif)
        let colours = ImageDecoders.AVIF.colours(image.pointee)
        let plan = ColourManagement.plan(for: colours)
        if case .ignored(let note) = plan { colourNote = note }
        // Straight alpha is converted before it is premultiplied; opaque pixels once
        // the image is made, a thumbnail's small. (Tone mapping premultiplies itself.)
        var straight = ColourManagement.Plan.none
        if image.pointee.alphaPlane != nil, case .transform = plan { straight = plan }
        // A still's thumbnail is converted a band of rows at a time into the streaming
        // resampler, and converted to sRGB once small: the YUV planes are all that is
        // held at full size.
        if let stream = Self.bandedStream(image.pointee, still: durations.count == 1, plan: plan, orientation: orientation, options: options) {
            var bitmap = try resample(image, through: stream, number: number, straight: straight)
            if !straight.converts, case .transform(let transform) = plan { bitmap = transform.apply(bitmap) }
            index += 1
            return bitmap
        }
        var bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
            var rgb = avifRGBImage()
            avif.rgbImageSetDefaults(&rgb, image)
            rgb.format = AVIF_RGB_FORMAT_RGBA
            if case .toneMap(let mapping) = plan {
                // PQ and HLG: 16 bits a channel, so the tone mapping sees all 10 or 12
                // (counted in `peakBytes`).
                let wide = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: width * height * 4)
                defer { wide.deallocate() }
                rgb.depth = 16
                rgb.alphaPremultiplied = AVIF_FALSE
                rgb.pixels = UnsafeMutableRawPointer(wide.baseAddress!).assumingMemoryBound(to: UInt8.self)
                rgb.rowBytes = UInt32(width * 8)
                let converted = avif.imageYUVToRGB(image, &rgb)
                guard converted == AVIF_RESULT_OK else { throw Self.fail(avif, decoder, converted, "frame \(number) could not be converted to RGBA") }
                mapping.render(wide.baseAddress!, width: width, height: height, rowLength: width * 4, into: pixels)
                return
            }
            rgb.depth = 8
            rgb.alphaPremultiplied = straight.converts ? AVIF_FALSE : AVIF_TRUE
            rgb.pixels = pixels.baseAddress!.assumingMemoryBound(to: UInt8.self)
            rgb.rowBytes = UInt32(width * 4)
            let converted = avif.imageYUVToRGB(image, &rgb)
            guard converted == AVIF_RESULT_OK else { throw Self.fail(avif, decoder, converted, "frame \(number) could not be converted to RGBA") }
            if straight.converts {
                straight.convertAndPremultiply(pixels, count: width * height)
            }
        }
        if !straight.converts, case .transform(let transform) = plan { bitmap = transform.apply(bitmap) }
        index += 1
        try deadline.check(.avif)
        return options.appliesOrientation ? bitmap.applying(orientation) : bitmap
    }
}
#endif
