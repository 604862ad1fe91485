#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The huge and hostile files of the thumbnail memory tests, made here: the library's
/// tests (ImagoTests) and the peaks measured in the `imago` process (ImagoToolTests,
/// where this file is a symbolic link) use the same files.
extension ThumbnailMemoryTests {
    /// An animated WebP on a `side`² canvas: frames of `frameSide`² in flat colours,
    /// some half transparent and blended, one disposed to the background, placed
    /// across the canvas (lossless, so their edges are exact).
    static func largeCanvasWebP(side: Int, frameSide: Int) throws -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
            Array(fourCC.utf8) + le(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
        }
        let colours: [(UInt8, UInt8, UInt8, UInt8)] = [(200, 40, 40, 255), (20, 60, 100, 128), (40, 160, 60, 255), (90, 90, 0, 180)]
        var frames: [UInt8] = []
        for (number, colour) in colours.enumerated() {
            let pixels = [UInt8]((0..<frameSide * frameSide).flatMap { _ in [colour.0, colour.1, colour.2, colour.3] })
            let still = try ImageEncoders.WebP(lossless: true).encode(Bitmap(width: frameSide, height: frameSide, pixels: pixels))
            let image = [UInt8](still[12...])
            // Even offsets (the format stores half), stepping across the canvas.
            let offset = (side - frameSide) * number / colours.count / 2 * 2
            let flags: UInt8 = number == 2 ? 0x01 : 0x00  // frame 2 disposed; every frame blended
            frames += chunk("ANMF", le(offset / 2, 3) + le(offset / 2, 3) + le(frameSide - 1, 3) + le(frameSide - 1, 3)
                + le(100, 3) + [flags] + image)
        }
        let body = Array("WEBP".utf8) + chunk("VP8X", [0x12, 0, 0, 0] + le(side - 1, 3) + le(side - 1, 3))
            + chunk("ANIM", [0, 0, 0, 0, 0, 0]) + frames
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    /// A GIF of `side`² whose frames each fill the screen with one colour of
    /// `TestGIF.basicPalette`, LZW-coded as giflib's encoder codes a run: each code
    /// one pixel longer than the last, so 121 million pixels take 90 KB.
    static func solidGIF(side: Int, colours: [UInt8]) -> Data {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        var file = Array("GIF89a".utf8) + le16(side) + le16(side) + [0xF1, 0, 0]
        file += TestGIF.basicPalette.flatMap { $0 }
        file += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        let codeSize = 2, clear = 4, end = 5
        for colour in colours {
            file += [0x21, 0xF9, 4, 0x04, 10, 0, 0, 0]
            file += [0x2C] + le16(0) + le16(0) + le16(side) + le16(side) + [0, UInt8(codeSize)]
            var data: [UInt8] = [], accumulator = 0, bitCount = 0
            var running = end + 1, bits = codeSize + 1, limit = 1 << bits
            func output(_ code: Int) {
                accumulator |= code << bitCount
                bitCount += bits
                while bitCount >= 8 {
                    data.append(UInt8(accumulator & 0xFF))
                    accumulator >>= 8
                    bitCount -= 8
                }
                if running >= limit && code <= 4095 && bits < 12 {
                    bits += 1
                    limit = 1 << bits
                }
            }
            // The code of the run of each length the table holds.
            var codes = [Int](repeating: 0, count: 4097)
            codes[1] = Int(colour)
            var longest = 1, current = 1, remaining = side * side - 1
            output(clear)
            while remaining > 0 {
                let absorbed = min(longest - current, remaining)
                current += absorbed
                remaining -= absorbed
                guard remaining > 0 else { break }
                output(codes[current])
                remaining -= 1
                if running >= 4095 {
                    output(clear)
                    (running, bits, limit, longest) = (end + 1, codeSize + 1, 1 << (codeSize + 1), 1)
                } else {
                    codes[current + 1] = running
                    running += 1
                    longest = current + 1
                }
                current = 1
            }
            output(codes[current])
            output(end)
            if bitCount > 0 { data.append(UInt8(accumulator & 0xFF)) }
            for start in stride(from: 0, to: data.count, by: 255) {
                let block = data[start..<min(start + 255, data.count)]
                file += [UInt8(block.count)] + block
            }
            file += [0]
        }
        return Data(file + [0x3B])
    }

    /// A 40×24 AVIF whose `ispe` box claims `side`²: libavif would scale its frame
    /// up to the claim.
    static func lyingAVIF(side: Int) throws -> Data {
        var bytes = [UInt8](try Fixture.data("avif/still-420.avif"))
        let ispe = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual("ispe".utf8) })
        for (offset, value) in [(8, side), (12, side)] {
            for k in 0..<4 { bytes[ispe + offset + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * k)) }
        }
        return Data(bytes)
    }

    static func size(of file: URL) -> String {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        return bytes >= 1 << 20 ? "\(bytes >> 20) MB" : bytes >= 1 << 10 ? "\(bytes >> 10) KB" : "\(bytes)-byte"
    }

    /// An 11000² black PNG, made once.
    static let hugeBlackPNG = blackPNG(side: 11_000)

    /// An 8-bit RGB PNG of `side`² black pixels, its rows one zlib stream of zeros
    /// (filter bytes included): 2.3 MB for 11000².
    static func blackPNG(side: Int) -> Data {
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ body: [UInt8]) {
            let typed = Array(type.utf8) + body
            file += bigEndian(body.count) + typed
            file += bigEndian(Int(typed.withUnsafeBytes { CRC32.update(0, $0) }))
        }
        chunk("IHDR", bigEndian(side) + bigEndian(side) + [8, 2, 0, 0, 0])
        chunk("IDAT", zerosZlib(count: side * (1 + side * 3)))
        chunk("IEND", [])
        return Data(file)
    }

    /// An 8-bit RGB TIFF of `width` × `height` black pixels in strips of
    /// `rowsPerStrip` rows, each compressed with Deflate, as Adobe's TIFF allows.
    static func blackTIFF(width: Int, height: Int, rowsPerStrip: Int) -> Data {
        rgbTIFF(width: width, height: height, rowsPerStrip: rowsPerStrip, compression: 8) { rows in
            zerosZlib(count: rows.count * width * 3)
        }
    }

    /// A little-endian RGB TIFF whose strips `strip` makes from their rows.
    static func rgbTIFF(width: Int, height: Int, rowsPerStrip: Int, compression: Int, strip: (Range<Int>) -> [UInt8]) -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        let strips = stride(from: 0, to: height, by: rowsPerStrip).map { strip($0..<min(height, $0 + rowsPerStrip)) }
        // Header, directory, the values too long for an entry, then the strips.
        let entryCount = 10
        let extraStart = 8 + 2 + entryCount * 12 + 4
        let stripsStart = extraStart + 6 + strips.count * 8
        var offsets: [Int] = []
        var position = stripsStart
        for strip in strips {
            offsets.append(position)
            position += strip.count
        }
        let entries: [(tag: Int, type: Int, count: Int, value: [UInt8])] = [
            (256, 4, 1, le(width, 4)), (257, 4, 1, le(height, 4)), (258, 3, 3, le(8, 2) + le(8, 2) + le(8, 2)),
            (259, 3, 1, le(compression, 2)), (262, 3, 1, le(2, 2)), (273, 4, strips.count, offsets.flatMap { le($0, 4) }),
            (277, 3, 1, le(3, 2)), (278, 4, 1, le(rowsPerStrip, 4)), (279, 4, strips.count, strips.flatMap { le($0.count, 4) }),
            (284, 3, 1, le(1, 2)),
        ]
        var file: [UInt8] = Array("II".utf8) + le(42, 2) + le(8, 4) + le(entries.count, 2)
        var extra: [UInt8] = []
        for entry in entries {
            file += le(entry.tag, 2) + le(entry.type, 2) + le(entry.count, 4)
            if entry.value.count <= 4 {
                file += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
            } else {
                file += le(extraStart + extra.count, 4)
                extra += entry.value
            }
        }
        file += le(0, 4) + extra
        precondition(file.count == stripsStart, "TIFF layout")
        for strip in strips { file += strip }
        return Data(file)
    }

    static func bigEndian(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// A zlib stream of `count` zero bytes: one literal zero, then copies of 258
    /// bytes at distance 1 in a fixed-Huffman block, 13 bits each.
    static func zerosZlib(count: Int) -> [UInt8] {
        var deflate: [UInt8] = []
        deflate.reserveCapacity(count / 258 * 13 / 8 + 64)
        var bits: UInt64 = 0, bitCount = 0
        // Huffman codes go most significant bit first into a stream filled from
        // each byte's least significant bit: reversed here.
        func put(_ value: UInt64, _ count: Int, reversed: Bool = false) {
            var v = value
            if reversed {
                v = 0
                for i in 0..<count where value >> i & 1 == 1 { v |= 1 << (count - 1 - i) }
            }
            bits |= v << bitCount
            bitCount += count
            while bitCount >= 8 {
                deflate.append(UInt8(bits & 0xFF))
                bits >>= 8
                bitCount -= 8
            }
        }
        put(1, 1)  // the last block
        put(1, 2)  // fixed Huffman codes
        put(0x30, 8, reversed: true)  // literal 0
        // Length 258 is symbol 285 (8 bits, 11000101), distance 1 is code 0 (5 bits).
        let match: UInt64 = {
            var v: UInt64 = 0
            for i in 0..<8 where 0b1100_0101 >> i & 1 == 1 { v |= 1 << (7 - i) }
            return v
        }()
        var left = count - 1
        while left >= 258 {
            put(match, 13)
            left -= 258
        }
        for _ in 0..<left { put(0x30, 8, reversed: true) }
        put(0, 7)  // end of block
        if bitCount > 0 { put(0, 8 - bitCount) }
        let adler = UInt32(count % 65521) << 16 | 1
        return [0x78, 0x01] + deflate + bigEndian(Int(adler))
    }
}
#endif
