#if os(Linux)
import CLibHEIF
import Foundation

extension ImageDecoders {
    /// HEIF and HEIC through libheif (HEVC through libde265): the primary image, with
    /// alpha, and with the file's clean aperture, rotation and mirroring applied by
    /// libheif, as the file says.
    ///
    /// Because libheif applies the transforms itself, the pixels come out upright and
    /// `orientation` is `.up`; `appliesOrientation` has no effect here (libheif cannot
    /// report the transforms it found without applying them).
    @_spi(Internals) public struct HEIF: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as HEIF or HEIC, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .heic
        }

        /// Decodes the primary image. Throws `imageTooLarge` from the header, before any
        /// pixel buffer exists, and `decodingFailed` for truncated or corrupt data, with
        /// libheif's message as the codec's word.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { throw Self.failure("no data", nil) }
            // libheif 1.15 (Debian 12) has no way to stop a decode (a cancel callback came
            // in later releases), so the deadline is checked between its calls (after
            // parsing, after the decode, after the copy) and, through the reader, between
            // a grid's tiles.
            let deadline = options.deadline()
            if let problem = HEIFReferences.problem(in: bytes) { throw Self.failure(problem, nil) }
            let heif = try LibHEIF.shared.get()
            // Freed last: the context reads through it until the context is freed.
            let input = UnsafeMutablePointer<HEIFInput>.allocate(capacity: 1)
            input.initialize(to: HEIFInput(base: base, count: bytes.count, deadline: deadline))
            defer { input.deinitialize(count: 1).deallocate() }
            guard let context = heif.contextAlloc() else { throw Self.failure("out of memory", nil) }
            defer { heif.contextFree(context) }
            // Tiles decoded on this thread: decoding is already spread over the decoding
            // queue, and libheif's default starts threads for a grid's tiles without
            // bound (a fuzzed file's grid ran the process out of threads, and libheif's
            // uncaught std::system_error aborted it).
            heif.contextSetMaxDecodingThreads(context, 0)
            // libheif's own guard is per side; Imago's pixel limit is checked below.
            heif.contextSetMaximumImageSizeLimit(context, Int32(clamping: min(options.maximumPixelCount, 1 << 16)))

            func check(_ error: heif_error, _ reason: String) throws(ImagoError) {
                guard error.code != heif_error_Ok else { return }
                // The reader's "not yet" after the deadline comes back as missing data.
                try deadline.check(.heic)
                let message = error.message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) } ?? "error \(error.code.rawValue)"
                let truncated = error.code == heif_error_Invalid_input && error.subcode == heif_suberror_End_of_data
                throw Self.failure(truncated ? "the data ends before the image does" : reason, message)
            }

            try check(heif.contextReadFromReader(context, HEIFInput.reader, input, nil), "the container is malformed")
            try deadline.check(.heic)
            var handle: OpaquePointer?
            try check(heif.contextGetPrimaryImageHandle(context, &handle), "the file has no primary image")
            guard let handle else { throw Self.failure("the file has no primary image", nil) }
            defer { heif.imageHandleRelease(handle) }

            let width = Int(heif.imageHandleGetWidth(handle)), height = Int(heif.imageHandleGetHeight(handle))
            guard width > 0, height > 0 else { throw Self.failure("the header gives an empty image (\(width)×\(height))", nil) }
            try options.checkSize(width: width, height: height)
            // The alpha plane and the tiles are images of their own, whose coded size the
            // header does not bound: a 1 KB file whose 40×24 image had a 11273×40937
            // alpha plane took 1.4 GB. None may be larger than the image itself (plus the
            // coding blocks' rounding), and libheif checks each against this before
            // allocating it.
            heif.contextSetMaximumImageSizeLimit(context, Int32(clamping: max(width, height) + 128))
            let hasAlpha = heif.imageHandleHasAlphaChannel(handle) != 0
            let premultiplied = heif.imageHandleIsPremultipliedAlpha(handle) != 0

            let colours = Self.colours(heif, handle)
            let plan = ColourManagement.plan(for: colours)
            var mapping: HDRToneMapping?
            if case .toneMap(let toneMapping) = plan, heif.imageHandleGetLumaBitsPerPixel(handle) > 8 { mapping = toneMapping }
            // At once, at most: the decoded planes (a grid's whole image; a 4:4:4 image's
            // three samples a pixel), the interleaved pixels libheif makes from them and
            // the bitmap copied from those, and another for a colour conversion. A grid's
            // tiles are decoded one at a time. Measured: 10 bytes a pixel for a 4:2:0
            // image of 36 megapixels, 8 for a grid of 38, against 11 counted. A
            // thumbnail is resampled from libheif's pixels as they are and converted once
            // small, so it holds no copy at full size.
            var stream = mapping == nil ? options.targetSize.flatMap { Resampler.stream(fitting: $0, sourceWidth: width, sourceHeight: height) } : nil
            let planar = (hasAlpha ? 4 : 3) * (mapping == nil ? 1 : 2), interleaved = mapping == nil ? 4 : 8
            var perPixel = planar + interleaved
            if stream == nil {
                perPixel += 4
                if case .transform = plan { perPixel += 4 }
            }
            try options.checkFullSizeMemory(width * height * perPixel + (stream?.workingBytes ?? 0), format: .heic)

            guard let decoding = heif.decodingOptionsAlloc() else { throw Self.failure("out of memory", nil) }
            defer { heif.decodingOptionsFree(decoding) }
            // PQ and HLG keep their 10 or 12 bits for the tone mapping.
            decoding.pointee.convert_hdr_to_8bit = mapping == nil ? 1 : 0
            var image: OpaquePointer?
            try check(heif.decodeImage(
                handle, &image, heif_colorspace_RGB, mapping == nil ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RRGGBBAA_LE,
                decoding), "the image data is corrupt")
            guard let image else { throw Self.failure("the image data is corrupt", nil) }
            defer { heif.imageRelease(image) }
            try deadline.check(.heic)

            // The decoded size can differ from the handle's by the clean aperture; the
            // plane is what there is.
            let outWidth = Int(heif.imageGetWidth(image, heif_channel_interleaved))
            let outHeight = Int(heif.imageGetHeight(image, heif_channel_interleaved))
            var stride: Int32 = 0
            let bytesPerPixel = mapping == nil ? 4 : 8
            guard outWidth > 0, outHeight > 0, outWidth <= max(width, height), outHeight <= max(width, height),
                  let plane = heif.imageGetPlaneReadonly(image, heif_channel_interleaved, &stride),
                  Int(stride) >= outWidth * bytesPerPixel
            else { throw Self.failure("libheif returned no pixels", nil) }

            if let mapping {
                let bits = Int(heif.imageGetBitsPerPixelRange(image, heif_channel_interleaved))
                guard (9...16).contains(bits) else { throw Self.failure("libheif returned \(bits)-bit pixels", nil) }
                let bitmap = try Bitmap.make(width: outWidth, height: outHeight) { pixels in
                    // libheif's values run to the bit depth; the mapping takes 16 bits.
                    let wide = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: outWidth * 4)
                    defer { wide.deallocate() }
                    for y in 0..<outHeight {
                        let row = UnsafeRawPointer(plane + y * Int(stride))
                        for i in 0..<outWidth * 4 {
                            let v = UInt32(UInt16(littleEndian: row.loadUnaligned(fromByteOffset: i * 2, as: UInt16.self)))
                            wide[i] = UInt16(min(65535, (v << (16 - bits)) | (v >> (2 * bits - 16))))
                        }
                        let out = UnsafeMutableRawBufferPointer(rebasing: pixels[(y * outWidth * 4)..<((y + 1) * outWidth * 4)])
                        mapping.render(wide.baseAddress!, width: outWidth, height: 1, rowLength: outWidth * 4, into: out)
                    }
                }
                try deadline.check(.heic)
                return DecodedImage(bitmap: bitmap, format: .heic)
            }

            if let target = options.targetSize, outWidth != width || outHeight != height {
                stream = Resampler.stream(fitting: target, sourceWidth: outWidth, sourceHeight: outHeight)
            }
            // Straight alpha is converted before it is premultiplied.
            let straight = hasAlpha && !premultiplied ? plan : .none
            let bitmap: Bitmap
            if let stream {
                let sink = ResamplerRowSink(stream: stream, width: outWidth, premultiplies: hasAlpha && !premultiplied, colours: straight)
                for y in stream.sourceRows { sink.take(plane + y * Int(stride), number: y) }
                bitmap = stream.finish()
            } else {
                bitmap = try Bitmap.make(width: outWidth, height: outHeight) { pixels in
                    for y in 0..<outHeight {
                        (pixels.baseAddress! + y * outWidth * 4).copyMemory(from: plane + y * Int(stride), byteCount: outWidth * 4)
                    }
                    if hasAlpha && !premultiplied {
                        straight.convertAndPremultiply(pixels, count: outWidth * outHeight)
                    }
                }
            }
            try deadline.check(.heic)
            return ColourManagement.convert(DecodedImage(bitmap: bitmap, format: .heic), description: straight.converts ? nil : colours)
        }

        /// The primary image's colours: its ICC profile, else its CICP code points (nclx).
        static func colours(_ heif: LibHEIF, _ handle: OpaquePointer) -> ColourDescription? {
            let type = heif.imageHandleGetColorProfileType(handle)
            if type == heif_color_profile_type_prof || type == heif_color_profile_type_rICC {
                let size = heif.imageHandleGetRawColorProfileSize(handle)
                guard size > 0, size < 64 << 20 else { return nil }
                var data = Data(count: size)
                let status = data.withUnsafeMutableBytes { heif.imageHandleGetRawColorProfile(handle, $0.baseAddress) }
                return status.code == heif_error_Ok ? .icc(data) : nil
            }
            var nclx: UnsafeMutablePointer<heif_color_profile_nclx>?
            guard heif.imageHandleGetNclxColorProfile(handle, &nclx).code == heif_error_Ok, let nclx else { return nil }
            defer { heif.nclxColorProfileFree(nclx) }
            return .cicp(primaries: Int(nclx.pointee.color_primaries.rawValue), transfer: Int(nclx.pointee.transfer_characteristics.rawValue))
        }

        static func failure(_ reason: String, _ message: String?) -> ImagoError {
            .decodingFailed(format: .heic, reason: reason, codec: message.map { .init(library: "libheif", message: $0) })
        }
    }
}

/// The file in memory as libheif reads it: what `heif_context_read_from_memory_without_copy`
/// does, through a reader that answers "not there yet" once the deadline has passed.
///
/// libheif reads a grid tile's coded data just before it decodes the tile, after
/// asking the reader whether the file reaches that far; a tile whose data is not
/// there ends the decode with an error. So a grid (a phone's photo is a grid of
/// 512 px tiles; a hostile one can be thousands) stops at the first tile after the
/// deadline, where libheif 1.15 could otherwise only be stopped once the whole image
/// was decoded. Only that question is answered differently: libheif asserts that a
/// read of bytes it was told are there succeeds, so reads and seeks keep the memory
/// reader's rules.
struct HEIFInput {
    let base: UnsafePointer<UInt8>
    let count: Int
    let deadline: DecodeDeadline
    var position = 0

    init(base: UnsafePointer<UInt8>, count: Int, deadline: DecodeDeadline) {
        self.base = base
        self.count = count
        self.deadline = deadline
    }

    /// The reader's functions, for every decode (each passes its own input): made once,
    /// as libheif keeps the pointer for as long as a context lives.
    nonisolated(unsafe) static let reader: UnsafePointer<heif_reader> = {
        func input(_ userdata: UnsafeMutableRawPointer?) -> UnsafeMutablePointer<HEIFInput> {
            userdata!.assumingMemoryBound(to: HEIFInput.self)
        }
        let reader = UnsafeMutablePointer<heif_reader>.allocate(capacity: 1)
        reader.initialize(to: heif_reader(
            reader_api_version: 1,
            get_position: { Int64(input($0).pointee.position) },
            read: { data, size, userdata in
                let input = input(userdata)
                guard let data, size <= input.pointee.count - input.pointee.position else { return 1 }
                data.copyMemory(from: input.pointee.base + input.pointee.position, byteCount: size)
                input.pointee.position += size
                return 0
            },
            seek: { position, userdata in
                let input = input(userdata)
                guard position >= 0, position <= Int64(input.pointee.count) else { return 1 }
                input.pointee.position = Int(position)
                return 0
            },
            wait_for_file_size: { target, userdata in
                let input = input(userdata)
                if input.pointee.deadline.hasPassed { return heif_reader_grow_status_timeout }
                return target > Int64(input.pointee.count) ? heif_reader_grow_status_size_beyond_eof : heif_reader_grow_status_size_reached
            }))
        return UnsafePointer(reader)
    }()
}
#endif
