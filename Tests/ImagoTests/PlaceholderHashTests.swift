import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// ThumbHash and BlurHash against their reference implementations: Evan Wallace's
/// `thumbhash.js` and Wolt's C `blurhash`, run on the images below and on example
/// hashes (Wolt's own for BlurHash); the figures here are what the references printed.
@Suite struct PlaceholderHashTests {
    /// The gradient the references hashed (`TestImages.hashGradient`).
    static var gradient: Bitmap { TestImages.hashGradient }

    /// 20 × 30, a disc of radius 9 on transparency, red on its left half.
    static let disc: Bitmap = {
        var pixels: [UInt8] = []
        for y in 0..<30 {
            for x in 0..<20 {
                let inside = (x - 10) * (x - 10) + (y - 15) * (y - 15) <= 81
                pixels += inside ? [x < 10 ? 255 : 0, UInt8(y * 8), 100, 255] : [0, 0, 0, 0]
            }
        }
        return Bitmap(width: 20, height: 30, pixels: pixels)
    }()

    /// A pixel the reference printed: position and straight RGBA.
    typealias Sample = (x: Int, y: Int, rgba: [Int])

    static func expectSamples(_ bitmap: Bitmap, _ samples: [Sample], tolerance: Int = 1, _ comment: String,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        for sample in samples {
            let p = bitmap[sample.x, sample.y]
            // The reference gives straight colours; ours are premultiplied.
            let a = sample.rgba[3]
            let expected = sample.rgba.prefix(3).map { Int((Double($0 * a) / 255).rounded()) } + [a]
            let actual = [Int(p.r), Int(p.g), Int(p.b), Int(p.a)]
            #expect(zip(actual, expected).allSatisfy { abs($0 - $1) <= tolerance },
                    "\(comment) at (\(sample.x), \(sample.y)): \(actual) against \(expected)", sourceLocation: sourceLocation)
        }
    }

    @Test func thumbHashEncodesAsTheReference() {
        #expect(ThumbHash.encodeBase64(Self.gradient) == "4RYKNZpwdndwd3h3h2iHd4CACPeI")
        #expect(ThumbHash.encodeBase64(Self.disc) == "nPiFGw5Gf3aIonh/dviXd0dnh4iAiYc=")
        #expect(ThumbHash.encode(Self.disc).count == 23)
        // Larger bitmaps are scaled to fit 100 × 100 first: the hash of a large
        // gradient is that of the same gradient small, within the quantisation.
        let large = ProcessorTests.photo.fitted(to: TargetSize(width: 240, height: 160, allowsUpscaling: true))
        let small = ProcessorTests.photo.fitted(to: TargetSize(width: 96, height: 64, allowsUpscaling: true))
        let (a, b) = (ThumbHash.encode(large), ThumbHash.encode(small))
        #expect(a.count == b.count && zip(a, b).filter { $0 != $1 }.count <= 4)
    }

    @Test func thumbHashDecodesAsTheReference() throws {
        let cases: [(String, Int, Int, [Sample])] = [
            ("1QcSHQRnh493V4dIh4eXh1h4kJUI", 23, 32, [
                (0, 0, [64, 77, 113, 255]), (22, 0, [84, 109, 139, 255]), (0, 31, [0, 12, 42, 255]),
                (22, 31, [0, 4, 39, 255]), (11, 16, [140, 109, 88, 255]), (5, 7, [146, 138, 148, 255]),
            ]),
            ("3PcNNYSFeXh/d3eld0iHZoZgVwh2", 32, 23, [
                (0, 0, [47, 82, 154, 255]), (31, 0, [100, 113, 147, 255]), (0, 22, [99, 86, 36, 255]),
                (31, 22, [76, 57, 10, 255]), (16, 11, [110, 114, 115, 255]), (5, 7, [139, 160, 197, 255]),
            ]),
            ("nPiFGw5Gf3aIonh/dviXd0dnh4iAiYc=", 19, 32, [
                (0, 0, [167, 100, 91, 0]), (9, 16, [122, 117, 99, 255]), (5, 7, [152, 104, 94, 109]),
            ]),
        ]
        for (hash, width, height, samples) in cases {
            let bitmap = try ThumbHash.decode(base64: hash)
            #expect(bitmap.width == width && bitmap.height == height, "\(hash)")
            #expect(bitmap.isPremultiplied)
            Self.expectSamples(bitmap, samples, hash)
        }
        // Base64 without its padding is taken too.
        #expect(try ThumbHash.decode(base64: "nPiFGw5Gf3aIonh/dviXd0dnh4iAiYc") == ThumbHash.decode(base64: "nPiFGw5Gf3aIonh/dviXd0dnh4iAiYc="))
        #expect(abs(ThumbHash.approximateAspectRatio([UInt8](Data(base64Encoded: "1QcSHQRnh493V4dIh4eXh1h4kJUI")!)) - 5.0 / 7) < 1e-9)
    }

    @Test func blurHashEncodesAsTheReference() {
        #expect(BlurHash.encode(Self.gradient) == "LxH27]2qwvX7mGWVjsf6gHfifQfj")
        #expect(BlurHash.encode(Self.gradient, components: (1, 1)) == "00H27]")
        #expect(BlurHash.encode(Self.gradient, components: (9, 5))
            == "ixH27]2qwvX7a_oeWoofWnmGWVjsf6fQf6fQf8fQgHfifQfjfQfkfRfkfRn+WojtfRfRfRfRfRfQe.fPfRfRfRfRfQfQfP")
        #expect(BlurHash.components(of: "LxH27]2qwvX7mGWVjsf6gHfifQfj")! == (4, 3))
        // Out-of-range component counts are clamped, not trapped on.
        #expect(BlurHash.encode(Self.gradient, components: (0, 12)).count == 4 + 2 * 9)
    }

    @Test func blurHashDecodesAsTheReference() throws {
        // Wolt's own example hashes, decoded at 32 × 32 by the C reference.
        let positions = [(0, 0), (31, 0), (0, 31), (31, 31), (16, 16), (5, 20), (20, 5), (10, 10)]
        let cases: [(String, [[Int]])] = [
            ("LEHV6nWB2yk8pyo0adR*.7kCMdnj", [[135, 164, 177], [137, 166, 181], [136, 144, 147], [133, 142, 147],
                                             [158, 125, 108], [132, 139, 146], [170, 169, 163], [156, 149, 150]]),
            ("LGF5]+Yk^6#M@-5c,1J5@[or[Q6.", [[176, 118, 163], [225, 84, 129], [171, 161, 88], [143, 97, 98],
                                             [107, 126, 130], [115, 157, 176], [128, 92, 130], [104, 133, 195]]),
            ("L6PZfSi_.AyE_3t7t7R**0o#DgR4", [[229, 228, 226], [227, 226, 222], [218, 217, 215], [217, 216, 213],
                                             [214, 205, 194], [220, 214, 211], [225, 223, 220], [221, 212, 205]]),
            ("LKO2?U%2Tw=w]~RBVZRi};RPxuwH", [[251, 193, 161], [228, 204, 177], [235, 213, 184], [192, 191, 182],
                                             [196, 161, 159], [195, 184, 174], [239, 186, 150], [206, 173, 163]]),
        ]
        for (hash, colours) in cases {
            let bitmap = try BlurHash.decode(hash, width: 32, height: 32)
            #expect(bitmap.width == 32 && bitmap.height == 32 && !bitmap.hasAlpha)
            Self.expectSamples(bitmap, zip(positions, colours).map { ($0.0, $0.1, $1 + [255]) }, hash)
        }
        // Sizes are clamped to what a placeholder needs.
        let huge = try BlurHash.decode("LEHV6nWB2yk8pyo0adR*.7kCMdnj", width: 100_000, height: 0)
        #expect(huge.width == 512 && huge.height == 1)
    }

    /// Encoded then decoded, a smooth image comes back close to itself.
    @Test func roundTripsKeepTheImage() throws {
        let smooth: Bitmap = {
            var pixels: [UInt8] = []
            for y in 0..<48 {
                for x in 0..<64 {
                    let r = 128 + 100 * sin(Double(x) / 20), g = Double(y * 5), b = 60 + Double(x + y)
                    pixels += [UInt8(r), UInt8(g), UInt8(b), 255]
                }
            }
            return Bitmap(width: 64, height: 48, pixels: pixels)
        }()
        let blur = try BlurHash.decode(BlurHash.encode(smooth), width: 64, height: 48)
        #expect(blur.difference(to: smooth).mean < 10, "\(blur.difference(to: smooth).mean)")
        let thumb = try ThumbHash.decode(ThumbHash.encode(smooth))
        // 4:3 comes back as the 7:5 the hash can say.
        try #require(thumb.width == 32 && thumb.height == 23, "\(thumb.width)×\(thumb.height)")
        let reference = smooth.fitted(to: TargetSize(width: 32, height: 23, contentMode: .aspectFill))
        #expect(thumb.difference(to: reference).mean < 12, "\(thumb.difference(to: reference).mean)")
        // Alpha survives a ThumbHash: the disc's corners come back transparent.
        let disc = try ThumbHash.decode(ThumbHash.encode(Self.disc))
        #expect(disc[0, 0].a < 40 && disc[disc.width / 2, disc.height / 2].a > 200)
        // A real photo's average colour survives: a ThumbHash averages the sRGB values,
        // a BlurHash's first four digits are the average in linear light.
        let photo = try ImageDecoders.Registry.shared.decode(
            try Fixture.sample("progressive.jpg"), options: DecodingOptions(targetSize: .thumbnail(100))).bitmap
        func average(_ b: Bitmap, _ transform: (Double) -> Double = { $0 }) -> [Double] {
            (0..<3).map { c in
                stride(from: c, to: b.pixels.count, by: 4).reduce(0.0) { $0 + transform(Double(b.pixels[$1]) / 255) } / Double(b.width * b.height)
            }
        }
        let thumbAverage = average(try ThumbHash.decode(ThumbHash.encode(photo))).map { $0 * 255 }
        #expect(zip(thumbAverage, average(photo).map { $0 * 255 }).allSatisfy { abs($0 - $1) < 8 }, "\(thumbAverage)")
        let linear = average(photo) { $0 <= 0.04045 ? $0 / 12.92 : pow(($0 + 0.055) / 1.055, 2.4) }
        let srgb = linear.map { Int((($0 <= 0.0031308 ? $0 * 12.92 : 1.055 * pow($0, 1 / 2.4) - 0.055) * 255).rounded()) }
        let digits = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")
        let dc = BlurHash.encode(photo).dropFirst(2).prefix(4).reduce(0) { $0 * 83 + digits.firstIndex(of: $1)! }
        #expect([dc >> 16, (dc >> 8) & 255, dc & 255] == srgb)
    }

    @Test func malformedHashesThrowInvalidHash() {
        func expectInvalid(_ kind: String, _ body: () throws(ImagoError) -> Bitmap, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                _ = try body()
                Issue.record("decoded", sourceLocation: sourceLocation)
            } catch {
                guard case .invalidHash(kind, _) = error else {
                    Issue.record("\(error)", sourceLocation: sourceLocation)
                    return
                }
                #expect(error.description.hasPrefix("not a valid \(kind): "), sourceLocation: sourceLocation)
            }
        }
        // The last is 22 bytes whose header announces 25: the reference would read
        // the missing factors as zeros; a hash cut short is refused here.
        for text in ["", "YJqG", "!!!!not base64", "1QcSHQRnh493V4dIh4eXh1", "AAAAAA", "YJqGPQw7sFlslqhFafSE+Q6oJ1h2iA=="] {
            expectInvalid("ThumbHash") { () throws(ImagoError) in try ThumbHash.decode(base64: text) }
        }
        // Alpha announced, its byte missing.
        expectInvalid("ThumbHash") { () throws(ImagoError) in try ThumbHash.decode([0, 0, 0x80, 0x07, 0]) }
        for text in ["", "LEHV6", "LEHV6nWB2yk8pyo0adR*.7kCMdn", "LEHV6nWB2yk8pyo0adR*.7kCMdnjX", "LEHV6nWB2yk8pyo0adR*.7kCMdn\"",
                     "LEHV6nWB2yk8pyo0adR*.7kCMdné"] {
            expectInvalid("BlurHash") { () throws(ImagoError) in try BlurHash.decode(text) }
        }
        // Every prefix, and random bytes: an image or the typed error, never a trap.
        let valid = [UInt8](Data(base64Encoded: "nPiFGw5Gf3aIonh/dviXd0dnh4iAiYc=")!)
        var generator = SystemRandomNumberGenerator()
        let inputs = (0...valid.count).map { Array(valid.prefix($0)) }
            + (0..<2000).map { _ in (0..<Int.random(in: 0...30, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        for bytes in inputs {
            do {
                let bitmap = try ThumbHash.decode(bytes)
                #expect(bitmap.width <= 32 && bitmap.height <= 32)
            } catch {
                guard case .invalidHash = error else { Issue.record("\(error)"); continue }
            }
        }
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~")
        for _ in 0..<2000 {
            let text = String((0..<Int.random(in: 0...40, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! })
            do {
                _ = try BlurHash.decode(text, width: 8, height: 8)
            } catch {
                guard case .invalidHash = error else { Issue.record("\(error)"); continue }
            }
        }
    }
}
