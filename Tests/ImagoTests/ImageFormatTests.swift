import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite struct ImageFormatTests {
    static let signatures: [(ImageFormat, [UInt8])] = [
        (.jpeg, [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10]),
        (.png, [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13]),
        (.gif, Array("GIF89a\u{1}\u{0}".utf8)),
        (.gif, Array("GIF87a\u{1}\u{0}".utf8)),
        (.webp, Array("RIFF\u{10}\u{0}\u{0}\u{0}WEBPVP8 ".utf8)),
        (.avif, [0, 0, 0, 0x20] + Array("ftypavif".utf8) + [0, 0, 0, 0]),
        (.heic, [0, 0, 0, 0x18] + Array("ftypheic".utf8) + [0, 0, 0, 0]),
        (.bmp, Array("BM".utf8) + [UInt8](repeating: 0, count: 20)),
        (.tiff, [0x49, 0x49, 0x2A, 0x00, 8, 0, 0, 0]),
        (.tiff, [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8]),
        (.ico, [0, 0, 1, 0, 1, 0, 16, 16]),
        (.svg, Array("<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)),
        (.svg, Array("  <svg width=\"1\"></svg>".utf8)),
        (.jxl, [0xFF, 0x0A, 0xFA, 0x7F]),
        (.jxl, [0, 0, 0, 0x0C] + Array("JXL ".utf8) + [0x0D, 0x0A, 0x87, 0x0A]),
    ]

    @Test func detectsEachFormatFromItsSignature() {
        for (format, bytes) in Self.signatures {
            #expect(ImageFormat.detect(bytes) == format, "\(format)")
        }
    }

    @Test func unknownBytesAreNoFormat() {
        #expect(ImageFormat.detect([UInt8]()) == nil)
        #expect(ImageFormat.detect(Array("hello, world".utf8)) == nil)
        #expect(ImageFormat.detect([0xFF, 0xD8]) == nil)
        #expect(ImageFormat.detect(Array("<html><body>".utf8)) == nil)
        #expect(ImageFormat.detect(Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVE".utf8)) == nil)
    }

    @Test func recognisedButUndecodableFormatsGetUnsupportedFormat() {
        for (format, bytes) in Self.signatures where !Self.decodedFormats.contains(format) {
            #expect(throws: ImagoError.unsupportedFormat(format)) {
                try ImageDecoders.Registry.shared.decode(Data(bytes))
            }
        }
        #expect(throws: ImagoError.unsupportedFormat(nil)) {
            try ImageDecoders.Registry.shared.decode(Data("not an image".utf8))
        }
    }

    @Test(Corpus.available) func theMisnamedJPEGIsFoundToBeAPNG() throws {
        let data = try Corpus.data("jpeg/jpeg-decoder/reftest/mozilla/jpg-size-6x6.jpg")
        #expect(ImageFormat.detect(data) == .png)
        let image = try ImageDecoders.Registry.shared.decode(data)
        #expect(image.format == .png && image.width == 6 && image.height == 6)
    }

    /// The formats the built-in decoders take; the rest are recognised only (SVG on
    /// Apple platforms, whose ImageIO does not rasterise it).
    #if os(Linux)
    static let decodedFormats = Set(ImageFormat.allCases)
    #else
    static let decodedFormats = Set(ImageFormat.allCases).subtracting([.svg])
    #endif

    @Test func registeredDecodersComeFirst() throws {
        struct Fixed: ImageDecoding {
            func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .svg }
            func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
                DecodedImage(bitmap: Bitmap(width: 1, height: 1, pixels: [1, 2, 3, 255]), format: .svg)
            }
        }
        let registry = ImageDecoders.Registry()
        // A document the built-in decoder refuses (no size) on every platform.
        let svg = Data("<svg xmlns=\"http://www.w3.org/2000/svg\"/>".utf8)
        #expect(throws: ImagoError.self) { try registry.decode(svg) }
        registry.register(Fixed())
        #expect(try registry.decode(svg).bitmap[0, 0] == (1, 2, 3, 255))
    }
}

@Suite struct OrientationTests {
    /// A TIFF header with one IFD entry: orientation `value`.
    static func exif(_ value: UInt16, littleEndian: Bool) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { littleEndian ? u16(UInt16(v & 0xFFFF)) + u16(UInt16(v >> 16)) : u16(UInt16(v >> 16)) + u16(UInt16(v & 0xFFFF)) }
        let order: [UInt8] = littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]
        return order + u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(3) + u32(1) + u16(value) + u16(0) + u32(0)
    }

    @Test func readsTheTagInBothByteOrders() {
        for value in 1...8 {
            for little in [true, false] {
                #expect(ImageOrientation(exif: Self.exif(UInt16(value), littleEndian: little))?.rawValue == value)
            }
        }
    }

    @Test func malformedBlocksGiveNoOrientation() {
        #expect(ImageOrientation(exif: Self.exif(9, littleEndian: true)) == nil)
        #expect(ImageOrientation(exif: Self.exif(0, littleEndian: true)) == nil)
        #expect(ImageOrientation(exif: [UInt8]()) == nil)
        #expect(ImageOrientation(exif: Array(Self.exif(6, littleEndian: true).prefix(12))) == nil)
        var badOffset = Self.exif(6, littleEndian: true)
        badOffset[4] = 0xFF
        #expect(ImageOrientation(exif: badOffset) == nil)
    }

    /// The stored pixels of a 3×2 image, and what each orientation must show upright
    /// (letters name the stored pixels, rows top to bottom), per the EXIF definition.
    @Test func turnsPixelsUprightForEveryOrientation() {
        // a b c
        // d e f
        let expected: [ImageOrientation: [String]] = [
            .up: ["abc", "def"],
            .upMirrored: ["cba", "fed"],
            .down: ["fed", "cba"],
            .downMirrored: ["def", "abc"],
            .leftMirrored: ["ad", "be", "cf"],
            .right: ["da", "eb", "fc"],
            .rightMirrored: ["fc", "eb", "da"],
            .left: ["cf", "be", "ad"],
        ]
        let source = Bitmap.coordinates(width: 3, height: 2)
        for (orientation, rows) in expected {
            let turned = source.applying(orientation)
            let letters = (0..<turned.height).map { y in
                String((0..<turned.width).map { x in
                    Character(UnicodeScalar(UInt8(ascii: "a") + turned[x, y].b))
                })
            }
            #expect(letters == rows, "\(orientation)")
        }
    }
}
