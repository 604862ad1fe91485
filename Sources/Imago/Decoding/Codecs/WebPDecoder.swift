#if os(Linux)
import CLibWebP
import Foundation

extension ImageDecoders {
    /// WebP through libwebp: lossy, lossless, lossy with an alpha channel, and animations,
    /// with the EXIF orientation applied.
    ///
    /// Still images decode straight into the bitmap's buffer. Animations come out as full
    /// canvases, one per frame, composited by libwebp (blending and disposal done) as
    /// they are played (see `DecodedImage.AnimatedFrames`); the ANIM chunk's background colour is
    /// ignored and disposed areas become transparent, as the WebP container
    /// specification allows and browsers do.
    @_spi(Internals) public struct WebP: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as WebP (a RIFF container of type WEBP), nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .webp
        }

        /// Decodes a still or animated WebP. Throws `imageTooLarge` from the header, before
        /// any pixel buffer exists, and `decodingFailed` for corrupt data.
        ///
        /// A still whose data ends early decodes as far as it goes, as browsers show it:
        /// the rows received, the rest transparent, and the image says `isPartial`; one
        /// cut before its first row fails. An animation cut short plays the frames that
        /// arrived whole, as browsers play one still loading (and as a GIF cut short
        /// does here), and says `isPartial`; one cut before its first whole frame fails.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let deadline = options.deadline()
            guard let base = bytes.baseAddress, !bytes.isEmpty else { throw Self.failure("no data") }

            var config = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&config) != 0 else {
                throw Self.failure("the libwebp library does not match the headers Imago was built with")
            }
            try Self.check(WebPGetFeatures(base, bytes.count, &config.input))

            // The demuxer checks the whole RIFF container, which WebPDecode does not: a
            // still image whose metadata chunks are cut short would otherwise pass. Its
            // full-data mode refuses data shorter than the RIFF header says.
            var webpData = WebPData(bytes: base, size: bytes.count)
            var endsEarly = false
            let demux: OpaquePointer
            if let whole = WebPDemux(&webpData) {
                demux = whole
            } else {
                var state = WEBP_DEMUX_PARSE_ERROR
                let partial = WebPDemuxPartial(&webpData, &state)
                guard let partial, state != WEBP_DEMUX_DONE else {
                    WebPDemuxDelete(partial)
                    throw Self.failure("the RIFF container is malformed")
                }
                // A still cut short shows its rows received; an animation, the frames
                // that arrived whole.
                if config.input.has_animation != 0 {
                    let whole = state == WEBP_DEMUX_PARSED_HEADER ? Self.wholeFrames(partial, base: base, count: bytes.count) : nil
                    WebPDemuxDelete(partial)
                    guard let whole else { throw Self.failure("the data ends before the image does") }
                    return try decode(whole, options: options).markedPartial
                }
                guard state == WEBP_DEMUX_PARSED_HEADER || state == WEBP_DEMUX_PARSING_HEADER else {
                    WebPDemuxDelete(partial)
                    throw Self.failure("the data ends before the image does")
                }
                demux = partial
                endsEarly = true
            }
            defer { WebPDemuxDelete(demux) }

            let orientation = Self.orientation(demux)
            let appliedOrientation = options.appliesOrientation ? orientation : .up

            let colours = Self.profile(demux)
            // Straight alpha is converted before it is premultiplied; opaque pixels
            // once the image is made.
            let straight = config.input.has_alpha != 0 ? ColourManagement.plan(for: colours) : .none
            if config.input.has_animation != 0 {
                let animation = try decodeAnimation(
                    bytes, demux: demux, config: &config, orientation: orientation, options: options, deadline: deadline, straight: straight)
                return ColourManagement.convert(animation, description: straight.converts ? nil : colours)
            }

            let width = Int(config.input.width), height = Int(config.input.height)
            guard width > 0, height > 0 else { throw Self.failure("the header gives an empty image") }
            try options.checkSize(width: width, height: height)
            var (outWidth, outHeight) = (width, height)
            if let target = options.targetSize {
                // libwebp scales while decoding, into the final buffer; the size is the
                // fitted size of the upright image, turned back to the stored orientation.
                let swaps = appliedOrientation.swapsDimensions
                let layout = swaps
                    ? target.layout(sourceWidth: height, sourceHeight: width)
                    : target.layout(sourceWidth: width, sourceHeight: height)
                (outWidth, outHeight) = swaps ? (layout.scaledHeight, layout.scaledWidth) : (layout.scaledWidth, layout.scaledHeight)
                if (outWidth, outHeight) != (width, height) {
                    config.options.use_scaling = 1
                    config.options.scaled_width = Int32(outWidth)
                    config.options.scaled_height = Int32(outHeight)
                }
            }
            try options.checkMemory(outWidth * outHeight * 4 * (appliedOrientation == .up ? 1 : 2), format: .webp)
            let bitmap = try decodeStill(
                bytes, config: &config, width: outWidth, height: outHeight, deadline: deadline, endsEarly: endsEarly, straight: straight)
            try deadline.check(.webp)
            // libwebp has scaled already: a thumbnail converts only its own pixels.
            return ColourManagement.convert(
                DecodedImage(bitmap: bitmap.applying(appliedOrientation), format: .webp, orientation: orientation, isPartial: endsEarly),
                description: straight.converts ? nil : colours)
        }

        /// An animation cut short, as the container it would be had it ended after its
        /// last whole frame: the bytes up to the end of that frame's chunk, the RIFF
        /// size saying so. Nil when no frame arrived whole. What followed the frames
        /// (EXIF, XMP) is gone with the rest; the ICC profile and the animation's
        /// settings come before them.
        private static func wholeFrames(_ demux: OpaquePointer, base: UnsafePointer<UInt8>, count: Int) -> Data? {
            var end = 0
            var iterator = WebPIterator()
            var number: Int32 = 1
            while WebPDemuxGetFrame(demux, number, &iterator) != 0 {
                defer { WebPDemuxReleaseIterator(&iterator) }
                guard iterator.complete != 0, let start = iterator.fragment.bytes else { break }
                end = start - base + iterator.fragment.size
                number += 1
            }
            guard end > 12 else { return nil }
            // Chunks are padded to an even length.
            if end % 2 == 1, end < count { end += 1 }
            var data = Data(bytes: base, count: end)
            let riffSize = UInt32(end - 8).littleEndian
            withUnsafeBytes(of: riffSize) { data.replaceSubrange(4..<8, with: $0) }
            return data
        }

        /// The ICCP chunk's profile, or nil.
        private static func profile(_ demux: OpaquePointer) -> ColourDescription? {
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demux, "ICCP", 1, &iterator) != 0 else { return nil }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let start = iterator.chunk.bytes, iterator.chunk.size > 0 else { return nil }
            return .icc(Data(bytes: start, count: iterator.chunk.size))
        }

        /// Decodes a still image at `width` × `height` (the scaled size when
        /// `config.options.use_scaling` is set) into a new bitmap. With a deadline the
        /// data goes to libwebp's incremental decoder a slice at a time, and the
        /// deadline is checked between slices: libwebp has no other way to stop. Data
        /// that `endsEarly` goes to it too, and gives the rows it made, the rest
        /// transparent; none fails. With a `straight` plan that converts, libwebp's
        /// pixels come with straight alpha and are converted, then premultiplied.
        func decodeStill(
            _ bytes: UnsafeBufferPointer<UInt8>, config: inout WebPDecoderConfig, width: Int, height: Int, deadline: DecodeDeadline,
            endsEarly: Bool = false, straight: ColourManagement.Plan = .none
        ) throws(ImagoError) -> Bitmap {
            try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
                if endsEarly { pixels.initializeMemory(as: UInt8.self, repeating: 0) }
                // After every way out of the decode below (a failure's pixels are dropped).
                defer {
                    if straight.converts {
                        straight.convertAndPremultiply(pixels, count: width * height)
                    }
                }
                config.output.colorspace = straight.converts ? MODE_RGBA : MODE_rgbA
                // External memory: libwebp writes the rows into the bitmap itself, and
                // WebPFreeDecBuffer then frees only what libwebp allocated on its own.
                config.output.is_external_memory = 1
                config.output.u.RGBA.rgba = pixels.baseAddress!.assumingMemoryBound(to: UInt8.self)
                config.output.u.RGBA.stride = Int32(width * 4)
                config.output.u.RGBA.size = pixels.count
                guard deadline.nanoseconds != 0 || endsEarly else {
                    let status = WebPDecode(bytes.baseAddress, bytes.count, &config)
                    WebPFreeDecBuffer(&config.output)
                    try Self.check(status)
                    return
                }
                guard let incremental = WebPIDecode(nil, 0, &config) else {
                    WebPFreeDecBuffer(&config.output)
                    throw Self.failure("out of memory")
                }
                defer {
                    WebPIDelete(incremental)
                    WebPFreeDecBuffer(&config.output)
                }
                // The data is all there: each update hands libwebp the next slice of
                // the same buffer, in place. 16 KB is a few milliseconds of lossy
                // decoding at most; a lossless image can compress far better, so its
                // slices may hold more work (there is no finer place to stop it).
                var given = 0
                var status = VP8_STATUS_SUSPENDED
                while status == VP8_STATUS_SUSPENDED {
                    try deadline.check(.webp)
                    guard given < bytes.count else {
                        status = VP8_STATUS_NOT_ENOUGH_DATA
                        break
                    }
                    given = min(bytes.count, given + Self.slice)
                    status = WebPIUpdate(incremental, bytes.baseAddress, given)
                }
                if endsEarly, status == VP8_STATUS_NOT_ENOUGH_DATA {
                    var rows: Int32 = 0
                    guard WebPIDecGetRGB(incremental, &rows, nil, nil, nil) != nil, rows > 0 else { try Self.check(status); return }
                    return
                }
                try Self.check(status)
            }
        }

        /// The bytes handed to libwebp's incremental decoder between two deadline checks.
        static let slice = 16 << 10

        /// A frame's display time in seconds.
        ///
        /// Files written for browsers often say 0 ms (or 10 ms) and mean "as fast as is
        /// sensible"; Chrome, Firefox and Safari show frames of 10 ms or less for 100 ms,
        /// and so does Imago, so animations play at the speed their authors saw.
        static func frameDuration(milliseconds: Int) -> Double {
            milliseconds <= 10 ? 0.1 : Double(milliseconds) / 1000
        }

        /// The orientation in the EXIF chunk; `.up` without one, or when it is unreadable.
        private static func orientation(_ demux: OpaquePointer) -> ImageOrientation {
            var iterator = WebPChunkIterator()
            guard WebPDemuxGetChunk(demux, "EXIF", 1, &iterator) != 0 else { return .up }
            defer { WebPDemuxReleaseChunkIterator(&iterator) }
            guard let start = iterator.chunk.bytes else { return .up }
            var exif = UnsafeBufferPointer(start: start, count: iterator.chunk.size)
            // The specification says the chunk holds the TIFF block itself, but some
            // writers copy the JPEG APP1 payload, "Exif\0\0" prefix and all.
            let prefix: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0, 0]
            if exif.starts(with: prefix) {
                exif = UnsafeBufferPointer(rebasing: exif.dropFirst(prefix.count))
            }
            return ImageOrientation(exif: exif) ?? .up
        }

        static func check(_ status: VP8StatusCode) throws(ImagoError) {
            if status != VP8_STATUS_OK {
                throw .decodingFailed(
                    format: .webp, reason: reason(status), codec: .init(library: "libwebp", message: name(status)))
            }
        }

        /// The status code's name in libwebp's header, which stands for its message.
        static func name(_ status: VP8StatusCode) -> String {
            switch status {
            case VP8_STATUS_OK: "VP8_STATUS_OK"
            case VP8_STATUS_OUT_OF_MEMORY: "VP8_STATUS_OUT_OF_MEMORY"
            case VP8_STATUS_INVALID_PARAM: "VP8_STATUS_INVALID_PARAM"
            case VP8_STATUS_BITSTREAM_ERROR: "VP8_STATUS_BITSTREAM_ERROR"
            case VP8_STATUS_UNSUPPORTED_FEATURE: "VP8_STATUS_UNSUPPORTED_FEATURE"
            case VP8_STATUS_SUSPENDED: "VP8_STATUS_SUSPENDED"
            case VP8_STATUS_USER_ABORT: "VP8_STATUS_USER_ABORT"
            case VP8_STATUS_NOT_ENOUGH_DATA: "VP8_STATUS_NOT_ENOUGH_DATA"
            default: "VP8StatusCode \(status.rawValue)"
            }
        }

        /// libwebp's status as a sentence; it has no error messages of its own.
        static func reason(_ status: VP8StatusCode) -> String {
            switch status {
            case VP8_STATUS_OUT_OF_MEMORY: "out of memory"
            case VP8_STATUS_INVALID_PARAM: "invalid decoding parameters"
            case VP8_STATUS_BITSTREAM_ERROR: "corrupt bitstream"
            case VP8_STATUS_UNSUPPORTED_FEATURE: "the image uses a feature libwebp does not support"
            case VP8_STATUS_SUSPENDED: "decoding was suspended"
            case VP8_STATUS_USER_ABORT: "decoding was aborted"
            case VP8_STATUS_NOT_ENOUGH_DATA: "the data ends before the image does"
            default: "libwebp status \(status.rawValue)"
            }
        }

        /// A failure Imago found itself, or where libwebp gave no status to report.
        static func failure(_ reason: String) -> ImagoError {
            .decodingFailed(format: .webp, reason: reason, codec: nil)
        }
    }
}
#endif
