#if os(Linux)
import CLibJXL
import Foundation

extension ImageDecoders {
    /// JPEG XL through libjxl: stills and animations (frames composited by libjxl,
    /// with their durations and loop count), alpha, any bit depth (converted to 8),
    /// the codestream's orientation applied. A lossy (XYB) image is converted to sRGB
    /// by libjxl; a lossless one stored in another colour space (its own ICC
    /// profile, or an encoded one such as Display P3) is converted to sRGB through
    /// that profile, as a PNG with `iCCP` is. PQ and HLG (HDR) images, lossy or not,
    /// come out of libjxl in their own signal in 16 bits and are tone mapped as AVIF,
    /// HEIF and PNG's are.
    ///
    /// The image is decoded at full size and fitted to a target size afterwards
    /// (libjxl cannot decode smaller), so a thumbnail's memory budget counts the
    /// full-size frame. libjxl cannot be stopped in the middle of a frame: the
    /// deadline is checked between its steps (header, each frame). A parallel runner
    /// that refuses the rest of a frame's work at the deadline was tried: libjxl 0.7
    /// takes some steps' refusal for a broken invariant (`JXL_CHECK` around the DC
    /// smoothing) and aborts the process. Only the first
    /// frame is decoded up front; a scan of the frame headers gives the frame count
    /// and durations, and the other frames are decoded as they are played.
    @_spi(Internals) public struct JXL: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as JPEG XL (the codestream or its container), nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .jxl
        }

        /// Decodes the first frame, and for an animation keeps the data to decode the
        /// rest as they are played. Throws `imageTooLarge` and `tooManyFrames` from the
        /// headers before any frame is decoded, and `decodingFailed` for corrupt data.
        ///
        /// A still whose data ends early decodes as far as it goes, as browsers show
        /// it (libjxl's progressive rendering of what arrived: the whole image blurred
        /// once its low frequencies are in, for a lossy file, the groups received for a
        /// lossless one, the rest black, or transparent with alpha), and the image
        /// says `isPartial`; one
        /// that ends before libjxl can show anything, or before its frame, fails. An
        /// animation's frames are whole or not shown.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let deadline = options.deadline()
            let cursor = try JXLFrameCursor(bytes, options: options, keeping: nil, deadline: deadline)
            let info = cursor.info
            // An animation's frame headers are read without decoding any frame, for the
            // count and the durations; a still has one frame.
            let durations = info.have_animation != 0 ? try JXLFrameCursor.durations(bytes, info: info, options: options, deadline: deadline) : [0]
            cursor.allowsPartialFirstFrame = durations.count == 1
            guard let first = try cursor.nextFrame() else { throw Self.failure("the file holds no frame", nil) }
            let orientation = cursor.orientation
            let loopCount = info.have_animation != 0 ? Int(info.animation.num_loops) : 0
            let firstFrame = DecodedImage.Frame(bitmap: first, duration: durations[0])
            guard durations.count > 1 else {
                var image = DecodedImage(
                    firstFrame: firstFrame, animation: nil, loopCount: loopCount, format: .jxl, orientation: orientation,
                    isPartial: cursor.firstFrameIsPartial)
                if let note = cursor.colourNote { image.notes.append(note) }
                return image
            }
            let pinned = PinnedBytes(bytes)
            let animation = DecodedImage.AnimatedFrames(
                frameCount: durations.count, durations: durations, loopCount: loopCount,
                width: first.width, height: first.height, retainedCost: pinned.count,
                open: { () throws(ImagoError) in try JXLFrameCursor(pinned.buffer, options: options, keeping: pinned) })
            var image = DecodedImage(firstFrame: firstFrame, animation: animation, loopCount: loopCount, format: .jxl, orientation: orientation)
            if let note = cursor.colourNote { image.notes.append(note) }
            return image
        }

        static func failure(_ reason: String, _ message: String?) -> ImagoError {
            .decodingFailed(format: .jxl, reason: reason, codec: message.map { .init(library: "libjxl", message: $0) })
        }

        /// What a frame's decode holds a pixel: the RGBA bitmap (twice when it is
        /// turned) and libjxl 0.7's own buffers, measured with its tool `djxl` and with
        /// Imago on 16- and 36-megapixel files: a lossless (modular) image streams into
        /// the output, a lossy (XYB) one keeps about 3 bytes a pixel, and a lossy one
        /// with an alpha or other extra channel keeps the whole frame in floats: 35 to
        /// 42 bytes a pixel in all, measured (a 78 KB file of 16 megapixels took 654 MB;
        /// counted as 4 it was let through a thumbnail's 64 MiB).
        static func bytesPerPixel(_ info: JxlBasicInfo, turned: Bool) -> Int {
            let output = 4 * (turned ? 2 : 1)
            guard info.uses_original_profile == 0 else { return output }
            return output + (info.num_extra_channels > 0 ? 38 : 3)
        }
    }
}

/// libjxl open on data: the basic information read (size, orientation, animation),
/// then frames decoded in order as full canvases, premultiplied and turned upright.
final class JXLFrameCursor: FrameProducing {
    private let decoder: OpaquePointer
    private let jxl: LibJXL
    private let storage: PinnedBytes?
    private let options: DecodingOptions
    private let deadline: DecodeDeadline
    /// The codestream's basic information.
    let info: JxlBasicInfo
    /// The codestream's orientation, which libjxl is told to leave to Imago.
    let orientation: ImageOrientation
    /// The colour space the frames come out in when libjxl cannot give sRGB (a
    /// lossless image keeps its own): each frame is converted through it.
    private let colours: ColourDescription?
    /// The tone mapping of PQ or HLG frames, which come out in 16 bits for it: in 8,
    /// PQ's codes are steps a gradient shows as bands.
    private let toneMapping: HDRToneMapping?
    /// Why the frames' colour space was not converted, when it was not.
    private(set) var colourNote: String?
    /// Whether the first frame may be shown as far as the data goes (a still's),
    /// rather than fail when the data ends early.
    var allowsPartialFirstFrame = false
    /// Whether the first frame came from data that ended early.
    private(set) var firstFrameIsPartial = false
    private var frames = 0
    private var ended = false

    /// Reads the basic information from `bytes`, which must stay valid for the
    /// cursor's life (they are `keeping`'s when given), and checks the size against
    /// the limits. `deadline` stops the frames' decoding; none for an animation played
    /// after the decode returned.
    init(
        _ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions, keeping storage: PinnedBytes?, deadline: DecodeDeadline = .none
    ) throws(ImagoError) {
        let jxl = try LibJXL.shared.get()
        let (decoder, info) = try Self.open(
            bytes, jxl, events: JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_COLOR_ENCODING.rawValue | JXL_DEC_FRAME.rawValue | JXL_DEC_FULL_IMAGE.rawValue,
            options: options)
        // Destroyed here when this throws: `deinit` runs only for a cursor whose
        // properties were all set, and the colour space is one of them.
        let colourSpace: (colours: ColourDescription?, note: String?)
        var toneMapping: HDRToneMapping?
        do throws(ImagoError) {
            colourSpace = try Self.colourSpace(decoder, jxl, info)
            if case .toneMap(let mapping) = ColourManagement.plan(for: colourSpace.colours) {
                // The 16-bit samples beside what the frame holds already.
                let turned = options.appliesOrientation && info.orientation.rawValue > 1
                let bytes = ImageDecoders.JXL.bytesPerPixel(info, turned: turned) + 8
                try options.checkFullSizeMemory(Int(info.xsize) * Int(info.ysize) * bytes, format: .jxl)
                toneMapping = mapping
            }
        } catch {
            jxl.destroy(decoder)
            throw error
        }
        self.decoder = decoder
        self.jxl = jxl
        self.storage = storage
        self.options = options
        self.deadline = deadline
        self.info = info
        orientation = ImageOrientation(rawValue: Int(info.orientation.rawValue)) ?? .up
        colours = colourSpace.colours
        self.toneMapping = toneMapping
        colourNote = colourSpace.note
    }

    /// The colour encoding, which comes next: a lossy image's XYB is asked to come
    /// out in sRGB (grey for a grey image) rather than libjxl's default linear light,
    /// or, for PQ and HLG, in its own signal, which the tone mapping brings to sRGB
    /// (asked for sRGB, libjxl 0.7 clips a lossy image's highlights to yellow and
    /// white, and a lossless image's profile, read by Little CMS, puts reference
    /// white near black). The description to convert from when libjxl cannot give
    /// sRGB, or a note when it gives no profile either.
    private static func colourSpace(
        _ decoder: OpaquePointer, _ jxl: LibJXL, _ info: JxlBasicInfo
    ) throws(ImagoError) -> (colours: ColourDescription?, note: String?) {
        let status = jxl.processInput(decoder)
        guard status == JXL_DEC_COLOR_ENCODING else { throw failure(jxl, status, "the header is malformed") }
        var preferred = JxlColorEncoding()
        if jxl.encodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_ORIGINAL, &preferred) != JXL_DEC_SUCCESS
            || hdrDescription(preferred) == nil {
            preferred = JxlColorEncoding()
            preferred.color_space = info.num_color_channels == 1 ? JXL_COLOR_SPACE_GRAY : JXL_COLOR_SPACE_RGB
            preferred.white_point = JXL_WHITE_POINT_D65
            preferred.primaries = JXL_PRIMARIES_SRGB
            preferred.transfer_function = JXL_TRANSFER_FUNCTION_SRGB
            preferred.rendering_intent = JXL_RENDERING_INTENT_RELATIVE
        }
        // Not applied to an image stored in a colour space of its own (lossless),
        // whose pixels then come out in it: its profile says how to convert them.
        _ = jxl.setPreferredColorProfile(decoder, &preferred)
        var data = JxlColorEncoding()
        if jxl.encodedProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &data) == JXL_DEC_SUCCESS {
            if isSRGB(data) { return (nil, nil) }
            if let hdr = hdrDescription(data) { return (hdr, nil) }
        }
        var size = 0
        var profile = Data()
        if jxl.iccProfileSize(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, &size) == JXL_DEC_SUCCESS, size > 0 {
            profile = Data(count: size)
            let copied = profile.withUnsafeMutableBytes { buffer in
                jxl.colorAsICCProfile(decoder, nil, JXL_COLOR_PROFILE_TARGET_DATA, buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), size)
            }
            if copied != JXL_DEC_SUCCESS { profile = Data() }
        }
        if profile.isEmpty { return (nil, "JPEG XL: libjxl gave no profile for the image's colour space; its numbers are read as sRGB") }
        return (.icc(profile), nil)
    }

    /// PQ or HLG grey, or colour in primaries the tone mapping knows (BT.709,
    /// BT.2100, Display P3), as the codes of ITU-T H.273 (cICP) give them; nil for
    /// anything else. Grey, which libjxl hands over as equal red, green and blue,
    /// has no primaries to convert: BT.709's leave it as it is.
    private static func hdrDescription(_ encoding: JxlColorEncoding) -> ColourDescription? {
        guard encoding.white_point == JXL_WHITE_POINT_D65,
              encoding.transfer_function == JXL_TRANSFER_FUNCTION_PQ || encoding.transfer_function == JXL_TRANSFER_FUNCTION_HLG
        else { return nil }
        let primaries: Int
        switch (encoding.color_space, encoding.primaries) {
        case (JXL_COLOR_SPACE_GRAY, _), (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_SRGB): primaries = 1
        case (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_2100): primaries = 9
        case (JXL_COLOR_SPACE_RGB, JXL_PRIMARIES_P3): primaries = 12
        default: return nil
        }
        return .cicp(primaries: primaries, transfer: Int(encoding.transfer_function.rawValue))
    }

    deinit { jxl.destroy(decoder) }

    /// Whether pixels in `encoding` are sRGB's (or grey on sRGB's curve) already.
    private static func isSRGB(_ encoding: JxlColorEncoding) -> Bool {
        encoding.white_point == JXL_WHITE_POINT_D65 && encoding.transfer_function == JXL_TRANSFER_FUNCTION_SRGB
            && (encoding.color_space == JXL_COLOR_SPACE_GRAY || encoding.primaries == JXL_PRIMARIES_SRGB)
    }

    /// A decoder on `bytes` subscribed to `events`, run to the basic information,
    /// which is checked against the limits.
    private static func open(
        _ bytes: UnsafeBufferPointer<UInt8>, _ jxl: LibJXL, events: UInt32, options: DecodingOptions
    ) throws(ImagoError) -> (OpaquePointer, JxlBasicInfo) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw ImageDecoders.JXL.failure("no data", nil) }
        guard let decoder = jxl.create(nil) else { throw ImageDecoders.JXL.failure("out of memory", nil) }
        do throws(ImagoError) {
            guard jxl.subscribeEvents(decoder, Int32(bitPattern: events)) == JXL_DEC_SUCCESS,
                  jxl.setKeepOrientation(decoder, 1) == JXL_DEC_SUCCESS,
                  jxl.setUnpremultiplyAlpha(decoder, 1) == JXL_DEC_SUCCESS,
                  jxl.setInput(decoder, base, bytes.count) == JXL_DEC_SUCCESS
            else { throw ImageDecoders.JXL.failure("libjxl refused the settings", nil) }
            // The input is left open: on data that ends early libjxl then asks for
            // more (reported as truncation) rather than failing with a line on
            // standard error, as Debian's build does for every failure.
            let status = jxl.processInput(decoder)
            guard status == JXL_DEC_BASIC_INFO else { throw failure(jxl, status, "the header is malformed") }
            var info = JxlBasicInfo()
            guard jxl.getBasicInfo(decoder, &info) == JXL_DEC_SUCCESS else { throw ImageDecoders.JXL.failure("the header is malformed", nil) }
            let width = Int(info.xsize), height = Int(info.ysize)
            guard width > 0, height > 0 else { throw ImageDecoders.JXL.failure("the header gives an empty image (\(width)×\(height))", nil) }
            try options.checkSize(width: width, height: height)
            let turned = options.appliesOrientation && info.orientation.rawValue > 1
            try options.checkFullSizeMemory(width * height * ImageDecoders.JXL.bytesPerPixel(info, turned: turned), format: .jxl)
            return (decoder, info)
        } catch {
            jxl.destroy(decoder)
            throw error
        }
    }

    /// The failure for an unexpected `status`: the data ended early, or libjxl
    /// found it corrupt.
    private static func failure(_ jxl: LibJXL, _ status: JxlDecoderStatus, _ reason: String) -> ImagoError {
        switch status {
        case JXL_DEC_NEED_MORE_INPUT: ImageDecoders.JXL.failure("the data ends before the image does", nil)
        case JXL_DEC_ERROR: ImageDecoders.JXL.failure(reason, "JXL_DEC_ERROR")
        default: ImageDecoders.JXL.failure(reason, "unexpected status \(status.rawValue)")
        }
    }

    /// Each displayed frame's duration, from the frame headers alone (no frame is
    /// decoded): as browsers play them, missing or near-zero durations are 100 ms.
    /// Throws `tooManyFrames` as soon as the count passes the limit.
    static func durations(
        _ bytes: UnsafeBufferPointer<UInt8>, info: JxlBasicInfo, options: DecodingOptions, deadline: DecodeDeadline
    ) throws(ImagoError) -> [Double] {
        let jxl = try LibJXL.shared.get()
        let (decoder, _) = try open(bytes, jxl, events: JXL_DEC_BASIC_INFO.rawValue | JXL_DEC_FRAME.rawValue, options: options)
        defer { jxl.destroy(decoder) }
        let tick = info.animation.tps_numerator > 0 ? Double(info.animation.tps_denominator) / Double(info.animation.tps_numerator) : 0
        var durations: [Double] = []
        while true {
            let status = jxl.processInput(decoder)
            switch status {
            case JXL_DEC_FRAME:
                var header = JxlFrameHeader()
                guard jxl.getFrameHeader(decoder, &header) == JXL_DEC_SUCCESS else {
                    throw ImageDecoders.JXL.failure("frame \(durations.count + 1)'s header is malformed", nil)
                }
                durations.append(ImageSourceRules.frameDelay(Double(header.duration) * tick))
                if durations.count > options.maximumFrameCount {
                    throw .tooManyFrames(count: durations.count, limit: options.maximumFrameCount)
                }
                if durations.count % 64 == 0 { try deadline.check(.jxl) }
            case JXL_DEC_SUCCESS:
                guard !durations.isEmpty else { throw ImageDecoders.JXL.failure("the file holds no frame", nil) }
                return durations
            default:
                throw failure(jxl, status, "frame \(durations.count + 1) is malformed")
            }
        }
    }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard !ended else { return nil }
        let number = frames + 1
        try deadline.check(.jxl)
        var status = jxl.processInput(decoder)
        if status == JXL_DEC_SUCCESS {
            ended = true
            return nil
        }
        guard status == JXL_DEC_FRAME else { throw Self.failure(jxl, status, "frame \(number) is malformed") }
        status = jxl.processInput(decoder)
        guard status == JXL_DEC_NEED_IMAGE_OUT_BUFFER else { throw Self.failure(jxl, status, "frame \(number) is malformed") }
        let (width, height) = (Int(info.xsize), Int(info.ysize))
        let sampleBytes = toneMapping == nil ? 1 : 2
        var format = JxlPixelFormat(
            num_channels: 4, data_type: toneMapping == nil ? JXL_TYPE_UINT8 : JXL_TYPE_UINT16, endianness: JXL_NATIVE_ENDIAN, align: 0)
        var size = 0
        guard jxl.imageOutBufferSize(decoder, &format, &size) == JXL_DEC_SUCCESS, size == width * height * 4 * sampleBytes else {
            throw ImageDecoders.JXL.failure("frame \(number) is not the \(width)×\(height) the header gives", nil)
        }
        let (decoder, jxl, hasAlpha) = (self.decoder, self.jxl, info.alpha_bits > 0)
        let allowsPartial = number == 1 && allowsPartialFirstFrame
        var partial = false
        func decodeFrame(into buffer: UnsafeMutableRawPointer) throws(ImagoError) {
            // Pixels libjxl's rendering of a cut file does not reach stay transparent.
            if allowsPartial { memset(buffer, 0, size) }
            guard jxl.setImageOutBuffer(decoder, &format, buffer, size) == JXL_DEC_SUCCESS else {
                throw ImageDecoders.JXL.failure("libjxl refused the output buffer", nil)
            }
            let status = jxl.processInput(decoder)
            if status == JXL_DEC_NEED_MORE_INPUT, allowsPartial, jxl.flushImage(decoder) == JXL_DEC_SUCCESS {
                partial = true
                return
            }
            guard status == JXL_DEC_FULL_IMAGE else { throw Self.failure(jxl, status, "frame \(number) is corrupt") }
        }
        let converted: Bitmap
        if let toneMapping {
            let samples = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: width * height * 4)
            defer { samples.deallocate() }
            try decodeFrame(into: UnsafeMutableRawPointer(samples.baseAddress!))
            // Straight alpha, premultiplied as the samples are mapped.
            converted = try Bitmap.make(width: width, height: height) { pixels in
                toneMapping.render(samples.baseAddress!, width: width, height: height, rowLength: width * 4, into: pixels)
            }
        } else {
            // Straight alpha is converted before it is premultiplied.
            let straight = hasAlpha ? ColourManagement.plan(for: colours) : .none
            let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
                try decodeFrame(into: pixels.baseAddress!)
                if hasAlpha {
                    straight.convertAndPremultiply(pixels, count: width * height)
                }
            }
            if let colours, !straight.converts {
                let (result, note) = ColourManagement.convert(bitmap, description: colours)
                if let note, colourNote == nil { colourNote = note }
                converted = result
            } else {
                converted = bitmap
            }
        }
        frames += 1
        if partial {
            firstFrameIsPartial = true
            ended = true
        }
        try deadline.check(.jxl)
        return options.appliesOrientation ? converted.applying(orientation) : converted
    }
}

/// The libjxl functions the JPEG XL decoder calls, looked up once.
///
/// Opened at first use as libavif and libheif are: libjxl brings Highway, Brotli
/// and Little CMS with it, bound at load time, which most processes never need.
///
/// `@unchecked Sendable`: C function pointers, fixed once looked up, which libjxl
/// lets any thread call (each decode has its own decoder).
struct LibJXL: @unchecked Sendable {
    let create: @convention(c) (UnsafePointer<JxlMemoryManager>?) -> OpaquePointer?
    let destroy: @convention(c) (OpaquePointer?) -> Void
    let subscribeEvents: @convention(c) (OpaquePointer?, Int32) -> JxlDecoderStatus
    let setKeepOrientation: @convention(c) (OpaquePointer?, Int32) -> JxlDecoderStatus
    let setUnpremultiplyAlpha: @convention(c) (OpaquePointer?, Int32) -> JxlDecoderStatus
    let setInput: @convention(c) (OpaquePointer?, UnsafePointer<UInt8>?, Int) -> JxlDecoderStatus
    let closeInput: @convention(c) (OpaquePointer?) -> Void
    let processInput: @convention(c) (OpaquePointer?) -> JxlDecoderStatus
    let getBasicInfo: @convention(c) (OpaquePointer?, UnsafeMutablePointer<JxlBasicInfo>?) -> JxlDecoderStatus
    let getFrameHeader: @convention(c) (OpaquePointer?, UnsafeMutablePointer<JxlFrameHeader>?) -> JxlDecoderStatus
    let setPreferredColorProfile: @convention(c) (OpaquePointer?, UnsafePointer<JxlColorEncoding>?) -> JxlDecoderStatus
    let encodedProfile: @convention(c) (
        OpaquePointer?, UnsafePointer<JxlPixelFormat>?, JxlColorProfileTarget, UnsafeMutablePointer<JxlColorEncoding>?
    ) -> JxlDecoderStatus
    let iccProfileSize: @convention(c) (OpaquePointer?, UnsafePointer<JxlPixelFormat>?, JxlColorProfileTarget, UnsafeMutablePointer<Int>?) -> JxlDecoderStatus
    let colorAsICCProfile: @convention(c) (
        OpaquePointer?, UnsafePointer<JxlPixelFormat>?, JxlColorProfileTarget, UnsafeMutablePointer<UInt8>?, Int
    ) -> JxlDecoderStatus
    let imageOutBufferSize: @convention(c) (OpaquePointer?, UnsafePointer<JxlPixelFormat>?, UnsafeMutablePointer<Int>?) -> JxlDecoderStatus
    let setImageOutBuffer: @convention(c) (OpaquePointer?, UnsafePointer<JxlPixelFormat>?, UnsafeMutableRawPointer?, Int) -> JxlDecoderStatus
    let flushImage: @convention(c) (OpaquePointer?) -> JxlDecoderStatus

    /// libjxl, opened on first use.
    static let shared: Result<LibJXL, ImagoError> = Result { () throws(ImagoError) in
        let library = try SharedLibrary(["libjxl.so", "libjxl.so.0.7"], format: .jxl, package: "libjxl0.7")
        func load<F>(_ symbol: String) throws(ImagoError) -> F { try library.function(symbol, format: .jxl) }
        return try LibJXL(
            create: load("JxlDecoderCreate"),
            destroy: load("JxlDecoderDestroy"),
            subscribeEvents: load("JxlDecoderSubscribeEvents"),
            setKeepOrientation: load("JxlDecoderSetKeepOrientation"),
            setUnpremultiplyAlpha: load("JxlDecoderSetUnpremultiplyAlpha"),
            setInput: load("JxlDecoderSetInput"),
            closeInput: load("JxlDecoderCloseInput"),
            processInput: load("JxlDecoderProcessInput"),
            getBasicInfo: load("JxlDecoderGetBasicInfo"),
            getFrameHeader: load("JxlDecoderGetFrameHeader"),
            setPreferredColorProfile: load("JxlDecoderSetPreferredColorProfile"),
            encodedProfile: load("JxlDecoderGetColorAsEncodedProfile"),
            iccProfileSize: load("JxlDecoderGetICCProfileSize"),
            colorAsICCProfile: load("JxlDecoderGetColorAsICCProfile"),
            imageOutBufferSize: load("JxlDecoderImageOutBufferSize"),
            setImageOutBuffer: load("JxlDecoderSetImageOutBuffer"),
            flushImage: load("JxlDecoderFlushImage"))
    }
}
#endif
