import Foundation

extension ImageDecoders {
    /// BMP, Imago's own decoder (no library on either platform reads every variant the
    /// way browsers do): 1, 2, 4, 8, 16, 24 and 32 bits a pixel, RLE4 and RLE8, bit-field
    /// masks (`BI_BITFIELDS`, `BI_ALPHABITFIELDS`), top-down rows, and the OS/2 v1 and v2
    /// headers as well as every Windows one.
    ///
    /// The ambiguous cases follow Chrome and Firefox:
    /// - 32-bit pixels use their top byte (or the alpha mask) as alpha, unless every pixel
    ///   has alpha 0: many writers leave that byte zero, and such a file is opaque.
    /// - Pixels an RLE stream skips (with a delta or an early end of line) are transparent.
    /// - A palette index past the palette's end is opaque black.
    /// - Low-bit channels are widened to 8 bits by repeating their bits (5-bit 31 is 255).
    ///
    /// Embedded JPEG or PNG data (`BI_JPEG`, `BI_PNG`, meant for printers), OS/2 Huffman
    /// and RLE24 compression and 64-bit pixels get a clear error, as in browsers.
    @_spi(Internals) public struct BMP: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as BMP, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .bmp
        }

        /// Decodes the image. Throws `imageTooLarge` from the header, before any pixel
        /// buffer exists, and `decodingFailed` for truncated or corrupt data.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in
                let reader = LittleEndianBytes(bytes)
                guard reader.has(0, 18), bytes[0] == 0x42, bytes[1] == 0x4D else {
                    throw DIB.failure(.bmp, "the data is not a BMP file")
                }
                let header = try DIB.Header(reader, at: 14, inIcon: false, format: .bmp)
                let bitmap = try DIB.decode(reader, header: header, pixelOffset: Int(reader.u32(10)),
                                            andMask: false, format: .bmp, options: options)
                return DecodedImage(bitmap: bitmap, format: .bmp)
            }
        }
    }
}

/// Little-endian reads over bytes whose bounds the caller has checked with `has`.
struct LittleEndianBytes {
    let bytes: UnsafeBufferPointer<UInt8>

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    var count: Int { bytes.count }

    /// Whether `length` bytes from `offset` lie inside the data, without overflow.
    func has(_ offset: Int, _ length: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= bytes.count && length <= bytes.count - offset
    }

    func u8(_ offset: Int) -> Int { Int(bytes[offset]) }
    func u16(_ offset: Int) -> Int { Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 }
    func u32(_ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
    func i32(_ offset: Int) -> Int { Int(Int32(bitPattern: u32(offset))) }
}

/// The device-independent bitmap inside BMP files and ICO/CUR entries: one header
/// parser and one pixel decoder for both.
enum DIB {
    static func failure(_ format: ImageFormat, _ reason: String) -> ImagoError {
        .decodingFailed(format: format, reason: reason, codec: nil)
    }

    /// Compression methods, as the Windows headers number them.
    enum Compression: UInt32 {
        case rgb = 0, rle8 = 1, rle4 = 2, bitfields = 3, jpeg = 4, png = 5, alphaBitfields = 6
    }

    /// What the header says, checked for consistency but not yet against the data's
    /// length (except for the header itself and its masks).
    struct Header {
        let start: Int
        let size: Int
        let width: Int
        let height: Int
        let topDown: Bool
        let bitCount: Int
        let compression: Compression
        let masks: [UInt32]?
        /// Where the palette starts, its entry count and entry size (3 for OS/2 v1).
        let paletteStart: Int
        let paletteCount: Int
        let paletteEntrySize: Int

        /// Where the pixels start when nothing else says: right after the palette.
        var paletteEnd: Int { paletteStart + paletteCount * paletteEntrySize }

        /// Parses the header at `start`. In an icon the stored height covers the
        /// colour rows and the AND mask together, so the image is half as high.
        init(_ r: LittleEndianBytes, at start: Int, inIcon: Bool, format: ImageFormat) throws(ImagoError) {
            guard r.has(start, 4) else { throw failure(format, "the data ends inside the bitmap header") }
            let size = Int(r.u32(start))
            // 12: OS/2 v1 (BITMAPCOREHEADER); 16 to 64 in steps of 4: OS/2 v2, whose
            // trailing fields are optional; 40, 52, 56, 108 and 124: the Windows versions.
            guard [12, 108, 124].contains(size) || ((16...64).contains(size) && size % 4 == 0) else {
                throw failure(format, "the bitmap header size \(size) is not one any version uses")
            }
            guard r.has(start, size) else { throw failure(format, "the data ends inside the bitmap header") }
            self.start = start
            self.size = size
            let isCore = size == 12
            let isOS2v2 = !isCore && size != 40 && size != 52 && size != 56 && size != 108 && size != 124

            var width: Int, height: Int, bitCount: Int, rawCompression: UInt32 = 0, colorsUsed = 0
            if isCore {
                width = r.u16(start + 4)
                height = Int(Int16(truncatingIfNeeded: r.u16(start + 6)))
                bitCount = r.u16(start + 10)
            } else {
                width = r.i32(start + 4)
                height = r.i32(start + 8)
                bitCount = r.u16(start + 14)
                if size >= 20 { rawCompression = r.u32(start + 16) }
                if size >= 36 { colorsUsed = Int(r.u32(start + 32)) }
            }
            topDown = height < 0
            height = abs(height)
            if inIcon { height /= 2 }
            guard width > 0, height > 0 else {
                throw failure(format, "the header gives an empty image (\(width)×\(height))")
            }
            self.width = width
            self.height = height
            guard [1, 2, 4, 8, 16, 24, 32].contains(bitCount) else {
                throw failure(format, "\(bitCount) bits a pixel is not supported")
            }
            self.bitCount = bitCount

            if isOS2v2 && (rawCompression == 3 || rawCompression == 4) {
                throw failure(format, rawCompression == 3 ? "OS/2 Huffman compression is not supported" : "OS/2 RLE24 compression is not supported")
            }
            guard let compression = Compression(rawValue: rawCompression) else {
                throw failure(format, "compression method \(rawCompression) is not one BMP defines")
            }
            switch compression {
            case .jpeg, .png:
                throw failure(format, "embedded \(compression == .jpeg ? "JPEG" : "PNG") data (meant for printers) is not supported")
            case .rle8 where bitCount != 8, .rle4 where bitCount != 4:
                throw failure(format, "RLE\(compression == .rle8 ? 8 : 4) needs \(compression == .rle8 ? 8 : 4) bits a pixel, not \(bitCount)")
            case .bitfields where bitCount != 16 && bitCount != 32, .alphaBitfields where bitCount != 16 && bitCount != 32:
                throw failure(format, "bit-field masks need 16 or 32 bits a pixel, not \(bitCount)")
            default: break
            }
            self.compression = compression
            if topDown && (compression == .rle4 || compression == .rle8) {
                throw failure(format, "a top-down bitmap cannot be RLE-compressed")
            }

            // Masks live in the header from version 2 (52 bytes) on, and right after a
            // 40-byte header otherwise.
            var paletteStart = start + size
            var masks: [UInt32]?
            if compression == .bitfields || compression == .alphaBitfields {
                let wanted = compression == .alphaBitfields ? 4 : 3
                if size >= 52 {
                    masks = (0..<(size >= 56 ? 4 : 3)).map { r.u32(start + 40 + 4 * $0) }
                } else {
                    guard r.has(paletteStart, 4 * wanted) else { throw failure(format, "the data ends inside the bit-field masks") }
                    masks = (0..<wanted).map { r.u32(paletteStart + 4 * $0) }
                    paletteStart += 4 * wanted
                }
                // Browsers fall back to the default layout for masks that select
                // nothing, rather than showing black.
                if masks!.prefix(3).allSatisfy({ $0 == 0 }) { masks = nil }
            }
            self.masks = masks
            self.paletteStart = paletteStart
            paletteEntrySize = isCore ? 3 : 4
            if bitCount <= 8 {
                let most = 1 << bitCount
                paletteCount = colorsUsed == 0 || colorsUsed > most ? most : colorsUsed
            } else {
                paletteCount = 0
            }
        }
    }

    /// Decodes the pixels `header` describes. `pixelOffset` is the BMP file header's
    /// offset to them (0 or an offset inside the header means "after the palette");
    /// with `andMask`, the icon's 1-bit transparency mask follows the colour rows.
    static func decode(
        _ r: LittleEndianBytes, header h: Header, pixelOffset: Int, andMask: Bool,
        format: ImageFormat, options: DecodingOptions
    ) throws(ImagoError) -> Bitmap {
        try options.checkSize(width: h.width, height: h.height)
        let deadline = options.deadline()

        // The palette: at most 256 entries, straight from the data.
        guard r.has(h.paletteStart, h.paletteCount * h.paletteEntrySize) else {
            throw failure(format, "the data ends inside the palette")
        }
        var palette = [UInt32](repeating: 0xFF00_0000, count: 256)
        for i in 0..<h.paletteCount {
            let o = h.paletteStart + i * h.paletteEntrySize
            palette[i] = rgba(r: r.u8(o + 2), g: r.u8(o + 1), b: r.u8(o), a: 255)
        }

        let start = pixelOffset >= h.paletteEnd && !andMask ? pixelOffset : h.paletteEnd
        guard start <= r.count else { throw failure(format, "the pixel data starts past the end of the data") }
        let stride = (h.width * h.bitCount + 31) / 32 * 4
        let rowBytes = (h.width * h.bitCount + 7) / 8
        let compressed = h.compression == .rle4 || h.compression == .rle8
        if !compressed {
            // The last row's padding is often left out; everything before it must be there.
            guard r.has(start, stride * (h.height - 1) + rowBytes) else {
                throw failure(format, "the data ends before the image does")
            }
        }

        var usesAlpha = false
        var pixels = try Bitmap.make(width: h.width, height: h.height) { buffer throws(ImagoError) in
            let out = buffer.bindMemory(to: UInt32.self)
            if compressed {
                out.update(repeating: 0)
                try decodeRLE(r, from: start, header: h, palette: palette, into: out, format: format, deadline: deadline)
            } else {
                usesAlpha = try decodeRows(r, from: start, stride: stride, header: h, palette: palette, into: out, format: format, deadline: deadline)
            }
        }.pixels

        if andMask && !usesAlpha {
            // The AND mask is optional in practice: some writers leave it out, and
            // browsers then show the icon opaque.
            let maskStride = (h.width + 31) / 32 * 4
            let maskStart = start + stride * h.height
            if r.has(maskStart, maskStride * h.height) {
                pixels.withUnsafeMutableBytes { raw in
                    let out = raw.bindMemory(to: UInt32.self)
                    for row in 0..<h.height {
                        let y = h.topDown ? row : h.height - 1 - row
                        let o = maskStart + row * maskStride
                        for x in 0..<h.width where r.bytes[o + x / 8] & (0x80 >> UInt8(x % 8)) != 0 {
                            out[y * h.width + x] = 0
                        }
                    }
                }
            }
        }
        if usesAlpha {
            pixels.withUnsafeMutableBytes { $0.premultiplyRGBA(count: h.width * h.height) }
        }
        return Bitmap(width: h.width, height: h.height, pixels: pixels)
    }

    /// RGBA bytes in memory order, as one `UInt32`.
    static func rgba(r: Int, g: Int, b: Int, a: Int) -> UInt32 {
        (UInt32(r) | UInt32(g) << 8 | UInt32(b) << 16 | UInt32(a) << 24).littleEndian
    }

    /// One colour channel of a bit-field mask, widened to 8 bits by repeating its bits.
    struct Channel {
        let mask: UInt32
        let shift: UInt32
        let bits: UInt32

        init(_ mask: UInt32) {
            self.mask = mask
            shift = mask == 0 ? 0 : UInt32(mask.trailingZeroBitCount)
            bits = mask == 0 ? 0 : UInt32(32 - mask.leadingZeroBitCount) - shift
        }

        func value(_ pixel: UInt32) -> Int {
            // A mask that selects nothing gives 0 (and would never finish widening).
            if bits == 0 { return 0 }
            let v = (pixel & mask) >> shift
            if bits >= 8 { return Int(v >> (bits - 8)) }
            var widened = v << (8 - bits)
            var filled = bits
            while filled < 8 {
                widened |= widened >> filled
                filled *= 2
            }
            return Int(widened & 0xFF)
        }
    }

    /// Decodes uncompressed rows; returns whether the alpha channel carries anything
    /// (some pixel not fully transparent), in which case the pixels are left with
    /// straight alpha for the caller to premultiply, and are opaque otherwise.
    /// `decodingTimedOut` once `deadline` passes, checked every band of rows.
    static func decodeRows(
        _ r: LittleEndianBytes, from start: Int, stride: Int, header h: Header,
        palette: [UInt32], into out: UnsafeMutableBufferPointer<UInt32>, format: ImageFormat, deadline: DecodeDeadline
    ) throws(ImagoError) -> Bool {
        let width = h.width
        let bytes = r.bytes
        var masks = h.masks
        if masks == nil && h.bitCount == 16 { masks = [0x7C00, 0x03E0, 0x001F] }
        // 32-bit BI_RGB: the top byte is alpha for browsers, unless it is zero everywhere.
        if masks == nil && h.bitCount == 32 { masks = [0x00FF_0000, 0x0000_FF00, 0x0000_00FF, 0xFF00_0000] }
        let channels = (masks ?? []).map(Channel.init)
        let hasAlphaMask = channels.count > 3 && channels[3].bits > 0
        var anyAlpha = false
        let rowsPerCheck = DecodeDeadline.rowsPerCheck(width: width)

        for row in 0..<h.height {
            if row % rowsPerCheck == 0 { try deadline.check(format) }
            let y = h.topDown ? row : h.height - 1 - row
            let o = start + row * stride
            let line = out.baseAddress! + y * width
            switch h.bitCount {
            case 1, 2, 4, 8:
                let bpp = h.bitCount, perByte = 8 / bpp, valueMask = (1 << bpp) - 1
                for x in 0..<width {
                    let byte = Int(bytes[o + x / perByte])
                    let index = (byte >> (8 - bpp - (x % perByte) * bpp)) & valueMask
                    line[x] = palette[index]
                }
            case 24:
                for x in 0..<width {
                    let p = o + x * 3
                    line[x] = rgba(r: Int(bytes[p + 2]), g: Int(bytes[p + 1]), b: Int(bytes[p]), a: 255)
                }
            default:
                let wide = h.bitCount == 32
                for x in 0..<width {
                    let pixel = wide ? r.u32(o + x * 4) : UInt32(r.u16(o + x * 2))
                    let a = hasAlphaMask ? channels[3].value(pixel) : 255
                    if hasAlphaMask && a != 0 { anyAlpha = true }
                    line[x] = rgba(r: channels[0].value(pixel), g: channels[1].value(pixel), b: channels[2].value(pixel), a: a)
                }
            }
        }
        if hasAlphaMask && !anyAlpha {
            for i in 0..<out.count { out[i] |= UInt32(0xFF00_0000).littleEndian }
        }
        return hasAlphaMask && anyAlpha
    }

    /// Decodes RLE8 or RLE4 data into a transparent canvas. Every step reads at least
    /// two bytes, so the loop ends within the data's length. `decodingTimedOut` once
    /// `deadline` passes, checked every 256 records (a record draws at most 255
    /// pixels, so some 65,000 between checks).
    static func decodeRLE(
        _ r: LittleEndianBytes, from start: Int, header h: Header, palette: [UInt32],
        into out: UnsafeMutableBufferPointer<UInt32>, format: ImageFormat, deadline: DecodeDeadline
    ) throws(ImagoError) {
        let bytes = r.bytes, end = r.count
        let isRLE8 = h.compression == .rle8
        var i = start, x = 0, row = 0
        func put(_ index: Int) {
            if x < h.width && row < h.height {
                out[(h.height - 1 - row) * h.width + x] = palette[index]
            }
            x += 1
        }
        var records = 0
        while row < h.height {
            if records % 256 == 0 { try deadline.check(format) }
            records += 1
            guard i + 1 < end else { throw failure(format, "the data ends before the image does") }
            let count = Int(bytes[i]), value = Int(bytes[i + 1])
            i += 2
            if count > 0 {
                // A run of one index (RLE8) or two alternating ones (RLE4); runs past
                // the end of the row are clipped there.
                for k in 0..<min(count, max(h.width - x, 0)) {
                    put(isRLE8 ? value : (k % 2 == 0 ? value >> 4 : value & 0xF))
                }
                continue
            }
            switch value {
            case 0:
                x = 0
                row += 1
            case 1:
                return
            case 2:
                guard i + 1 < end else { throw failure(format, "the data ends before the image does") }
                x += Int(bytes[i])
                row += Int(bytes[i + 1])
                i += 2
            default:
                // Absolute mode: `value` literal indices, padded to a 16-bit boundary.
                let length = isRLE8 ? value : (value + 1) / 2
                guard i + length <= end else { throw failure(format, "the data ends before the image does") }
                for k in 0..<value {
                    let byte = Int(bytes[i + (isRLE8 ? k : k / 2)])
                    put(isRLE8 ? byte : (k % 2 == 0 ? byte >> 4 : byte & 0xF))
                }
                i += length + (length & 1)
            }
        }
    }
}
