#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite struct PNGDecoderTests {
    let decoder = ImageDecoders.PNG()

    /// Width and height from the IHDR chunk, read without libpng.
    static func headerSize(_ data: Data) -> (Int, Int) {
        let b = [UInt8](data)
        func u32(_ i: Int) -> Int { Int(b[i]) << 24 | Int(b[i + 1]) << 16 | Int(b[i + 2]) << 8 | Int(b[i + 3]) }
        return (u32(16), u32(20))
    }

    static func suite() throws -> (valid: [URL], corrupt: [URL]) {
        let files = try Corpus.files("png/pngsuite", ext: "png")
        let corrupt = files.filter { $0.lastPathComponent.hasPrefix("x") }
        return (files.filter { !$0.lastPathComponent.hasPrefix("x") }, corrupt)
    }

    @Test(Corpus.available) func everyValidPngSuiteImageDecodesAtItsSize() throws {
        let (valid, _) = try Self.suite()
        #expect(valid.count == 161)
        for url in valid {
            let data = try Data(contentsOf: url)
            let (w, h) = Self.headerSize(data)
            do {
                let image = try decoder.decode(data, options: DecodingOptions())
                #expect(image.width == w && image.height == h && image.format == .png, "\(url.lastPathComponent)")
                // Premultiplied: no colour value can exceed its alpha.
                #expect(image.bitmap.isPremultiplied, "\(url.lastPathComponent) is not premultiplied")
            } catch {
                Issue.record("\(url.lastPathComponent): \(error)")
            }
        }
    }

    @Test(Corpus.available) func everyCorruptPngSuiteImageFailsWithAReason() throws {
        let (_, corrupt) = try Self.suite()
        #expect(corrupt.count == 14)
        for url in corrupt {
            do {
                _ = try decoder.decode(try Data(contentsOf: url), options: DecodingOptions())
                Issue.record("\(url.lastPathComponent) decoded")
            } catch {
                guard case .decodingFailed(.png, let reason, let codec, _) = error as? ImagoError, !reason.isEmpty else {
                    Issue.record("\(url.lastPathComponent): \(error)")
                    continue
                }
                // libpng spoke, and its message is the reason; or the data ran out,
                // which Imago's reader says itself.
                #expect(
                    codec == .init(library: "libpng", message: reason)
                        || (codec == nil && reason == "the data ends before the image does"),
                    "\(url.lastPathComponent): \(reason), \(String(describing: codec))")
            }
        }
    }

    /// Adam7 must reassemble exactly: each interlaced `basi` file holds the same pixels
    /// as its non-interlaced `basn` twin, at every bit depth and colour type.
    @Test(Corpus.available) func interlacedImagesEqualTheirNonInterlacedTwins() throws {
        let folder = try Corpus.folder("png/pngsuite")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix("basi") }
        #expect(names.count == 15)
        for name in names {
            let interlaced = try decoder.decode(try Data(contentsOf: folder.appendingPathComponent(name)), options: DecodingOptions())
            let twin = "basn" + name.dropFirst(4)
            let plain = try decoder.decode(try Data(contentsOf: folder.appendingPathComponent(twin)), options: DecodingOptions())
            let difference = interlaced.bitmap.difference(to: plain.bitmap)
            #expect(difference.maximum == 0, "\(name): off by up to \(difference.maximum)")
        }
    }

    @Test(Corpus.available) func transparencyAndDepthsComeOutRight() throws {
        func decode(_ name: String) throws -> Bitmap {
            try decoder.decode(try Corpus.data("png/pngsuite/\(name)"), options: DecodingOptions()).bitmap
        }
        // tRNS on a palette image: its corners are fully transparent, its centre opaque.
        let palette = try decode("tbbn3p08.png")
        #expect(palette[0, 0] == (0, 0, 0, 0))
        #expect(palette[16, 16].a == 255)
        // 16-bit RGBA, alpha falling off from the centre: clear corners, a solid middle.
        let rgba16 = try decode("basn6a16.png")
        #expect(rgba16[0, 31] == (0, 0, 0, 0) && rgba16[31, 0] == (0, 0, 0, 0))
        #expect(rgba16[16, 16].a > 240)
        // 1-bit gray: black and white stripes, nothing in between.
        let bits = try decode("basn0g01.png").pixels
        #expect(Set(bits).isSubset(of: [0, 255]))
        // 16-bit gray is sRGB like 8-bit gray, not brightened as if it were linear:
        // basn0g16 is a gradient starting black at the top left.
        let gray16 = try decode("basn0g16.png")
        #expect(gray16[0, 0] == (0, 0, 0, 255))
        #expect(gray16.hasAlpha == false)
    }

    /// A file that ends early shows the rows that arrived, as browsers do, and says
    /// it is partial; one that ends before its first row fails.
    @Test(Corpus.available) func truncatedFilesDecodeAsPartialOrFailBeforeTheFirstRow() throws {
        for name in ["basn6a16.png", "basi3p08.png", "z09n2c08.png", "PngSuite.png"] {
            let data = try Corpus.data("png/pngsuite/\(name)")
            for cut in truncations(of: data) + [data.prefix(8), data.prefix(33)] {
                do {
                    let isPartial = try decoder.decode(cut, options: DecodingOptions()).isPartial
                    #expect(isPartial && cut.count > 33, "\(name) cut to \(cut.count)")
                } catch {
                    guard case .decodingFailed(.png, _, _, _) = error else {
                        Issue.record("\(name) cut to \(cut.count): \(error)")
                        continue
                    }
                }
            }
        }
        let photo = try Corpus.data("photos/kodak/kodim01.png")
        for cut in truncations(of: photo) {
            let isPartial = try decoder.decode(cut, options: DecodingOptions()).isPartial
            #expect(isPartial)
        }
    }

    /// An IHDR claiming 100000 × 100000 (a valid PNG header, CRC and all) is refused
    /// with `imageTooLarge` from the header, before libpng is asked for any row.
    @Test(Corpus.available) func aHugeHeaderIsRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try Corpus.data("png/pngsuite/basn2c08.png"))
        let size: [UInt8] = [0x00, 0x01, 0x86, 0xA0]  // 100000
        bytes.replaceSubrange(16..<20, with: size)
        bytes.replaceSubrange(20..<24, with: size)
        let crc = crc32(bytes[12..<29])
        bytes.replaceSubrange(29..<33, with: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        #expect(throws: ImagoError.imageTooLarge(width: 100_000, height: 100_000, frames: 1, limit: DecodingOptions.defaultMaximumPixelCount)) {
            try decoder.decode(Data(bytes), options: DecodingOptions())
        }
    }

    /// A damaged chunk fails with libpng's message, attributed to libpng; data that
    /// ends early is found by Imago's reader, which says so without libpng's name.
    @Test func corruptDataNamesLibpngAndItsMessage() throws {
        let encoded = [UInt8](try ImageEncoders.PNG().encode(Bitmap.coordinates(width: 16, height: 16)))
        #expect(Array(encoded[12..<16]) == Array("IHDR".utf8))
        var badCRC = encoded
        badCRC[29] ^= 0xFF  // the first byte of IHDR's CRC
        let error = try #require(decoder.failure(Data(badCRC)))
        #expect(error == .decodingFailed(
            format: .png, reason: "IHDR: CRC error", codec: .init(library: "libpng", message: "IHDR: CRC error")))
        #expect(error.description == "PNG decoding failed: IHDR: CRC error (libpng)")

        // Cut after the header but before the first row: rows that did arrive would
        // decode.
        let idat = try #require((8..<encoded.count - 3).first { Array(encoded[$0..<$0 + 4]) == Array("IDAT".utf8) })
        let cut = try #require(decoder.failure(Data(encoded.prefix(idat + 4))))
        #expect(cut == .decodingFailed(format: .png, reason: "the data ends before the image does", codec: nil))
        #expect(cut.codecMessage == nil)
    }

    @Test(Corpus.available) func encodedPNGDecodesToTheSamePixels() throws {
        for name in ["basn6a08.png", "basn2c08.png", "tbbn3p08.png"] {
            let image = try decoder.decode(try Corpus.data("png/pngsuite/\(name)"), options: DecodingOptions())
            let again = try decoder.decode(try ImageEncoders.PNG().encode(image.bitmap), options: DecodingOptions())
            // Dividing alpha out and multiplying it back in loses at most one level.
            let difference = image.bitmap.difference(to: again.bitmap)
            #expect(difference.maximum <= 1, "\(name): \(difference.maximum)")
        }
    }
}
#endif
