#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The BMP and ICO/CUR decoders against files written byte by byte for every header
/// version, bit depth and compression (`Fixtures/bmp/make_fixtures.py`), each checked
/// against Pillow's decode of the same file.
///
/// Where browsers and Pillow disagree, Imago follows browsers and the reference is
/// the pixels written, computed by the generator: noted per case below.
@Suite struct BMPDecoderTests {
    /// Fixture → reference, and the largest channel difference allowed. 0 everywhere
    /// but where a reference rounds differently: Pillow widens 6-bit green with a
    /// 5- and 6-bit channels with a rounded multiply (`v * 255 / 31`), Imago (like
    /// browsers) by repeating the bits; the two differ by at most 1.
    static let cases: [String: (reference: String, tolerance: Int)] = [
        "pal1.bmp": ("pal1.ref.png", 0),
        "pal4.bmp": ("pal4.ref.png", 0),
        "pal8.bmp": ("pal8.ref.png", 0),
        "pal8-short.bmp": ("pal8-short.ref.png", 0),
        "pal8-topdown.bmp": ("pal8-topdown.ref.png", 0),
        "pal8-os2v1.bmp": ("pal8-os2v1.ref.png", 0),
        "rgb24.bmp": ("rgb24.ref.png", 0),
        "rgb24-os2v1.bmp": ("rgb24-os2v1.ref.png", 0),
        "rgb24-nopad.bmp": ("rgb24-nopad.ref.png", 0),
        "rgb24-v4.bmp": ("rgb24-v4.ref.png", 0),
        "rgb24-v5.bmp": ("rgb24-v5.ref.png", 0),
        "rgb555.bmp": ("rgb555.ref.png", 1),
        "rgb565.bmp": ("rgb565.ref.png", 1),
        "argb32-v5.bmp": ("argb32-v5.ref.png", 0),
        // BI_ALPHABITFIELDS (Pillow does not read it) and 32-bit BI_RGB with alpha in
        // the top byte (Pillow drops it; browsers use it): the same pixels as v5.
        "argb32-alphabitfields.bmp": ("argb32-v5.ref.png", 0),
        "argb32-birgb.bmp": ("argb32-v5.ref.png", 0),
        "xrgb32-zero-alpha.bmp": ("xrgb32-zero-alpha.ref.png", 0),
        // Computed references: Pillow refuses these mask layouts.
        "argb4444-v3.bmp": ("argb4444-v3.ref.png", 0),
        "rgb101010.bmp": ("rgb101010.ref.png", 0),
        "rle4.bmp": ("rle4.ref.png", 0),
        "rle8.bmp": ("rle8.ref.png", 0),
        // Computed: skipped pixels are transparent, as in browsers (Pillow refuses it).
        "rle8-delta.bmp": ("rle8-delta.ref.png", 0),
    ]

    @Test(arguments: BMPDecoderTests.cases.keys.sorted())
    func decodesLikeTheReference(_ name: String) throws {
        let (referenceName, tolerance) = try #require(Self.cases[name])
        let image = try ImageDecoders.BMP().decode(try Fixture.data("bmp/" + name), options: DecodingOptions())
        let reference = try Fixture.reference("bmp/" + referenceName)
        #expect(image.format == .bmp)
        try #require(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)×\(image.height)")
        let difference = image.bitmap.difference(to: reference)
        #expect(difference.maximum <= tolerance, "\(name): off by up to \(difference.maximum)")
        #expect(image.bitmap.isPremultiplied)
    }

    /// A fixture added without a case would otherwise go untested.
    @Test func everyFixtureHasACase() throws {
        for name in try Fixture.files("bmp", suffix: ".bmp") {
            #expect(Self.cases[name] != nil, "\(name) has no expected decode")
        }
    }

    @Test func thirtyTwoBitsWithZeroAlphaAreOpaque() throws {
        let image = try ImageDecoders.BMP().decode(try Fixture.data("bmp/xrgb32-zero-alpha.bmp"), options: DecodingOptions())
        #expect(!image.bitmap.hasAlpha)
        let withAlpha = try ImageDecoders.BMP().decode(try Fixture.data("bmp/argb32-birgb.bmp"), options: DecodingOptions())
        #expect(withAlpha.bitmap.hasAlpha)
    }

    @Test func registryFindsBMPAndICOFromTheBytes() throws {
        for (name, format) in [("rgb24.bmp", ImageFormat.bmp), ("icon.ico", .ico), ("cursor.cur", .ico)] {
            let data = try Fixture.data("bmp/" + name)
            #expect(ImageFormat.detect(data) == format)
            #expect(try ImageDecoders.Registry().decode(data).format == format)
        }
    }

    // MARK: Bad input

    @Test(arguments: BMPDecoderTests.cases.keys.sorted())
    func truncatedFilesFail(_ name: String) throws {
        let data = try Fixture.data("bmp/" + name)
        // Cutting only the last row's padding is allowed, so cut into the pixels.
        let padding = (4 - (data.count - Int(data[10])) % 4) % 4
        for length in Set([0, 1, 14, 20, data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 5 - padding]) {
            let error = ImageDecoders.BMP().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.bmp) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    /// Every prefix and many single-byte corruptions of an RLE file: each decodes or
    /// fails with a typed error, never a crash or an out-of-bounds write.
    @Test(arguments: ["rle4.bmp", "rle8.bmp", "rle8-delta.bmp", "pal1.bmp", "rgb565.bmp"])
    func damagedFilesNeverCrash(_ name: String) throws {
        let data = try Fixture.data("bmp/" + name)
        for length in 0..<data.count {
            if let error = ImageDecoders.BMP().failure(data.prefix(length), limit: 1 << 16) {
                #expect(error.isDecodingFailure(.bmp) || isTooLarge(error))
            }
        }
        for offset in stride(from: 14, to: data.count, by: 5) {
            for value: UInt8 in [0, 2, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = ImageDecoders.BMP().failure(damaged, limit: 1 << 16) {
                    #expect(error.isDecodingFailure(.bmp) || isTooLarge(error), "\(name) byte \(offset) = \(value): \(error)")
                }
            }
        }
    }

    /// A header claiming 2³¹-1 × 2³¹-1 pixels in a 60-byte file, and a modest size
    /// over a lowered limit: both refused from the header.
    @Test func hugeHeadersAreRefusedBeforeAllocating() throws {
        var data = try Fixture.data("bmp/rgb24.bmp")
        data.replaceSubrange(18..<26, with: [0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0x7F])
        #expect(isTooLarge(ImageDecoders.BMP().failure(data.prefix(60))))
        let small = try Fixture.data("bmp/rgb24.bmp")
        #expect(throws: ImagoError.imageTooLarge(width: 23, height: 13, frames: 1, limit: 100)) {
            try ImageDecoders.BMP().decode(small, options: DecodingOptions(maximumPixelCount: 100))
        }
    }

    @Test func unsupportedVariantsSayWhy() throws {
        let base = try Fixture.data("bmp/rgb24.bmp")
        func with(_ offset: Int, _ bytes: [UInt8]) -> Data {
            var data = base
            data.replaceSubrange(offset..<offset + bytes.count, with: bytes)
            return data
        }
        let cases: [(Data, String)] = [
            (with(14, [41, 0, 0, 0]), "the bitmap header size 41 is not one any version uses"),
            (with(28, [3, 0]), "3 bits a pixel is not supported"),
            (with(28, [64, 0]), "64 bits a pixel is not supported"),
            (with(30, [4, 0, 0, 0]), "embedded JPEG data (meant for printers) is not supported"),
            (with(30, [5, 0, 0, 0]), "embedded PNG data (meant for printers) is not supported"),
            (with(30, [9, 0, 0, 0]), "compression method 9 is not one BMP defines"),
            (with(30, [1, 0, 0, 0]), "RLE8 needs 8 bits a pixel, not 24"),
            (with(18, [0, 0, 0, 0]), "the header gives an empty image (0×13)"),
        ]
        for (data, reason) in cases {
            #expect(ImageDecoders.BMP().failure(data) == .decodingFailed(format: .bmp, reason: reason, codec: nil))
        }
    }

    // MARK: ICO and CUR

    /// Each entry of `icon.ico` against Pillow's decode of that entry. The 20 px entry
    /// is 32-bit with an all-zero alpha byte: browsers show it opaque with the AND mask
    /// applied, Pillow fully transparent, so only its colours are compared there.
    @Test(arguments: [16, 20, 24, 32, 48])
    func icoEntriesDecodeLikeTheReference(_ size: Int) throws {
        let image = try ImageDecoders.ICO().decode(
            try Fixture.data("bmp/icon.ico"),
            options: options(target: TargetSize(width: size, height: size)))
        #expect(image.format == .ico)
        try #require(image.width == size && image.height == size)
        let reference = try Fixture.reference("bmp/icon-\(size).ref.png")
        if size == 20 {
            for y in 0..<size {
                for x in 0..<size {
                    let masked = abs(x - y) < 2 || (x < 3 && y < 3)
                    #expect(image.bitmap[x, y].a == (masked ? 0 : 255))
                }
            }
        } else {
            #expect(image.bitmap.difference(to: reference).maximum == 0)
        }
    }

    @Test func icoPicksTheEntryThatFitsTheTarget() throws {
        let data = try Fixture.data("bmp/icon.ico")
        func size(_ target: TargetSize?) throws -> Int {
            var options = DecodingOptions()
            options.targetSize = target
            return try ImageDecoders.ICO().decode(data, options: options).width
        }
        #expect(try size(nil) == 48)
        #expect(try size(.thumbnail(16)) == 16)
        #expect(try size(.thumbnail(17)) == 20)
        #expect(try size(.thumbnail(30)) == 32)
        #expect(try size(.thumbnail(100)) == 48)
        // Through the registry the chosen entry is then fitted to the target.
        var options = DecodingOptions()
        options.targetSize = .thumbnail(30)
        #expect(try ImageDecoders.Registry().decode(data, options: options).width == 30)
    }

    /// Found by fuzzing: a PNG entry whose header claims sides near 2³², whose area
    /// overflowed when entries were compared. The entry is passed over.
    @Test func icoPNGEntryWithImpossibleSidesIsPassedOver() throws {
        let data = try Fixture.data("ico-regression/fuzz-png-entry-area.ico")
        for options in [DecodingOptions(), DecodingOptions(targetSize: .thumbnail(16))] {
            do {
                _ = try ImageDecoders.ICO().decode(data, options: options)
            } catch {
                #expect(error.isDecodingFailure(.ico) || isTooLarge(error), "\(error)")
            }
        }
    }

    @Test func icoWithAPNGEntry() throws {
        let data = try Fixture.data("bmp/icon-png.ico")
        let large = try ImageDecoders.ICO().decode(data, options: DecodingOptions())
        #expect(large.format == .ico && large.width == 64)
        #expect(large.bitmap.difference(to: try Fixture.reference("bmp/icon-png-64.ref.png")).maximum == 0)
        var options = DecodingOptions()
        options.targetSize = .thumbnail(16)
        let small = try ImageDecoders.ICO().decode(data, options: options)
        #expect(small.width == 16)
        #expect(small.bitmap.difference(to: try Fixture.reference("bmp/icon-png-16.ref.png")).maximum == 0)
    }

    /// The cursor holds the same bitmap and mask as the icon's 32 px entry; Pillow's
    /// cursor reader leaves the AND mask out (browsers apply it), so the icon's
    /// reference is the one to match.
    @Test func curDecodesLikeICO() throws {
        let image = try ImageDecoders.ICO().decode(try Fixture.data("bmp/cursor.cur"), options: DecodingOptions())
        #expect(image.format == .ico && image.width == 32)
        #expect(image.bitmap.difference(to: try Fixture.reference("bmp/icon-32.ref.png")).maximum == 0)
    }

    @Test(arguments: ["icon.ico", "icon-png.ico", "cursor.cur"])
    func truncatedIconsFail(_ name: String) throws {
        let data = try Fixture.data("bmp/" + name)
        for length in Set([0, 5, 6, 21, data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            let error = ImageDecoders.ICO().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.ico) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    @Test func damagedIconsNeverCrash() throws {
        let data = try Fixture.data("bmp/icon.ico")
        for offset in stride(from: 0, to: min(data.count, 200), by: 2) {
            for value: UInt8 in [0, 1, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = ImageDecoders.ICO().failure(damaged, limit: 1 << 16) {
                    #expect(error.isDecodingFailure(.ico) || isTooLarge(error), "byte \(offset) = \(value): \(error)")
                }
            }
        }
        // A directory of zero entries, and one whose only entry is a bad PNG.
        #expect(ImageDecoders.ICO().failure(Data([0, 0, 1, 0, 0, 0])) == .decodingFailed(format: .ico, reason: "the icon directory is empty", codec: nil))
        var badPNG = try Fixture.data("bmp/icon-png.ico")
        badPNG[badPNG.count - 20] ^= 0xFF
        #expect(ImageDecoders.ICO().failure(badPNG)?.isDecodingFailure(.ico) == true)
    }

    func options(target: TargetSize) -> DecodingOptions {
        var options = DecodingOptions()
        options.targetSize = target
        return options
    }

    func isTooLarge(_ error: ImagoError?) -> Bool {
        if case .imageTooLarge? = error { return true }
        return false
    }
}
#endif

#if os(Linux)
extension ImageDecoding {
    /// The error decoding `data` throws under a pixel limit of `limit`, or nil when it
    /// decodes: damaged headers then cost little, however large they claim to be.
    func failure(_ data: Data, limit: Int) -> ImagoError? {
        do {
            _ = try decode(data, options: DecodingOptions(maximumPixelCount: limit))
            return nil
        } catch {
            return error
        }
    }
}
#endif
