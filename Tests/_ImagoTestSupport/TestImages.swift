import Foundation
import Imago
import Testing

/// Test images made in code, so that the tests using them need no corpus, and where
/// the parts of JPEG and PNG files lie, for the tests that cut files there. Tests of
/// the library, of the views and of the tool use them alike.
public enum TestImages {
    /// 32 × 24, opaque: red across, green down, blue by the product; the image the
    /// ThumbHash and BlurHash references hashed for the placeholder-hash tests.
    public static let hashGradient: Bitmap = {
        var pixels: [UInt8] = []
        for y in 0..<24 { for x in 0..<32 { pixels += [UInt8(x * 8), UInt8(y * 10), UInt8(128 + (x * y) % 64), 255] } }
        return Bitmap(width: 32, height: 24, pixels: pixels)
    }()

    /// A 160 × 120 baseline JPEG, made here so the test needs no corpus.
    public static let jpeg: Data = (try? ImageEncoders.JPEG(quality: 90).encode(InterlacedPNG.picture(width: 160, height: 120))) ?? Data()

    /// A 320 × 240 progressive JPEG of `InterlacedPNG.picture`, in libjpeg's standard
    /// progressive script: ten scans.
    public static let progressiveJPEG = (try? ImageEncoders.JPEG(quality: 90, progressive: true).encode(InterlacedPNG.picture(width: 320, height: 240))) ?? Data()

    /// Where the first scan's data starts: cuts before it leave nothing to show.
    public static func firstScanData(_ data: Data) throws -> Int {
        let bytes = [UInt8](data)
        var i = 2
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            let end = i + 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
            if bytes[i + 1] == 0xDA { return end }
            i = end
        }
        throw ImagoError.decodingFailed(format: .jpeg, reason: "no scan", codec: nil)
    }

    /// Offsets just after each SOS marker: the piece that ends there completes the
    /// scan before it.
    public static func scanBoundaries(_ data: Data) -> [Int] {
        let bytes = [UInt8](data)
        return (0..<bytes.count - 1).filter { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA }.map { $0 + 2 }
    }

    /// Where the chunk `type` starts (its length field), if the file has one.
    public static func chunkOffset(_ type: String, in data: Data) -> Int? {
        let bytes = [UInt8](data), name = Array(type.utf8)
        var i = 8
        while i + 8 <= bytes.count {
            let length = Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            if Array(bytes[i + 4..<i + 8]) == name { return i }
            i += 12 + length
        }
        return nil
    }
}

extension Corpus {
    /// Valid JPEGs that libjpeg-turbo 2.1 decodes: baseline, extended and progressive
    /// 8-bit, Huffman and arithmetic, from every corpus folder.
    public static func decodableJPEGs() throws -> [URL] {
        let folders = [
            "jpeg/jpegsuite/baseline", "jpeg/jpegsuite/extended_huffman", "jpeg/jpegsuite/extended_arithmetic",
            "jpeg/jpegsuite/progressive_huffman", "jpeg/jpegsuite/progressive_arithmetic",
            "jpeg/jpeg-decoder/reftest", "jpeg/jpeg-decoder/reftest/mozilla", "jpeg/jpeg-decoder/benches",
            "jpeg/libjpeg-turbo", "jpeg/exif-orientation", "photos/unsplash",
        ]
        return try folders.flatMap { try Corpus.files($0, ext: "jpg") }.filter { url in
            let name = url.lastPathComponent
            // 12-bit and DNL files are tested as the library's limits (JPEGDecoderTests); one
            // "jpg" in the Mozilla set is really a PNG.
            return !name.contains("x12_") && name != "monkey12.jpg" && !name.contains("_dnl") && name != "jpg-size-6x6.jpg"
        }
    }
}
