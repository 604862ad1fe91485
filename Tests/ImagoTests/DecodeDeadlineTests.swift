#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Every decoder stops at the decode's deadline as it goes, not only after the image:
/// a large input given 0.05 s fails with `decodingTimedOut` long before it would have
/// finished, and decodes without the limit. The bounds are loose (CI machines are
/// loaded); what they catch is a decoder that runs to the end regardless.
@Suite struct DecodeDeadlineTests {
    static let limit = 0.05

    /// Decodes `data` with a 0.05 s limit, expecting `decodingTimedOut` for `format`
    /// within a few seconds, then without a limit, expecting `width` × `height`.
    static func expectStopped(
        _ data: Data, format: ImageFormat, width: Int, height: Int, decoder: any ImageDecoding,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        var options = DecodingOptions()
        options.timeout = limit
        let clock = ContinuousClock()
        let stopped = clock.measure {
            #expect(throws: ImagoError.decodingTimedOut(format: format, seconds: limit), sourceLocation: sourceLocation) {
                try decoder.decode(data, options: options)
            }
        }
        var whole = Duration.zero
        whole = clock.measure {
            #expect(throws: Never.self, sourceLocation: sourceLocation) {
                let image = try decoder.decode(data, options: DecodingOptions())
                #expect(image.width == width && image.height == height, sourceLocation: sourceLocation)
            }
        }
        print("\(format) \(width)×\(height): stopped after \(stopped) by a \(limit) s limit; \(whole) without one")
        #expect(stopped < .seconds(3), sourceLocation: sourceLocation)
    }

    // MARK: GIF

    /// A one-colour frame of `width` × `height` whose LZW codes grow to the longest
    /// strings the table holds (about 2,700 pixels a byte): 25 million pixels in
    /// 17 KB, as giflib's own encoder would write them.
    static func solidGIF(width: Int, height: Int) -> Data {
        let codeSize = 2, clear = 1 << codeSize, end = clear + 1, first = clear + 2
        var data: [UInt8] = [], accumulator: UInt64 = 0, bits = 0
        var running = first, codeWidth = codeSize + 1, limit = 1 << codeWidth
        // As giflib's EGifCompressOutput: the width grows after a code is written, from
        // the next free code before the new entry is added.
        func put(_ code: Int) {
            accumulator |= UInt64(code) << UInt64(bits)
            bits += codeWidth
            while bits >= 8 {
                data.append(UInt8(accumulator & 0xFF))
                accumulator >>= 8
                bits -= 8
            }
            if running >= limit && code <= 4095 {
                codeWidth += 1
                limit = 1 << codeWidth
            }
        }
        put(clear)
        var remaining = width * height
        while remaining > 0 {
            // Code `first + k` stands for k + 2 pixels of index 0; index 0 for one.
            let length = min(remaining, running - first + 1)
            put(length == 1 ? 0 : first + length - 2)
            remaining -= length
            guard remaining > 0 else { break }
            if running >= 4095 {
                put(clear)
                (running, codeWidth) = (first, codeSize + 1)
                limit = 1 << codeWidth
            } else {
                running += 1
            }
        }
        put(end)
        if bits > 0 { data.append(UInt8(accumulator & 0xFF)) }

        func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        var file = Array("GIF89a".utf8) + le16(width) + le16(height) + [0xF1, 0, 0] + [0, 0, 0, 255, 255, 255, 0, 0, 255, 0, 255, 0]
        file += [0x2C] + le16(0) + le16(0) + le16(width) + le16(height) + [0, UInt8(codeSize)]
        for start in stride(from: 0, to: data.count, by: 255) {
            let block = data[start..<min(start + 255, data.count)]
            file += [UInt8(block.count)] + block
        }
        file += [0, 0x3B]
        return Data(file)
    }

    @Test func aLargeGIFStopsAtTheDeadline() async throws {
        let data = try await offThePool { Self.solidGIF(width: 5000, height: 5000) }
        try await offThePool {
            Self.expectStopped(data, format: .gif, width: 5000, height: 5000, decoder: ImageDecoders.GIF())
        }
    }

    // MARK: TIFF

    /// A black RGB page in Deflate strips of `rowsPerStrip`.
    static func blackTIFF(side: Int, rowsPerStrip: Int) -> Data {
        ThumbnailMemoryTests.rgbTIFF(width: side, height: side, rowsPerStrip: rowsPerStrip, compression: 8) { rows in
            ThumbnailMemoryTests.zerosZlib(count: rows.count * side * 3)
        }
    }

    /// Full size, strips of 64 rows (checked between strips) and a page of nearly one
    /// strip (read by scanlines).
    @Test(arguments: [64, 4999]) func aLargeTIFFStopsAtTheDeadline(rowsPerStrip: Int) async throws {
        let data = try await offThePool { Self.blackTIFF(side: 5000, rowsPerStrip: rowsPerStrip) }
        try await offThePool {
            Self.expectStopped(data, format: .tiff, width: 5000, height: 5000, decoder: ImageDecoders.TIFF())
        }
    }

    // MARK: BMP

    /// An 8-bit RLE8 BMP of runs of 255 pixels, bottom row first.
    static func rleBMP(width: Int, height: Int) -> Data {
        var row: [UInt8] = []
        var left = width
        while left > 0 {
            let run = min(255, left)
            row += [UInt8(run), UInt8(left % 7)]
            left -= run
        }
        row += [0, 0]
        var pixels = [UInt8]()
        pixels.reserveCapacity(row.count * height + 2)
        for _ in 0..<height { pixels += row }
        pixels += [0, 1]
        return bmp(width: width, height: height, compression: 1, pixels: pixels)
    }

    /// A BMP of 8-bit `pixels` with a BITMAPINFOHEADER and a palette of 256 colours.
    static func bmp(width: Int, height: Int, compression: Int, pixels: [UInt8]) -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        var palette: [UInt8] = []
        for i in 0..<256 { palette += [UInt8(i), UInt8(255 - i), UInt8(i / 2), 0] }
        let offset = 14 + 40 + palette.count
        var file: [UInt8] = Array("BM".utf8)
        file += le(offset + pixels.count, 4)
        file += le(0, 4)
        file += le(offset, 4)
        for (value, count) in [(40, 4), (width, 4), (height, 4), (1, 2), (8, 2), (compression, 4), (pixels.count, 4),
                               (2835, 4), (2835, 4), (256, 4), (0, 4)] {
            file += le(value, count)
        }
        return Data(file + palette + pixels)
    }

    /// An 8-bit uncompressed BMP, each row's indices a ramp.
    static func palettedBMP(width: Int, height: Int) -> Data {
        let stride = (width + 3) / 4 * 4
        let row = (0..<stride).map { UInt8(truncatingIfNeeded: $0) }
        var pixels: [UInt8] = []
        pixels.reserveCapacity(stride * height)
        for _ in 0..<height { pixels += row }
        return bmp(width: width, height: height, compression: 0, pixels: pixels)
    }

    @Test func aLargeBMPStopsAtTheDeadline() async throws {
        let (rle, plain) = try await offThePool { (Self.rleBMP(width: 6000, height: 6000), Self.palettedBMP(width: 4000, height: 4000)) }
        try await offThePool {
            Self.expectStopped(rle, format: .bmp, width: 6000, height: 6000, decoder: ImageDecoders.BMP())
            Self.expectStopped(plain, format: .bmp, width: 4000, height: 4000, decoder: ImageDecoders.BMP())
        }
    }

    // MARK: WebP

    /// A lossy still of 6000×4000 (a pattern of blocks, so each macroblock has work):
    /// fed to libwebp's incremental decoder a slice at a time.
    @Test func aLargeWebPStopsAtTheDeadline() async throws {
        let data = try await offThePool {
            let (width, height) = (6000, 4000)
            var pixels = [UInt8](repeating: 255, count: width * height * 4)
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 4
                    pixels[i] = UInt8(truncatingIfNeeded: x ^ y)
                    pixels[i + 1] = UInt8(truncatingIfNeeded: x &* 3 &+ y)
                    pixels[i + 2] = UInt8(truncatingIfNeeded: (x / 16) &* (y / 16))
                }
            }
            return try ImageEncoders.WebP(quality: 90).encode(Bitmap(width: width, height: height, pixels: pixels))
        }
        try await offThePool {
            Self.expectStopped(data, format: .webp, width: 6000, height: 4000, decoder: ImageDecoders.WebP())
        }
    }

    // MARK: Formats checked between library calls

    /// libavif, libheif and an icon's bitmap entry cannot be stopped midway by a small
    /// file here; a deadline already past stops each at its first check, and a
    /// generous one changes nothing.
    @Test(arguments: [("avif/alpha.avif", ImageFormat.avif), ("heic/still.heic", .heic), ("bmp/icon.ico", .ico)])
    func aDeadlineAlreadyPastStops(_ path: String, _ format: ImageFormat) throws {
        let data = try Fixture.data(path)
        let decoder = try #require(ImageDecoders.Registry.builtIn.first { $0.canDecode(data, format: format) })
        var options = DecodingOptions()
        options.timeout = 0
        #expect(throws: ImagoError.decodingTimedOut(format: format, seconds: 0)) {
            try decoder.decode(data, options: options)
        }
        options.timeout = 600
        #expect(try decoder.decode(data, options: options).bitmap == decoder.decode(data, options: DecodingOptions()).bitmap)
    }
}
#endif
