#if os(Linux)
import CImagoCodecs
import Foundation

extension ImageDecoders {
    /// JPEG through libjpeg-turbo: baseline, progressive, arithmetic-coded, grayscale,
    /// RGB, CMYK and YCCK, with the EXIF orientation applied.
    ///
    /// 12-bit and lossless JPEGs need a libjpeg-turbo built for them (3.0 or later); with
    /// Debian 12's 2.1 they fail naming the variant, with the library's own message as
    /// the error's `codec`.
    @_spi(Internals) public struct JPEG: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as JPEG, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .jpeg
        }

        /// Decodes the image. Throws `imageTooLarge` from the header, `tooManyScans`
        /// from a count of the scans, and `overMemoryBudget` when libjpeg's buffers and
        /// the output would not fit `options.effectiveMemoryBudget`, before any pixel
        /// buffer exists; `decodingTimedOut`
        /// once `options.timeout` has passed, wherever libjpeg-turbo then is; and
        /// `decodingFailed` for corrupt data, with libjpeg-turbo's message as the codec's
        /// word where libjpeg-turbo refused it.
        ///
        /// Data that ends early decodes as far as it goes, as browsers show it: the rows
        /// received of a baseline file (the rest grey, as libjpeg fills it), the scans
        /// received of a progressive one, and the image says `isPartial`. Data that ends
        /// in the header, or before any scan data, has nothing to show and fails.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ whole: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let deadline = options.deadline()
            // libjpeg passes over every block of the image for each scan, data or not:
            // 65,535 empty scans in 918 KB held a core for four minutes at 8192².
            let scans = JPEGStructure.scanHeaderCount(whole)
            if scans > options.maximumScanCount {
                throw .tooManyScans(count: scans, limit: options.maximumScanCount)
            }
            var bytes = whole
            var endsEarly = false
            // A whole file ends with EOI; only a file that does not is walked, to be cut
            // where libjpeg can stop cleanly.
            if whole.count >= 4, !(whole[whole.count - 2] == 0xFF && whole[whole.count - 1] == 0xD9) {
                let structure = JPEGStructure(whole)
                if !structure.isComplete {
                    endsEarly = true
                    if structure.scans > 0 && !structure.hasScanData {
                        throw .decodingFailed(format: .jpeg, reason: "the data ends before the image does", codec: nil)
                    }
                    bytes = UnsafeBufferPointer(rebasing: whole[..<max(structure.usableLength, 2)])
                }
            }
            guard let base = bytes.baseAddress, !bytes.isEmpty, let jpeg = imago_jpeg_create(base, bytes.count) else {
                throw .decodingFailed(format: .jpeg, reason: "no data", codec: nil)
            }
            defer { imago_jpeg_destroy(jpeg) }
            imago_jpeg_set_deadline(jpeg, deadline.nanoseconds)
            func fail() -> ImagoError {
                if imago_jpeg_timed_out(jpeg) != 0 { return .decodingTimedOut(format: .jpeg, seconds: deadline.seconds) }
                let message = String(cString: imago_jpeg_message(jpeg))
                guard imago_jpeg_message_is_own(jpeg) == 0 else {
                    return .decodingFailed(format: .jpeg, reason: message, codec: nil)
                }
                return .decodingFailed(
                    format: .jpeg, reason: Self.explain(message),
                    codec: .init(library: "libjpeg-turbo", message: message))
            }

            var info = imago_jpeg_info()
            guard imago_jpeg_read_header(jpeg, &info) == 0 else { throw fail() }
            let width = Int(info.width), height = Int(info.height)
            guard width > 0, height > 0 else {
                throw .decodingFailed(format: .jpeg, reason: "the header gives an empty image", codec: nil)
            }
            try options.checkSize(width: width, height: height)
            let orientation = info.exif.map {
                ImageOrientation(exif: UnsafeBufferPointer(start: $0, count: info.exif_length))
            } ?? nil

            let applied = options.appliesOrientation ? orientation ?? .up : .up
            let denominator = options.targetSize.map {
                Self.scaleDenominator(width: width, height: height, orientation: applied, target: $0)
            } ?? 1
            // What libjpeg will hold, counted before jpeg_start_decompress allocates
            // it: a progressive file's coefficients for the whole
            // image, 2 bytes a sample at any scale (805 MB for a 4:4:4 picture of 11584²,
            // from a 1.6 MB file), the output at the reduced scale, and its turned and
            // fitted copies.
            let buffered = info.progressive != 0 ? imago_jpeg_coefficient_bytes(jpeg) : 0
            let scaledPixels = ((width + denominator - 1) / denominator) * ((height + denominator - 1) / denominator)
            let outputBytes = scaledPixels * 4 * (applied == .up ? 1 : 2)
                + (options.targetSize.map { $0.layout(sourceWidth: width, sourceHeight: height) }.map { $0.outputWidth * $0.outputHeight * 4 } ?? 0)
            try options.checkMemory(buffered + outputBytes, format: .jpeg)
            var outWidth: UInt32 = 0, outHeight: UInt32 = 0
            guard imago_jpeg_start(jpeg, Int32(denominator), &outWidth, &outHeight) == 0 else { throw fail() }
            let isCMYK = info.color_space == IMAGO_JPEG_CMYK || info.color_space == IMAGO_JPEG_YCCK
            let profile = info.icc.map { ColourDescription.icc(Data(bytes: $0, count: info.icc_length)) }
            // CMYK goes through its profile as it is decoded (there is no RGB to scale
            // before); RGB and gray after scaling, so a thumbnail converts only its own
            // pixels.
            var cmykPlan = ColourManagement.Plan.none
            if isCMYK, profile != nil { cmykPlan = ColourManagement.plan(for: profile, input: .cmyk(inverted: info.adobe != 0)) }
            // At full size, RGB converts in the decode's own buffer: no copy.
            var inPlace: ColourTransform?
            if !isCMYK, options.targetSize == nil, case .transform(let transform) = ColourManagement.plan(for: profile) {
                inPlace = transform
            }
            let (uprightWidth, uprightHeight) = applied.swapsDimensions ? (height, width) : (width, height)
            let rowBytes = Int(outWidth) * 4, rows = Int(outHeight)
            // About 128 KB of rows at a time, for what takes them as libjpeg writes
            // them, still in the cache (a conversion, the resampler).
            let band = min(rows, max(16, 131_072 / rowBytes))
            // Decodes the rows up to `end` into `pixels`, whose first row is `first`.
            func read(upTo end: Int, into pixels: UnsafeMutableRawPointer, first: Int) throws(ImagoError) {
                guard imago_jpeg_read_pixels(jpeg, pixels.assumingMemoryBound(to: UInt8.self), rowBytes, UInt32(first), UInt32(end)) == 0 else {
                    throw fail()
                }
            }
            func isPartial() -> Bool { endsEarly || imago_jpeg_truncated(jpeg) != 0 }
            // A thumbnail upright as decoded goes to the resampler a band of rows at a
            // time: the reduced decode is never whole in memory (a megabyte for a
            // 4000 px photo at 1/8).
            if !isCMYK, applied == .up, let target = options.targetSize,
               let stream = Resampler.stream(
                   fitting: target, reducedWidth: Int(outWidth), reducedHeight: Int(outHeight),
                   sourceWidth: uprightWidth, sourceHeight: uprightHeight) {
                let buffer = UnsafeMutableRawPointer.allocate(byteCount: band * rowBytes, alignment: 16)
                defer { buffer.deallocate() }
                for row in stride(from: 0, to: rows, by: band) {
                    let end = min(row + band, rows)
                    try read(upTo: end, into: buffer, first: row)
                    for y in row..<end { stream.append(row: y, buffer.assumingMemoryBound(to: UInt8.self) + (y - row) * rowBytes) }
                }
                let image = DecodedImage(bitmap: stream.finish(), format: .jpeg, orientation: orientation ?? .up, isPartial: isPartial())
                return ColourManagement.convert(image, description: profile)
            }
            let bitmap = try Bitmap.make(width: Int(outWidth), height: Int(outHeight)) { pixels throws(ImagoError) in
                // A conversion takes each band in the decode's own buffer: over the
                // whole image after, it read and wrote every pixel from memory again.
                let step = inPlace == nil ? rows : band
                for row in stride(from: 0, to: rows, by: step) {
                    let end = min(row + step, rows)
                    try read(upTo: end, into: pixels.baseAddress!, first: 0)
                    inPlace?.applyInPlace(UnsafeMutableRawBufferPointer(rebasing: pixels[row * rowBytes..<end * rowBytes]), count: (end - row) * Int(outWidth))
                }
                if isCMYK {
                    if case .transform(let transform) = cmykPlan {
                        transform.applyCMYK(pixels, count: Int(outWidth) * Int(outHeight))
                    } else {
                        pixels.convertCMYKToRGBA(count: Int(outWidth) * Int(outHeight), inverted: info.adobe != 0)
                    }
                }
            }
            var upright = bitmap.applying(applied)
            if let target = options.targetSize {
                // Sized from the source's dimensions: the reduced decode's own round differently.
                upright = upright.fitted(to: target, sourceWidth: uprightWidth, sourceHeight: uprightHeight)
            }
            var image = DecodedImage(bitmap: upright, format: .jpeg, orientation: orientation ?? .up, isPartial: isPartial())
            if isCMYK || inPlace != nil {
                if case .ignored(let note) = cmykPlan { image.notes.append(note) }
                return image
            }
            return ColourManagement.convert(image, description: profile)
        }

        /// The largest DCT reduction (1/8, 1/4, 1/2) whose output still covers what
        /// `target` needs of this image: libjpeg then skips most of the inverse DCT and
        /// the buffer is up to 64 times smaller. The resampler makes the exact size after.
        static func scaleDenominator(width: Int, height: Int, orientation: ImageOrientation, target: TargetSize) -> Int {
            let (uprightWidth, uprightHeight) = orientation.swapsDimensions ? (height, width) : (width, height)
            let layout = target.layout(sourceWidth: uprightWidth, sourceHeight: uprightHeight)
            for denominator in [8, 4, 2] {
                // libjpeg rounds scaled sizes up.
                let w = (uprightWidth + denominator - 1) / denominator
                let h = (uprightHeight + denominator - 1) / denominator
                if w >= layout.scaledWidth && h >= layout.scaledHeight { return denominator }
            }
            return 1
        }

        /// The reason for libjpeg's `message`: the message itself, which names the marker
        /// at fault, except for data that ends early and for the JPEG variants that are
        /// valid but beyond this library, which are said in words.
        static func explain(_ message: String) -> String {
            let variants: [(String, String)] = [
                ("Unsupported JPEG data precision", "12- and 16-bit JPEG is not supported by this libjpeg-turbo"),
                ("SOF type 0xc3", "lossless JPEG is not supported by this libjpeg-turbo"),
                ("SOF type 0xcb", "lossless JPEG is not supported by this libjpeg-turbo"),
                ("Unsupported marker type 0xf7", "JPEG-LS is a different codec and is not supported"),
                ("DNL not supported", "a height given by a DNL marker is not supported"),
                ("Premature end of JPEG file", "the data ends before the image does"),
            ]
            return variants.first(where: { message.contains($0.0) })?.1 ?? message
        }
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Turns CMYK pixels into opaque RGB in place (both take four bytes a pixel).
    ///
    /// Photoshop, which writes the Adobe marker, stores CMYK inverted (0 is full ink);
    /// without the marker, 255 is full ink. The naive conversion without an ICC profile
    /// is what browsers and ImageMagick do too.
    func convertCMYKToRGBA(count: Int, inverted: Bool) {
        let p = bindMemory(to: UInt8.self)
        var i = 0
        for _ in 0..<count {
            var c = UInt32(p[i]), m = UInt32(p[i + 1]), y = UInt32(p[i + 2]), k = UInt32(p[i + 3])
            if !inverted {
                c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k
            }
            p[i] = UInt8((c * k + 127) / 255)
            p[i + 1] = UInt8((m * k + 127) / 255)
            p[i + 2] = UInt8((y * k + 127) / 255)
            p[i + 3] = 255
            i += 4
        }
    }
}
#endif
