#if os(Linux)
import CLibTIFF
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The TIFF decoder against files written by Pillow, libtiff's `tiffcp` and
/// ImageMagick (`Fixtures/tiff/make_fixtures.sh`), each checked against Pillow's
/// decode; the orientation files against the unturned picture turned by the tag.
@Suite struct TIFFDecoderTests {
    /// Fixture → largest channel difference allowed against its reference. 0 for
    /// 8-bit data. 16-bit data: Pillow keeps the high byte, libtiff rounds, so 1.
    /// JPEG-in-TIFF: Pillow and libtiff upsample chroma differently, so a few levels.
    static let cases: [String: Int] = [
        "rgb8.tif": 0, "rgb8-bigendian.tif": 0, "rgb8-lzw.tif": 0, "rgb8-packbits.tif": 0,
        "rgba8-unassociated.tif": 1, "rgba8-associated.tif": 1, "rgba8-deflate-tiled.tif": 1,
        "gray8.tif": 0, "gray16.tif": 1, "rgb16.tif": 1,
        "bilevel.tif": 0, "bilevel-g4.tif": 0, "palette4.tif": 0, "cmyk8.tif": 0,
        "ycbcr-jpeg.tif": 12,
        "orientation-2.tif": 0, "orientation-3.tif": 0, "orientation-6.tif": 0, "orientation-8.tif": 0,
        "multipage.tif": 0,
    ]

    @Test(arguments: TIFFDecoderTests.cases.keys.sorted())
    func decodesLikeTheReference(_ name: String) throws {
        let tolerance = try #require(Self.cases[name])
        let image = try ImageDecoders.TIFF().decode(try Fixture.data("tiff/" + name), options: DecodingOptions())
        let reference = try Fixture.reference("tiff/" + name.replacingOccurrences(of: ".tif", with: ".ref.png"))
        #expect(image.format == .tiff)
        try #require(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)×\(image.height)")
        let difference = image.bitmap.difference(to: reference)
        #expect(difference.maximum <= tolerance, "\(name): off by up to \(difference.maximum)")
        #expect(image.bitmap.isPremultiplied)
    }

    @Test func everyFixtureHasACase() throws {
        for name in try Fixture.files("tiff", suffix: ".tif") {
            #expect(Self.cases[name] != nil, "\(name) has no expected decode")
        }
    }

    @Test func orientationIsReportedAndCanBeLeftAlone() throws {
        let data = try Fixture.data("tiff/orientation-6.tif")
        let upright = try ImageDecoders.TIFF().decode(data, options: DecodingOptions())
        #expect(upright.orientation == .right && upright.width == 17 && upright.height == 29)
        let stored = try ImageDecoders.TIFF().decode(data, options: DecodingOptions(appliesOrientation: false))
        #expect(stored.orientation == .right && stored.width == 29 && stored.height == 17)
        #expect(stored.bitmap.difference(to: try Fixture.reference("tiff/rgb8.ref.png")).maximum == 0)
    }

    @Test func registryAndSniffingFindTIFF() throws {
        for name in ["rgb8.tif", "rgb16.tif"] {
            let data = try Fixture.data("tiff/" + name)
            #expect(ImageFormat.detect(data) == .tiff)
            #expect(try ImageDecoders.Registry().decode(data).format == .tiff)
        }
        let bigEndian = try Fixture.data("tiff/rgb8-bigendian.tif")
        #expect(bigEndian.prefix(4) == Data([0x4D, 0x4D, 0x00, 0x2A]))
        #expect(ImageFormat.detect(bigEndian) == .tiff)
    }

    /// BigTIFF (64-bit offsets; `II+\0` or `MM\0+`) in both byte orders, written by
    /// libtiff itself here.
    @Test(arguments: ["w8l", "w8b"])
    func bigTIFFIsRecognisedAndDecoded(mode: String) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("imago-bigtiff-\(UUID()).tif").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let width = 5, height = 3
        var rgb: [UInt8] = []
        for i in 0..<width * height { rgb += [UInt8(i * 10), UInt8(200 - i * 5), 77] }
        let tiff = try #require(TIFFOpen(path, mode))
        func set(_ tag: Int32, _ value: Int) {
            _ = withVaList([Int32(value)]) { TIFFVSetField(tiff, UInt32(tag), $0) }
        }
        set(TIFFTAG_IMAGEWIDTH, width)
        set(TIFFTAG_IMAGELENGTH, height)
        set(TIFFTAG_BITSPERSAMPLE, 8)
        set(TIFFTAG_SAMPLESPERPIXEL, 3)
        set(TIFFTAG_PHOTOMETRIC, Int(PHOTOMETRIC_RGB))
        set(TIFFTAG_PLANARCONFIG, Int(PLANARCONFIG_CONTIG))
        set(TIFFTAG_ROWSPERSTRIP, height)
        for row in 0..<height {
            var line = Array(rgb[row * width * 3..<(row + 1) * width * 3])
            #expect(TIFFWriteScanline(tiff, &line, UInt32(row), 0) == 1)
        }
        TIFFClose(tiff)

        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.prefix(4) == Data(mode == "w8l" ? [0x49, 0x49, 0x2B, 0x00] : [0x4D, 0x4D, 0x00, 0x2B]))
        #expect(ImageFormat.detect(data) == .tiff)
        let image = try ImageDecoders.Registry().decode(data)
        #expect(image.format == .tiff && image.width == width && image.height == height)
        var expected: [UInt8] = []
        for i in 0..<width * height { expected += rgb[i * 3..<i * 3 + 3] + [255] }
        #expect(image.bitmap.difference(to: Bitmap(width: width, height: height, pixels: expected)).maximum == 0)
    }

    // MARK: Bad input

    @Test(arguments: ["rgb8.tif", "rgb8-lzw.tif", "rgba8-deflate-tiled.tif", "ycbcr-jpeg.tif", "bilevel-g4.tif", "rgb16.tif"])
    func truncatedFilesFail(_ name: String) throws {
        let data = try Fixture.data("tiff/" + name)
        for length in Set([0, 4, 8, 20, data.count / 10, data.count / 2, data.count * 9 / 10]) {
            let error = ImageDecoders.TIFF().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.tiff) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    /// Single-byte damage all over a compressed and a tiled file: each decodes or
    /// fails with a typed error, never a crash, a hang or a message on standard error.
    @Test(arguments: ["rgb8-lzw.tif", "rgba8-deflate-tiled.tif"])
    func damagedFilesNeverCrash(_ name: String) throws {
        let data = try Fixture.data("tiff/" + name)
        for offset in stride(from: 4, to: data.count, by: 7) {
            for value: UInt8 in [0, 0x7F, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = ImageDecoders.TIFF().failure(damaged, limit: 1 << 16) {
                    switch error {
                    // A damaged strip byte count can claim more than the budget.
                    case .decodingFailed(format: .tiff, _, _, _), .imageTooLarge, .overMemoryBudget(format: .tiff, _, _): break
                    default: Issue.record("\(name) byte \(offset) = \(value): \(error)")
                    }
                }
            }
        }
    }

    @Test func hugeHeadersAreRefusedBeforeAllocating() throws {
        let data = try Fixture.data("tiff/rgb8.tif")
        #expect(throws: ImagoError.imageTooLarge(width: 29, height: 17, frames: 1, limit: 100)) {
            try ImageDecoders.TIFF().decode(data, options: DecodingOptions(maximumPixelCount: 100))
        }
    }

    @Test func libtiffsMessageIsKept() throws {
        var data = try Fixture.data("tiff/rgb8.tif")
        // The first IFD's offset pointed past the end.
        data.replaceSubrange(4..<8, with: [0xFF, 0xFF, 0xFF, 0x0F])
        let error = try #require(ImageDecoders.TIFF().failure(data))
        #expect(error.isDecodingFailure(.tiff))
        #expect(error.codecMessage?.library == "libtiff")
    }
}
#endif
