import Foundation
import Imago

/// Writes Adam7-interlaced PNG files, which the library's encoder does not make and
/// this machine has no tool for. The deflate stream uses stored (uncompressed)
/// blocks: valid zlib, and each pass then takes its share of the file in proportion
/// to its pixels, which makes cut points easy to reason about.
public enum InterlacedPNG {
    /// The seven Adam7 passes: start x, start y, step x, step y.
    public static let passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]

    /// An 8-bit RGB, interlaced PNG of `bitmap` (opaque pixels assumed), its image
    /// data split into IDAT chunks of at most `chunkSize` bytes.
    public static func encode(_ bitmap: Bitmap, chunkSize: Int = 4096) -> Data {
        var raw: [UInt8] = []
        for (x0, y0, dx, dy) in passes {
            guard x0 < bitmap.width, y0 < bitmap.height else { continue }
            for y in stride(from: y0, to: bitmap.height, by: dy) {
                raw.append(0)  // filter: none
                for x in stride(from: x0, to: bitmap.width, by: dx) {
                    let p = bitmap[x, y]
                    raw += [p.r, p.g, p.b]
                }
            }
        }
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        return PNGFile.assemble(
            header: be32(bitmap.width) + be32(bitmap.height) + [8, 2, 0, 0, 1], scanlines: raw, chunkSize: chunkSize)
    }

    /// A smooth, opaque test picture: gradients with a few hard edges, so that a
    /// coarse pass looks like the image and a wrong pixel shows.
    public static func picture(width: Int, height: Int) -> Bitmap {
        var pixels: [UInt8] = []
        pixels.reserveCapacity(width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let band = (x / 16 + y / 16) % 2 == 0 ? 40 : 0
                pixels += [UInt8(x * 200 / width + band), UInt8(y * 200 / height + band), UInt8((x + y) * 120 / (width + height) + 60), 255]
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }
}

/// PNG files put together from their parts, for what the library's encoder does not
/// write (interlacing, 16 bits, chunks such as cICP). The deflate stream uses stored
/// (uncompressed) blocks: valid zlib, with the file's bytes where one expects them.
public enum PNGFile {
    /// A PNG of `header` (IHDR's 13 bytes), then `chunks` (type and body, before the
    /// image data), then the filtered `scanlines` in IDAT chunks of at most `chunkSize` bytes.
    public static func assemble(header: [UInt8], chunks: [(String, [UInt8])] = [], scanlines raw: [UInt8], chunkSize: Int = 4096) -> Data {
        let zlib = Self.zlib(raw)
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ body: [UInt8]) {
            let length = UInt32(body.count)
            file += [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)]
            let typed = Array(type.utf8) + body
            file += typed
            let crc = crc32(typed)
            file += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        }
        chunk("IHDR", header)
        for (type, body) in chunks { chunk(type, body) }
        for start in stride(from: 0, to: zlib.count, by: chunkSize) {
            chunk("IDAT", Array(zlib[start..<min(start + chunkSize, zlib.count)]))
        }
        chunk("IEND", [])
        return Data(file)
    }

    /// `raw` as a zlib stream of stored blocks: what IDAT and iCCP hold.
    public static func zlib(_ raw: [UInt8]) -> [UInt8] {
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, raw.count - offset)
            let last: UInt8 = offset + count == raw.count ? 1 : 0
            zlib += [last, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)]
            zlib += raw[offset..<offset + count]
            offset += count
        } while offset < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        let adler = b << 16 | a
        zlib += [UInt8(adler >> 24), UInt8(adler >> 16 & 0xFF), UInt8(adler >> 8 & 0xFF), UInt8(adler & 0xFF)]
        return zlib
    }
}
