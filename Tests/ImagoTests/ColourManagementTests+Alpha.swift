#if os(Linux)
import CLCMS2
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Translucent pixels: their straight colour is converted, then premultiplied, so
/// each is Little CMS's conversion of the colour to within rounding, whatever its
/// alpha. Converted after premultiplying, a pixel at alpha 8 kept nine levels of
/// each channel, and a steep curve spread the loss over tens of levels.
extension ColourManagementTests {
    /// `value` × `alpha` / 255, rounded: what premultiplying the reference gives.
    static func premultiplied(_ value: UInt8, _ alpha: UInt8) -> Int { (Int(value) * Int(alpha) + 127) / 255 }

    /// The largest difference, in levels, of `image`'s premultiplied channels from the
    /// straight RGBA `reference` premultiplied, and where it is.
    func premultipliedDifference(_ image: DecodedImage, reference: [UInt8]) -> (largest: Int, at: String) {
        let bitmap = image.bitmap
        #expect(reference.count == bitmap.width * bitmap.height * 4)
        var largest = 0, at = ""
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap[x, y], i = (y * bitmap.width + x) * 4
                let a = reference[i + 3]
                let differences = [
                    abs(Int(p.r) - Self.premultiplied(reference[i], a)), abs(Int(p.g) - Self.premultiplied(reference[i + 1], a)),
                    abs(Int(p.b) - Self.premultiplied(reference[i + 2], a)), abs(Int(p.a) - Int(a)),
                ]
                if let worst = differences.max(), worst > largest {
                    largest = worst
                    at = "(\(x), \(y)): \(p), reference \(reference[i..<i + 4].map { $0 }) premultiplied"
                }
            }
        }
        return (largest, at)
    }

    @Test(arguments: ["prophoto-alpha.png", "prophoto-alpha.webp", "prophoto-alpha.avif", "prophoto-alpha.heic", "prophoto-alpha.jxl"])
    func translucentPixelsAreConvertedBeforeTheyArePremultiplied(file: String) throws {
        let image = try decode(file)
        #expect(image.notes.isEmpty)
        // heif-enc's "lossless" is not quite: its reference is of libheif's decode.
        let reference = file.hasSuffix(".heic") ? "prophoto-alpha-heic.ref" : "prophoto-alpha.ref"
        let (largest, at) = premultipliedDifference(image, reference: [UInt8](try ColourFixtures.data(reference)))
        #expect(largest <= 2, "\(file): \(largest) levels off at \(at)")
    }

    /// Each frame of an animation is converted before it is premultiplied and
    /// composited.
    @Test func translucentAnimationFramesAreConvertedBeforeTheyArePremultiplied() throws {
        let image = try decode("prophoto-alpha-animated.webp")
        let frames = image.frames.map(\.bitmap)
        #expect(frames.count == 2)
        for (frame, reference) in zip(frames, ["prophoto-alpha.ref", "prophoto-alpha-flipped.ref"]) {
            let bitmap = DecodedImage(bitmap: frame, format: .webp)
            let (largest, at) = premultipliedDifference(bitmap, reference: [UInt8](try ColourFixtures.data(reference)))
            #expect(largest <= 2, "\(reference): \(largest) levels off at \(at)")
        }
    }

    /// A thumbnail's rows are converted as they come, before they are premultiplied
    /// and resampled: the same thumbnail as of the converted pixels, untagged.
    @Test func aTranslucentThumbnailIsConvertedBeforeItIsPremultiplied() throws {
        let reference = [UInt8](try ColourFixtures.data("prophoto-alpha.ref"))
        let (width, height) = (96, 64)
        var scanlines: [UInt8] = []
        for y in 0..<height {
            scanlines.append(0)
            scanlines += reference[(y * width * 4)..<((y + 1) * width * 4)]
        }
        let converted = PNGFile.assemble(header: [0, 0, 0, UInt8(width), 0, 0, 0, UInt8(height), 8, 6, 0, 0, 0], scanlines: scanlines)
        let options = DecodingOptions(targetSize: TargetSize(width: 24, height: 16))
        let thumbnail = try decode("prophoto-alpha.png", options: options)
        let expected = try ImageDecoders.PNG().decode(converted, options: options)
        #expect(thumbnail.width == 24 && expected.width == 24)
        var largest = 0
        for y in 0..<thumbnail.height {
            for x in 0..<thumbnail.width {
                let (p, q) = (thumbnail.bitmap[x, y], expected.bitmap[x, y])
                largest = max(largest, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)), abs(Int(p.a) - Int(q.a)))
            }
        }
        #expect(largest <= 2, "the thumbnail is \(largest) levels off")
    }

    /// Pixels like PngSuite's basn6a08 (gAMA 1.0): blue 8, which is 50 in sRGB, at
    /// several alphas; a ProPhoto colour whose red is 15 in sRGB, nearly opaque; and
    /// a profile converted by Little CMS itself (its AToB0 table, `TableProfiles`).
    /// The reference is Little CMS's conversion of the straight colour.
    @Test(arguments: ["gamma 1.0", "ProPhoto", "AToB0 table"])
    func straightColoursMatchLittleCMSAtEveryAlpha(description: String) throws {
        let alphas: [UInt8] = [8, 30, 60, 100, 139, 172, 205, 230, 248, 255]
        let colour: [UInt8] = description == "gamma 1.0" ? [0, 0, 8] : [79, 127, 76]
        let profile: Data
        let chunk: (String, [UInt8])
        switch description {
        case "gamma 1.0":
            profile = ColourFixtures.rgbProfile(primaries: [0.64, 0.33, 0.30, 0.60, 0.15, 0.06], curve: cmsBuildGamma(nil, 1))
            chunk = ("gAMA", [0, 1, 0x86, 0xA0])  // 100000: gamma 1.0
        default:
            profile = description == "ProPhoto"
                ? try Data(contentsOf: URL(fileURLWithPath: "/usr/share/color/icc/colord/ProPhotoRGB.icc"))
                : try TableProfiles.swappingRedAndGreen(version: 4.4)
            chunk = ("iCCP", Array("profile".utf8) + [0, 0] + PNGFile.zlib([UInt8](profile)))
        }
        let scanlines: [UInt8] = [0] + alphas.flatMap { colour + [$0] }
        let png = PNGFile.assemble(header: [0, 0, 0, UInt8(alphas.count), 0, 0, 0, 1, 8, 6, 0, 0, 0], chunks: [chunk], scanlines: scanlines)
        let image = try ImageDecoders.PNG().decode(png, options: DecodingOptions())
        let converted = try TableProfiles.reference(colour, profile: profile)
        let reference = alphas.flatMap { converted + [$0] }
        let (largest, at) = premultipliedDifference(image, reference: reference)
        #expect(largest <= 1, "\(description): \(largest) levels off at \(at)")
    }
}
#endif
