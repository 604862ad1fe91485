#if os(Linux)
import CImagoCodecs
import Foundation

extension ImageDecoders {
    /// PNG through libpng: every bit depth (16 bits are scaled to 8 with rounding),
    /// palette, gray, tRNS transparency, gray+alpha and Adam7 interlace, with the `eXIf`
    /// orientation applied.
    ///
    /// The full libpng API rather than its simplified one: the simplified reader gets
    /// the alpha of interlaced 16-bit gray+alpha images wrong (PngSuite `basi4a16`), and
    /// does not expose `eXIf`. An animated PNG (APNG) decodes to its frames,
    /// composited as browsers do, as they are played (see `APNG`).
    @_spi(Internals) public struct PNG: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as PNG, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .png
        }

        /// Decodes the image. Throws `imageTooLarge` from the header, before any pixel
        /// buffer exists, and `decodingFailed` for corrupt data, with libpng's message as
        /// the codec's word where libpng refused it.
        ///
        /// Data that ends early decodes as far as it goes, as browsers show it: the rows
        /// received, the rest transparent (for an interlaced file, the passes received,
        /// each pixel widened over its block), and the image says `isPartial`. Data that
        /// ends before the first row has nothing to show and fails. An animated file's
        /// frames are whole or not shown, so one that ends early fails.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            // The animation's first frame shares the still's time, not a new one.
            let deadline = options.deadline()
            let (still, endsEarly) = try data.withBytes { bytes throws(ImagoError) in
                try decode(bytes, options: options, allowsPartial: !Self.declaresAnimation(bytes))
            }
            if endsEarly { return still }
            return try APNG.animation(data, still: still, options: options, deadline: deadline) ?? still
        }

        /// The default image alone: what a viewer without APNG support shows. Data that
        /// ends early fails here: an animation's frame is whole or not shown.
        func decodeStill(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options, allowsPartial: false).image }
        }

        /// Whether an `acTL` chunk comes before the image data: the file is an animation.
        static func declaresAnimation(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
            var i = 8
            while i + 8 <= bytes.count {
                let length = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
                let type = (bytes[i + 4], bytes[i + 5], bytes[i + 6], bytes[i + 7])
                if type == (0x61, 0x63, 0x54, 0x4C) { return true }  // acTL
                if type == (0x49, 0x44, 0x41, 0x54) { return false }  // IDAT
                i += 12 + length
            }
            return false
        }

        /// The image, and whether the data ended before the file did (then the image is
        /// all there is: partial, or whole but with nothing after it).
        private func decode(
            _ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions, allowsPartial: Bool
        ) throws(ImagoError) -> (image: DecodedImage, endsEarly: Bool) {
            guard let base = bytes.baseAddress, !bytes.isEmpty, let png = imago_png_create(base, bytes.count) else {
                throw .decodingFailed(format: .png, reason: "no data", codec: nil)
            }
            defer { imago_png_destroy(png) }
            let deadline = options.deadline()
            // libpng's messages are precise ("IHDR: CRC error"), so they are the reason
            // as they stand.
            func fail() -> ImagoError {
                if imago_png_timed_out(png) != 0 { return .decodingTimedOut(format: .png, seconds: deadline.seconds) }
                let message = String(cString: imago_png_message(png))
                let codec = imago_png_message_is_own(png) == 0 ? ImagoError.CodecMessage(library: "libpng", message: message) : nil
                return .decodingFailed(format: .png, reason: message, codec: codec)
            }

            var info = imago_png_info()
            guard imago_png_read_header(png, &info) == 0 else { throw fail() }
            let width = Int(info.width), height = Int(info.height)
            try options.checkSize(width: width, height: height)
            let orientation = info.exif.map {
                ImageOrientation(exif: UnsafeBufferPointer(start: $0, count: info.exif_length))
            } ?? nil
            let applied = options.appliesOrientation ? orientation ?? .up : .up
            let colours = Self.colourDescription(info, bytes)
            if colours != nil { imago_png_leave_gamma(png) }
            imago_png_set_deadline(png, deadline.nanoseconds)
            var partial: Int32 = Int32(IMAGO_PNG_WHOLE)
            // PQ and HLG keep their 16 bits for the tone mapping: in 8 bits, PQ's codes
            // are steps a gradient shows as bands.
            var wideMapping: HDRToneMapping?
            if info.bit_depth == 16, case .toneMap(let mapping) = ColourManagement.plan(for: colours) { wideMapping = mapping }
            // Straight alpha is converted before it is premultiplied (the rows of a
            // thumbnail too); opaque pixels once the image is made, a thumbnail's small.
            let straightColours = info.has_alpha != 0 && wideMapping == nil ? ColourManagement.plan(for: colours) : .none
            var convertedColours = wideMapping != nil
            let upright: Bitmap
            let stream = applied == .up && wideMapping == nil
                ? options.targetSize.flatMap { Resampler.stream(fitting: $0, sourceWidth: width, sourceHeight: height) } : nil
            // The whole image, and its turned copy when the orientation turns it.
            let wholeBytes = width * height * 4 * (applied == .up ? 1 : 2) + (stream?.workingBytes ?? 0)
            if let mapping = wideMapping {
                // The samples as stored, then the mapped image (a thumbnail is fitted
                // from it afterwards, as for any full decode).
                try options.checkMemory(wholeBytes + width * height * 8, format: .png)
                imago_png_keep_16(png)
                let samples = UnsafeMutableBufferPointer<UInt16>.allocate(capacity: width * height * 4)
                defer { samples.deallocate() }
                let raw = UnsafeMutableRawPointer(samples.baseAddress!).assumingMemoryBound(to: UInt8.self)
                guard imago_png_read_pixels(png, raw, width * 8, &partial) == 0 else { throw fail() }
                for i in samples.indices { samples[i] = UInt16(bigEndian: samples[i]) }
                upright = try Bitmap.make(width: width, height: height) { pixels in
                    mapping.render(samples.baseAddress!, width: width, height: height, rowLength: width * 4, into: pixels)
                }.applying(applied)
            } else if let stream, info.interlaced == 0 {
                // Rows go through the resampler as libpng makes them: a thumbnail of an
                // 11000² image holds its own pixels and a few rows, not the 484 MB canvas.
                try options.checkMemory(stream.workingBytes + width * 4, format: .png)
                let rows = ResamplerRowSink(stream: stream, width: width, premultiplies: info.has_alpha != 0, colours: straightColours)
                convertedColours = rows.converts
                let status = withExtendedLifetime(rows) {
                    imago_png_read_rows(png, { context, row, number in
                        Unmanaged<ResamplerRowSink>.fromOpaque(context!).takeUnretainedValue().take(row!, number: Int(number))
                    }, Unmanaged.passUnretained(rows).toOpaque(), &partial)
                }
                guard status == 0 else { throw fail() }
                upright = stream.finish()
            } else if let stream, width * height > ScaledCanvas.largestFullCanvas || wholeBytes > options.effectiveMemoryBudget,
                      stream.workingBytes + stream.scatteredBytes < wholeBytes {
                // Adam7 spreads every row over seven passes, but each pixel comes in
                // one of them: the passes are summed into the thumbnail's average as
                // they are decoded, and the image is never assembled. (Data that ends
                // early then leaves the missing pixels transparent, not widened over
                // their blocks as a browser draws them.)
                try options.checkMemory(stream.workingBytes + stream.scatteredBytes + width * 4, format: .png)
                let passes = ResamplerRowSink(stream: stream, width: width, premultiplies: info.has_alpha != 0, colours: straightColours)
                convertedColours = passes.converts
                let status = withExtendedLifetime(passes) {
                    imago_png_read_passes(png, { context, pixels, y, first, step, count in
                        Unmanaged<ResamplerRowSink>.fromOpaque(context!).takeUnretainedValue()
                            .take(pixels!, y: Int(y), first: Int(first), step: Int(step), count: Int(count))
                    }, Unmanaged.passUnretained(passes).toOpaque(), &partial)
                }
                guard status == 0 else { throw fail() }
                upright = stream.finishScattered()
            } else {
                try options.checkMemory(wholeBytes, format: .png)
                let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
                    guard imago_png_read_pixels(png, pixels.baseAddress!.assumingMemoryBound(to: UInt8.self), width * 4, &partial) == 0 else {
                        throw fail()
                    }
                    // Rows that did not arrive are zeros, premultiplied already.
                    if info.has_alpha != 0 {
                        straightColours.convertAndPremultiply(pixels, count: width * height)
                    }
                }
                convertedColours = convertedColours || straightColours.converts
                upright = bitmap.applying(applied)
            }
            if partial != IMAGO_PNG_WHOLE && !allowsPartial {
                throw .decodingFailed(format: .png, reason: "the data ends before the image does", codec: nil)
            }
            // After scaling: a thumbnail converts only its own pixels.
            let image = ColourManagement.convert(
                DecodedImage(bitmap: upright, format: .png, orientation: orientation ?? .up, isPartial: partial == IMAGO_PNG_PARTIAL),
                description: convertedColours ? nil : colours)
            return (image, partial != IMAGO_PNG_WHOLE)
        }

        /// The file's colours, by the PNG specification's order of precedence: `cICP`,
        /// then `iCCP`, then `sRGB` (nothing to do), then `gAMA` with `cHRM`.
        static func colourDescription(_ info: imago_png_info, _ bytes: UnsafeBufferPointer<UInt8>) -> ColourDescription? {
            if let cicp = cicp(bytes) { return cicp }
            if let icc = info.icc { return .icc(Data(bytes: icc, count: info.icc_length)) }
            if info.srgb != 0 { return nil }
            guard info.gamma > 0 else { return nil }
            let chromaticities = info.has_chromaticities != 0
                ? withUnsafeBytes(of: info.chromaticities) { Array($0.bindMemory(to: Double.self)) } : nil
            return .gamma(info.gamma, chromaticities: chromaticities)
        }

        /// The `cICP` chunk before the image data (libpng 1.6.39 does not read it):
        /// primaries and transfer of a full-range RGB image.
        static func cicp(_ bytes: UnsafeBufferPointer<UInt8>) -> ColourDescription? {
            var i = 8
            while i + 8 <= bytes.count {
                let length = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
                let type = (bytes[i + 4], bytes[i + 5], bytes[i + 6], bytes[i + 7])
                if type == (0x49, 0x44, 0x41, 0x54) { return nil }  // IDAT
                if type == (0x63, 0x49, 0x43, 0x50), length == 4, i + 12 <= bytes.count {  // cICP
                    // Only RGB (matrix 0) is valid in PNG.
                    guard bytes[i + 10] == 0 else { return nil }
                    return .cicp(primaries: Int(bytes[i + 8]), transfer: Int(bytes[i + 9]))
                }
                i += 12 + length
            }
            return nil
        }
    }
}
#endif
