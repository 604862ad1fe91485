import Foundation
import Imago

/// Comparison of decoded pixels against a reference decode.
public struct PixelDifference {
    /// The largest difference of any channel.
    public var maximum = 0
    /// The sum of every channel's difference.
    public var total = 0
    /// The channels compared.
    public var count = 0
    /// The mean difference a channel.
    public var mean: Double { count == 0 ? 0 : Double(total) / Double(count) }
}

extension Bitmap {
    /// Channel-by-channel difference to `other` (same size required).
    public func difference(to other: Bitmap) -> PixelDifference {
        precondition(width == other.width && height == other.height)
        var result = PixelDifference()
        for y in 0..<height {
            for x in 0..<width * 4 {
                let d = abs(Int(pixels[y * bytesPerRow + x]) - Int(other.pixels[y * other.bytesPerRow + x]))
                result.maximum = max(result.maximum, d)
                result.total += d
                result.count += 1
            }
        }
        return result
    }

    /// Whether no colour value exceeds its pixel's alpha, as premultiplication ensures.
    public var isPremultiplied: Bool {
        for i in stride(from: 0, to: pixels.count, by: 4) {
            let alpha = pixels[i + 3]
            if pixels[i] > alpha || pixels[i + 1] > alpha || pixels[i + 2] > alpha { return false }
        }
        return true
    }

    /// Averages of `block`×`block` tiles: coarse enough that JPEG re-encoding noise
    /// disappears, fine enough that a wrong rotation or mirror cannot match.
    public func blockAverages(block: Int) -> [Double] {
        var averages: [Double] = []
        for by in stride(from: 0, to: height - block + 1, by: block) {
            for bx in stride(from: 0, to: width - block + 1, by: block) {
                for c in 0..<3 {
                    var sum = 0
                    for y in by..<by + block {
                        for x in bx..<bx + block { sum += Int(pixels[y * bytesPerRow + x * 4 + c]) }
                    }
                    averages.append(Double(sum) / Double(block * block))
                }
            }
        }
        return averages
    }

    /// A bitmap whose pixel (x, y) is (x, y, index, 255): every pixel tells where it
    /// came from.
    public static func coordinates(width: Int, height: Int) -> Bitmap {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width { pixels += [UInt8(x), UInt8(y), UInt8(y * width + x), 255] }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }
}

/// Test pictures and the colours that tell them apart.
public enum Pixels {
    /// An opaque bitmap of one colour.
    public static func solid(width: Int, height: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for i in stride(from: 0, to: pixels.count, by: 4) {
            pixels[i] = r
            pixels[i + 1] = g
            pixels[i + 2] = b
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// The colour that stands for item `index` (below 216) of a test set: channels
    /// 45 apart, so a scaled or blended pixel is still told apart from its neighbours.
    public static func colour(_ index: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        (UInt8(20 + (index % 6) * 45), UInt8(20 + (index / 6 % 6) * 45), UInt8(20 + (index / 36) * 45))
    }

    /// The index whose colour is nearest to `pixel`, and how far it is.
    public static func index(of pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8)) -> (index: Int, distance: Int) {
        func channel(_ value: UInt8) -> Int { max(0, min(5, Int(((Double(value) - 20) / 45).rounded()))) }
        let index = channel(pixel.r) + channel(pixel.g) * 6 + channel(pixel.b) * 36
        let c = colour(index)
        let distance = max(abs(Int(c.r) - Int(pixel.r)), abs(Int(c.g) - Int(pixel.g)), abs(Int(c.b) - Int(pixel.b)))
        return (index, distance)
    }

    /// PNG bytes of `bitmap`, made by Imago's encoder (libpng).
    public static func png(_ bitmap: Bitmap) throws -> Data {
        try ImageEncoders.PNG().encode(bitmap)
    }
}

/// Cuts of `data` that any decoder must reject: a tenth, half, nine tenths.
public func truncations(of data: Data) -> [Data] {
    [data.count / 10, data.count / 2, data.count * 9 / 10].map { data.prefix($0) }
}

/// Big-endian CRC-32 as PNG uses it, for tests that forge chunks.
public func crc32(_ bytes: some Sequence<UInt8>) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

extension Bitmap {
    /// Peak signal-to-noise ratio of the colour channels against `other` (same size
    /// required), in dB: the usual yardstick for lossy codecs, where about 30 dB shows
    /// visible artefacts and 40 dB looks like the original. Infinite when identical.
    public func psnr(to other: Bitmap) -> Double {
        precondition(width == other.width && height == other.height)
        var squares = 0
        for y in 0..<height {
            for x in 0..<width {
                for c in 0..<3 {
                    let d = Int(pixels[y * bytesPerRow + x * 4 + c]) - Int(other.pixels[y * other.bytesPerRow + x * 4 + c])
                    squares += d * d
                }
            }
        }
        guard squares > 0 else { return .infinity }
        let mse = Double(squares) / Double(width * height * 3)
        return 10 * log10(255 * 255 / mse)
    }
}

extension ImageDecoding {
    /// The error decoding `data` throws, or nil when it decodes.
    public func failure(_ data: Data) -> ImagoError? {
        do {
            _ = try decode(data, options: DecodingOptions())
            return nil
        } catch {
            return error
        }
    }
}

extension Bitmap {
    /// An opaque gradient, smooth enough to compress like a photo.
    public static func smoothPhoto(width: Int, height: Int) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                pixels[i] = UInt8(x * 255 / width)
                pixels[i + 1] = UInt8(y * 255 / height)
                pixels[i + 2] = UInt8((x + y) % 256)
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }
}
