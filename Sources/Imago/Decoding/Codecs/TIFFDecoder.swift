#if os(Linux)
import CLibTIFF
import Foundation

extension ImageDecoders {
    /// TIFF through libtiff: the first page, in every layout libtiff's RGBA interface
    /// reads (bilevel, gray, palette, RGB, CMYK, YCbCr and CIE Lab; 1 to 16 bits; strips
    /// or tiles; uncompressed, PackBits, LZW, Deflate, JPEG and the rest Debian's libtiff
    /// is built with), with associated or unassociated alpha, and the orientation tag
    /// applied.
    ///
    /// The data is read in place through libtiff's client callbacks, never written to a
    /// file. libtiff's messages go to handlers of this decode only (its defaults print to
    /// standard error and are process-wide), and its own allocations are capped, so a
    /// crafted file cannot make it ask for more than the pixel limit allows.
    @_spi(Internals) public struct TIFF: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as TIFF, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .tiff
        }

        /// Decodes the first page. Throws `imageTooLarge` from the header, before any pixel
        /// buffer exists, and `decodingFailed` for truncated or corrupt data, with
        /// libtiff's first error message as the codec's word.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { throw Self.failure("no data", nil) }
            guard ImageFormat.detect(bytes) == .tiff else { throw Self.failure("the data is not a TIFF file", nil) }

            let source = UnsafeMutablePointer<TIFFSource>.allocate(capacity: 1)
            source.initialize(to: TIFFSource(base: base, count: bytes.count))
            defer {
                source.deinitialize(count: 1)
                source.deallocate()
            }
            func fail(_ reason: String) -> ImagoError {
                Self.failure(reason, source.pointee.message)
            }

            guard let openOptions = TIFFOpenOptionsAlloc() else { throw Self.failure("out of memory", nil) }
            defer { TIFFOpenOptionsFree(openOptions) }
            TIFFOpenOptionsSetErrorHandlerExtR(openOptions, { _, user, _, format, arguments in
                if let arguments { user?.assumingMemoryBound(to: TIFFSource.self).pointee.record(format, arguments) }
                return 1  // handled: libtiff's process-wide handler is not called
            }, source)
            TIFFOpenOptionsSetWarningHandlerExtR(openOptions, { _, _, _, _, _ in 1 }, nil)
            // libtiff sizes its strip and tile buffers from the header; no single buffer
            // needs more than the pixel limit's worth of 16-bit RGBA.
            let (cap, overflow) = options.maximumPixelCount.multipliedReportingOverflow(by: 8)
            TIFFOpenOptionsSetMaxSingleMemAlloc(openOptions, tmsize_t(overflow ? Int.max : max(cap, 1 << 24)))

            guard let tiff = TIFFClientOpenExt(
                "image", "rm", source,
                { handle, buffer, size in
                    guard let handle, let buffer else { return -1 }
                    let source = handle.assumingMemoryBound(to: TIFFSource.self)
                    let count = min(Int(size), source.pointee.count - source.pointee.offset)
                    guard count >= 0 else { return 0 }
                    buffer.copyMemory(from: source.pointee.base + source.pointee.offset, byteCount: count)
                    source.pointee.offset += count
                    return tmsize_t(count)
                },
                { _, _, _ in -1 },  // never written
                { handle, offset, whence in
                    guard let handle else { return toff_t.max }
                    let source = handle.assumingMemoryBound(to: TIFFSource.self)
                    let origin: Int
                    switch whence {
                    case SEEK_SET: origin = 0
                    case SEEK_CUR: origin = source.pointee.offset
                    case SEEK_END: origin = source.pointee.count
                    default: return toff_t.max
                    }
                    // Offsets are unsigned; a "negative" relative seek arrives wrapped.
                    let target = origin &+ Int(truncatingIfNeeded: offset)
                    guard target >= 0, target <= source.pointee.count else { return toff_t.max }
                    source.pointee.offset = target
                    return toff_t(target)
                },
                { _ in 0 },
                { handle in toff_t(handle?.assumingMemoryBound(to: TIFFSource.self).pointee.count ?? 0) },
                { _, _, _ in 0 },  // no mapping: reads go through the callback
                { _, _, _ in },
                openOptions)
            else { throw fail("libtiff could not read the header") }
            defer { TIFFClose(tiff) }

            var width: UInt32 = 0, height: UInt32 = 0, rawOrientation: UInt16 = 0
            guard field(tiff, TIFFTAG_IMAGEWIDTH, &width), field(tiff, TIFFTAG_IMAGELENGTH, &height) else {
                throw fail("the first page has no size")
            }
            guard width > 0, height > 0 else { throw fail("the first page is empty (\(width)×\(height))") }
            try options.checkSize(width: Int(width), height: Int(height))
            if !field(tiff, TIFFTAG_ORIENTATION, &rawOrientation) { rawOrientation = 1 }
            let orientation = ImageOrientation(rawValue: Int(rawOrientation)) ?? .up

            var message = [CChar](repeating: 0, count: 1024)
            guard TIFFRGBAImageOK(tiff, &message) != 0 else {
                let reason = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                throw .decodingFailed(format: .tiff, reason: "libtiff cannot show this layout", codec: .init(library: "libtiff", message: reason))
            }

            let applied = options.appliesOrientation ? orientation : .up
            // What libtiff holds to decode a strip or tile: its compressed bytes and
            // the decoded buffer.
            let rawBytes = (0..<TIFFNumberOfStrips(tiff)).reduce(0) { max($0, Int(TIFFGetStrileByteCount(tiff, $1))) }
            let codecBytes = rawBytes + (TIFFIsTiled(tiff) != 0 ? Int(TIFFTileSize64(tiff)) : Int(TIFFStripSize64(tiff)))
            if applied == .up,
               let stream = options.targetSize.flatMap({ Resampler.stream(fitting: $0, sourceWidth: Int(width), sourceHeight: Int(height)) }) {
                guard try readBands(
                    tiff, width: width, height: height, orientation: orientation, into: .stream(stream), options: options,
                    rawBytes: rawBytes, codecBytes: codecBytes)
                else {
                    throw fail(source.pointee.ranOut ? "the data ends before the image does" : "the image data is corrupt")
                }
                return ColourManagement.convert(
                    DecodedImage(bitmap: stream.finish(), format: .tiff, orientation: orientation), description: Self.profile(tiff))
            }
            try options.checkMemory(Int(width) * Int(height) * 4 * (applied == .up ? 1 : 2) + codecBytes, format: .tiff)
            let bitmap = try Bitmap.make(width: Int(width), height: Int(height)) { pixels throws(ImagoError) in
                // Asked for the file's own orientation, libtiff leaves the rows as stored,
                // top row first; the turn is done below for all eight orientations (libtiff
                // itself can only flip, not transpose). Its output is ABGR words, that is
                // R, G, B, A bytes on little-endian machines, premultiplied.
                // Band by band, as for a thumbnail, so the deadline is checked between
                // strips (or scanlines, for large strips) rather than after the page.
                let raster = pixels.baseAddress!.assumingMemoryBound(to: UInt32.self)
                guard try readBands(
                    tiff, width: width, height: height, orientation: orientation, into: .raster(raster), options: options,
                    rawBytes: rawBytes, codecBytes: codecBytes)
                else {
                    throw fail(source.pointee.ranOut ? "the data ends before the image does" : "the image data is corrupt")
                }
                #if _endian(big)
                let words = pixels.bindMemory(to: UInt32.self)
                for i in 0..<words.count { words[i] = words[i].byteSwapped }
                #endif
            }
            let upright = bitmap.applying(applied)
            return ColourManagement.convert(DecodedImage(bitmap: upright, format: .tiff, orientation: orientation), description: Self.profile(tiff))
        }

        /// The page's ICC profile (TIFFTAG_ICCPROFILE), or nil.
        static func profile(_ tiff: OpaquePointer) -> ColourDescription? {
            var count: UInt32 = 0
            var data: UnsafeMutableRawPointer?
            let found = withUnsafeMutablePointer(to: &count) { countPointer in
                withUnsafeMutablePointer(to: &data) { dataPointer in
                    withVaList([countPointer, dataPointer]) { TIFFVGetField(tiff, UInt32(TIFFTAG_ICCPROFILE), $0) } != 0
                }
            }
            guard found, let data, count > 0 else { return nil }
            return .icc(Data(bytes: data, count: Int(count)))
        }

        /// Reads the page a band of rows at a time (a strip's or a tile row's worth, as
        /// libtiff decodes them) into `rows`: a thumbnail holds one band, not the page.
        /// A band too large for that (a page written as one strip: Pillow's default for
        /// an 11000² RGB page is one strip of 363 MB) is read a scanline at a time where
        /// libtiff can (a contiguous layout in strips, whatever the compression), and
        /// refused with `overMemoryBudget` beyond the budget where it cannot. The rows
        /// come as stored, as `TIFFReadRGBAImageOriented` gives them with the file's own
        /// orientation. False when libtiff fails; `decodingTimedOut` past the deadline,
        /// checked between bands and every few hundred thousand pixels of scanlines.
        /// Into a full-size raster the same holds, except that large strips are read by
        /// scanlines for the deadline's sake (the raster is the caller's, counted there).
        private func readBands(
            _ tiff: OpaquePointer, width: UInt32, height: UInt32, orientation: ImageOrientation, into rows: TIFFRows,
            options: DecodingOptions, rawBytes: Int, codecBytes: Int
        ) throws(ImagoError) -> Bool {
            let stream: Resampler.Stream?, fullSize: UnsafeMutablePointer<UInt32>?
            switch rows {
            case .stream(let to): (stream, fullSize) = (to, nil)
            case .raster(let to): (stream, fullSize) = (nil, to)
            }
            let workingBytes = stream?.workingBytes ?? 0
            let deadline = options.deadline()
            var band: UInt32 = 0
            if TIFFIsTiled(tiff) != 0 {
                if !field(tiff, TIFFTAG_TILELENGTH, &band) { band = 0 }
            } else if !field(tiff, TIFFTAG_ROWSPERSTRIP, &band) {
                band = height
            }
            band = min(max(band, 1), height)
            var message = [CChar](repeating: 0, count: 1024)
            var image = TIFFRGBAImage()
            guard TIFFRGBAImageBegin(&image, tiff, 1, &message) != 0 else { return false }
            defer { TIFFRGBAImageEnd(&image) }
            image.req_orientation = UInt16(orientation.rawValue)

            let bandBytes = Int(width) * Int(band) * 4 + codecBytes + workingBytes
            let scanlineBytes = Int(width) * 4 + rawBytes + Int(TIFFScanlineSize64(tiff)) + workingBytes
            // libtiff decodes a strip row by row with every codec it has; the RGBA
            // conversion is its own (the put routine TIFFRGBAImageBegin chose), given one
            // row. Subsampled YCbCr comes in pairs of rows, so it is left to bands.
            let byScanline = TIFFIsTiled(tiff) == 0 && image.isContig != 0 && image.put.contig != nil
                && image.photometric != UInt16(PHOTOMETRIC_YCBCR)
                && (bandBytes > Self.largestBand || (stream != nil && bandBytes > options.effectiveMemoryBudget))
            if stream != nil { try options.checkMemory(byScanline ? scanlineBytes : bandBytes, format: .tiff) }
            let rowsAtOnce = byScanline ? 1 : band
            // A band of the thumbnail's own; a full-size page is written in place.
            let raster = stream == nil ? nil : UnsafeMutableBufferPointer<UInt32>.allocate(capacity: Int(width) * Int(rowsAtOnce))
            defer { raster?.deallocate() }
            // Where the band starting at row `top` goes.
            func destination(_ top: UInt32) -> UnsafeMutablePointer<UInt32> {
                fullSize.map { $0 + Int(top) * Int(width) } ?? raster!.baseAddress!
            }
            if byScanline {
                let line = UnsafeMutableRawPointer.allocate(byteCount: Int(TIFFScanlineSize64(tiff)), alignment: 16)
                defer { line.deallocate() }
                let rowsPerCheck = UInt32(DecodeDeadline.rowsPerCheck(width: Int(width)))
                for row in 0..<height {
                    if row % rowsPerCheck == 0 { try deadline.check(.tiff) }
                    guard TIFFReadScanline(tiff, line, row, 0) >= 0 else { return false }
                    let out = destination(row)
                    image.put.contig(&image, out, 0, row, width, 1, 0, 0, line.assumingMemoryBound(to: UInt8.self))
                    if let stream {
                        #if _endian(big)
                        for i in 0..<Int(width) { out[i] = out[i].byteSwapped }
                        #endif
                        stream.append(row: Int(row), UnsafeRawPointer(out).assumingMemoryBound(to: UInt8.self))
                    }
                }
                return true
            }
            var top: UInt32 = 0
            while top < height {
                try deadline.check(.tiff)
                let count = min(band, height - top)
                image.row_offset = Int32(top)
                let out = destination(top)
                guard TIFFRGBAImageGet(&image, out, width, count) != 0 else { return false }
                if let stream {
                    for row in 0..<Int(count) {
                        #if _endian(big)
                        for i in row * Int(width)..<(row + 1) * Int(width) { out[i] = out[i].byteSwapped }
                        #endif
                        stream.append(row: Int(top) + row, UnsafeRawPointer(out + row * Int(width)).assumingMemoryBound(to: UInt8.self))
                    }
                }
                top += count
            }
            return true
        }

        /// The largest band read whole for a thumbnail (16 MiB with libtiff's buffers):
        /// larger ones are read a scanline at a time where libtiff can.
        static let largestBand = 16 << 20

        /// Reads one scalar tag of the current directory; false when absent.
        private func field<T>(_ tiff: OpaquePointer, _ tag: Int32, _ value: inout T) -> Bool {
            withUnsafeMutablePointer(to: &value) { pointer in
                withVaList([pointer]) { TIFFVGetField(tiff, UInt32(tag), $0) } != 0
            }
        }

        static func failure(_ reason: String, _ message: String?) -> ImagoError {
            .decodingFailed(format: .tiff, reason: reason, codec: message.map { .init(library: "libtiff", message: $0) })
        }
    }
}

/// Where `readBands` puts the rows it reads.
private enum TIFFRows {
    /// Through the resampler, a band at a time: a thumbnail.
    case stream(Resampler.Stream)
    /// Straight into the page's full-size raster, rows as stored.
    case raster(UnsafeMutablePointer<UInt32>)
}

/// The data libtiff reads, its cursor, and the first error libtiff reported.
private struct TIFFSource {
    let base: UnsafePointer<UInt8>
    let count: Int
    var offset = 0
    var message: String?

    init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }

    /// Whether libtiff looked for bytes past the end: the file was cut short.
    var ranOut: Bool {
        guard let message else { return false }
        return message.contains("Read error") || message.contains("Cannot read") || message.contains("past end")
            || message.contains("Seek error") || message.contains("EOF")
    }

    /// Keeps the first message: later ones tend to be consequences of it.
    mutating func record(_ format: UnsafePointer<CChar>?, _ arguments: CVaListPointer) {
        guard message == nil, let format else { return }
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        message = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
#endif
