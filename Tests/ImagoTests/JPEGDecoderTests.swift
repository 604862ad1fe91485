#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The size a JPEG's SOF marker declares, read without libjpeg so the decoder is
/// checked against an independent reading of the file.
func jpegFrameSize(_ data: Data) -> (width: Int, height: Int)? {
    let bytes = [UInt8](data)
    var i = 2
    while i + 9 < bytes.count {
        guard bytes[i] == 0xFF else { return nil }
        let marker = bytes[i + 1]
        if marker == 0xFF { i += 1; continue }
        let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
        if [0xC0, 0xC1, 0xC2, 0xC9, 0xCA].contains(marker) {
            return (Int(bytes[i + 7]) << 8 | Int(bytes[i + 8]), Int(bytes[i + 5]) << 8 | Int(bytes[i + 6]))
        }
        i += 2 + length
    }
    return nil
}

@Suite struct JPEGDecoderTests {
    let decoder = ImageDecoders.JPEG()

    @Test(Corpus.available) func everyDecodableCorpusFileHasItsDeclaredSize() throws {
        let files = try Corpus.decodableJPEGs()
        #expect(files.count > 200)
        for url in files {
            let data = try Data(contentsOf: url)
            let declared = try #require(jpegFrameSize(data), "\(url.lastPathComponent): no SOF")
            let image: DecodedImage
            do { image = try decoder.decode(data, options: DecodingOptions()) } catch {
                Issue.record("\(url.lastPathComponent): \(error)")
                continue
            }
            let (w, h) = image.orientation.swapsDimensions ? (declared.height, declared.width) : declared
            #expect(image.width == w && image.height == h, "\(url.lastPathComponent)")
            #expect(image.format == .jpeg && image.frames.count == 1 && !image.bitmap.hasAlpha)
        }
    }

    /// The reftest PNGs were made by ImageMagick, itself on libjpeg with the same
    /// accurate integer DCT and fancy upsampling, so decodes agree to rounding: measured
    /// here, 0 on most files and at most 3 levels on any channel (mjpeg, ycck), under
    /// 0.2 on average. The bounds allow that and nothing more; a wrong colour conversion
    /// (CMYK not inverted, YCCK taken for RGB) is off by tens of levels. ImageMagick
    /// made them without colour management, so the files are decoded without their ICC
    /// profiles (ycck.jpg has one; ColourManagementTests checks its use).
    @Test(Corpus.available) func pixelsMatchTheReferenceDecodes() throws {
        let folders = ["jpeg/jpeg-decoder/reftest", "jpeg/jpeg-decoder/reftest/mozilla"]
        var compared = 0
        for url in try folders.flatMap({ try Corpus.files($0, ext: "jpg") }) {
            let referenceURL = url.deletingPathExtension().appendingPathExtension("png")
            guard FileManager.default.fileExists(atPath: referenceURL.path),
                  url.lastPathComponent != "jpg-size-6x6.jpg" else { continue }
            let image = try decoder.decode(JPEGAPP2.removing(from: try Data(contentsOf: url)), options: DecodingOptions())
            let reference = try ImageDecoders.PNG().decode(try Data(contentsOf: referenceURL), options: DecodingOptions())
            #expect(image.width == reference.width && image.height == reference.height, "\(url.lastPathComponent)")
            guard image.width == reference.width && image.height == reference.height else { continue }
            let difference = image.bitmap.difference(to: reference.bitmap)
            #expect(difference.maximum <= 3 && difference.mean <= 0.2,
                    "\(url.lastPathComponent): max \(difference.maximum), mean \(difference.mean)")
            compared += 1
        }
        #expect(compared >= 30)
    }

    /// Each `Landscape_N` / `Portrait_N` stores the same photo turned so that applying
    /// orientation N brings it upright; after decoding, all nine must look alike.
    /// Measured on 100-pixel block averages: the right turn differs from `_1` by under
    /// 1 level on average and at most 18 in any block (re-encoding noise); every wrong
    /// turn or mirror by 33 or more on average and 145 or more in some block.
    @Test(Corpus.available) func allEighteenExifOrientationsDecodeUpright() throws {
        for kind in ["Landscape", "Portrait"] {
            let upright = try decoder.decode(try Corpus.data("jpeg/exif-orientation/\(kind)_1.jpg"), options: DecodingOptions())
            let expected = upright.bitmap.blockAverages(block: 100)
            for n in 0...8 {
                let image = try decoder.decode(try Corpus.data("jpeg/exif-orientation/\(kind)_\(n).jpg"), options: DecodingOptions())
                #expect(image.orientation.rawValue == max(n, 1), "\(kind)_\(n)")
                #expect(image.width == (kind == "Landscape" ? 1800 : 1200), "\(kind)_\(n)")
                #expect(image.height == (kind == "Landscape" ? 1200 : 1800), "\(kind)_\(n)")
                let averages = image.bitmap.blockAverages(block: 100)
                let differences = zip(averages, expected).map { abs($0 - $1) }
                let mean = differences.reduce(0, +) / Double(differences.count)
                #expect(mean < 3 && differences.max()! < 40, "\(kind)_\(n) differs from the upright photo: mean \(mean)")
            }
        }
    }

    @Test(Corpus.available) func orientationCanBeLeftAsStored() throws {
        let data = try Corpus.data("jpeg/exif-orientation/Landscape_6.jpg")
        let image = try decoder.decode(data, options: DecodingOptions(appliesOrientation: false))
        #expect(image.width == 1200 && image.height == 1800 && image.orientation == .right)
    }

    @Test(Corpus.available) func cmykAndYCCKBecomeRGB() throws {
        // The YCCK photo of a park: grass at the bottom left is green, not magenta.
        let image = try decoder.decode(try Corpus.data("jpeg/jpeg-decoder/reftest/ycck.jpg"), options: DecodingOptions())
        let grass = image.bitmap[40, image.height - 110]
        #expect(grass.g > grass.r && grass.g > grass.b, "\(grass)")
    }

    @Test(Corpus.available) func variantsBeyondTheLibraryGetAClearError() throws {
        let cases: [(String, String)] = [
            ("jpeg/libjpeg-turbo/monkey12.jpg", "12- and 16-bit JPEG"),
            ("jpeg/jpegsuite/extended_huffman/32x32x12_ycbcr.jpg", "12- and 16-bit JPEG"),
            ("jpeg/jpegsuite/lossless_huffman/32x32x8_grayscale.jpg", "lossless JPEG"),
            ("jpeg/jpegsuite/lossless_arithmetic/32x32x8_grayscale.jpg", "lossless JPEG"),
            ("jpeg/jpegsuite/ls/32x32x8_grayscale.jpg", "JPEG-LS"),
            ("jpeg/jpegsuite/baseline/32x32x8_dnl.jpg", "DNL"),
        ]
        for (path, words) in cases {
            do {
                _ = try decoder.decode(try Corpus.data(path), options: DecodingOptions())
                Issue.record("\(path) decoded")
            } catch let error as ImagoError {
                guard case .decodingFailed(.jpeg, let reason, let codec?, _) = error else {
                    Issue.record("\(path): \(error)")
                    continue
                }
                // Imago names the variant; libjpeg's own message stays beside it.
                #expect(reason.contains(words), "\(path): \(reason)")
                #expect(codec.library == "libjpeg-turbo" && codec.message != reason && !codec.message.isEmpty, "\(path): \(codec)")
            }
        }
    }

    /// A file that ends early shows what arrived, as browsers do, and says it is
    /// partial; one that ends in its header has nothing to show and fails.
    @Test(Corpus.available) func truncatedFilesDecodeAsPartialOrFailInTheHeader() throws {
        let paths = [
            "jpeg/exif-orientation/Landscape_1.jpg", "jpeg/jpeg-decoder/benches/tower_progressive.jpg",
            "jpeg/libjpeg-turbo/testimgari.jpg", "jpeg/jpeg-decoder/reftest/ycck.jpg",
            "jpeg/jpeg-decoder/benches/tower_grayscale.jpg",
        ]
        for path in paths {
            let data = try Corpus.data(path)
            let scans = try TestImages.firstScanData(data)
            for cut in truncations(of: data) + [data.prefix(2), data.prefix(data.count - 2)] {
                do {
                    let image = try decoder.decode(cut, options: DecodingOptions())
                    let isPartial = image.isPartial
                    #expect(isPartial && cut.count > scans, "\(path) cut to \(cut.count)")
                } catch {
                    guard case .decodingFailed(.jpeg, _, _, _) = error, cut.count <= scans else {
                        Issue.record("\(path) cut to \(cut.count): \(error)")
                        continue
                    }
                }
            }
        }
    }

    /// A header claiming 65000 × 65000 pixels must be refused from the header alone;
    /// the 16 GB it asks for is never allocated (if it were, this test would not pass
    /// on a machine of this size, or would take seconds).
    @Test(Corpus.available) func aHugeHeaderIsRefusedBeforeDecoding() throws {
        var bytes = [UInt8](try Corpus.data("jpeg/libjpeg-turbo/testorig.jpg"))
        var i = 2
        while bytes[i + 1] != 0xC0 { i += 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])) }
        bytes[i + 5] = 0xFD; bytes[i + 6] = 0xE8  // height 65000
        bytes[i + 7] = 0xFD; bytes[i + 8] = 0xE8  // width 65000
        #expect(throws: ImagoError.imageTooLarge(width: 65000, height: 65000, frames: 1, limit: DecodingOptions.defaultMaximumPixelCount)) {
            try decoder.decode(Data(bytes), options: DecodingOptions())
        }
        let photo = try Corpus.data("jpeg/exif-orientation/Landscape_1.jpg")
        #expect(throws: ImagoError.imageTooLarge(width: 1800, height: 1200, frames: 1, limit: 1_000_000)) {
            try decoder.decode(photo, options: DecodingOptions(maximumPixelCount: 1_000_000))
        }
    }

    /// A damaged file fails with libjpeg-turbo's message as the codec's word; where
    /// Imago can say it more plainly (data that ends early) the reason is its own.
    @Test func corruptDataNamesLibjpegTurboAndItsMessage() throws {
        let encoded = [UInt8](try ImageEncoders.JPEG().encode(Bitmap.coordinates(width: 16, height: 16)))
        // The first quantisation table's index byte (after FF DB and the length):
        // libjpeg has four tables, 0 to 3.
        let dqt = try #require((2..<encoded.count - 1).first { encoded[$0] == 0xFF && encoded[$0 + 1] == 0xDB })
        var badIndex = encoded
        badIndex[dqt + 4] = 0x05
        let bogus = try #require(decoder.failure(Data(badIndex)))
        #expect(bogus == .decodingFailed(
            format: .jpeg, reason: "Bogus DQT index 5",
            codec: .init(library: "libjpeg-turbo", message: "Bogus DQT index 5")))
        #expect(bogus.description == "JPEG decoding failed: Bogus DQT index 5 (libjpeg-turbo)")

        // Cut inside the header: data that ends early is not libjpeg's failure
        // after the header, where what arrived decodes.
        let sof = try #require((2..<encoded.count - 1).first { encoded[$0] == 0xFF && encoded[$0 + 1] == 0xC0 })
        let cut = try #require(decoder.failure(Data(encoded.prefix(sof + 6))))
        #expect(cut == .decodingFailed(
            format: .jpeg, reason: "the data ends before the image does",
            codec: .init(library: "libjpeg-turbo", message: "Premature end of JPEG file")))
        #expect(cut.codecMessage?.library == "libjpeg-turbo")
        #expect(cut.description
            == "JPEG decoding failed: the data ends before the image does (libjpeg-turbo: Premature end of JPEG file)")
    }

    /// A thumbnail decoded at a DCT scale comes out at the size its source's layout
    /// gives, as the same pixels in PNG do: the scaled decode's own size rounds
    /// otherwise (1800×2700 at 1/8 is 225×338, which fits 256 px as 170×256).
    @Test(arguments: [(1800, 2700), (2268, 1512)])
    func scaledThumbnailsHaveTheSizeOfTheSourcesLayout(width: Int, height: Int) throws {
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { buffer, count in
            for y in 0..<height {
                for x in 0..<width {
                    let i = (y * width + x) * 4
                    buffer[i] = UInt8(x * 255 / width)
                    buffer[i + 1] = UInt8(y * 255 / height)
                    buffer[i + 2] = UInt8((x + y) * 127 / (width + height))
                    buffer[i + 3] = 255
                }
            }
            count = width * height * 4
        }
        let bitmap = Bitmap(width: width, height: height, pixels: pixels)
        let jpeg = try ImageEncoders.JPEG(quality: 95).encode(bitmap), png = try ImageEncoders.PNG().encode(bitmap)
        for target in [TargetSize.thumbnail(256), TargetSize(width: 100, height: 60, contentMode: .aspectFill)] {
            let options = DecodingOptions(targetSize: target)
            let layout = target.layout(sourceWidth: width, sourceHeight: height)
            let fromJPEG = try ImageDecoders.Registry.shared.decode(jpeg, options: options)
            let fromPNG = try ImageDecoders.Registry.shared.decode(png, options: options)
            #expect(fromJPEG.width == layout.outputWidth && fromJPEG.height == layout.outputHeight, "\(target)")
            #expect(fromPNG.width == layout.outputWidth && fromPNG.height == layout.outputHeight, "\(target)")
            guard fromJPEG.width == fromPNG.width, fromJPEG.height == fromPNG.height else { continue }
            // The same picture, not only the same size: a smooth gradient differs by
            // little more than JPEG's own loss.
            let difference = fromJPEG.bitmap.difference(to: fromPNG.bitmap)
            #expect(difference.maximum <= 12 && difference.total / difference.count <= 2, "\(target): \(difference)")
        }
        let thumbnail = try ImageDecoders.Registry.shared.decode(jpeg, options: DecodingOptions(targetSize: .thumbnail(256)))
        #expect(min(thumbnail.width, thumbnail.height) == 171 && max(thumbnail.width, thumbnail.height) == 256)
    }

    @Test func garbageFails() {
        for bytes: [UInt8] in [[], [0xFF, 0xD8, 0xFF], [0xFF, 0xD8, 0xFF, 0xE0] + [UInt8](repeating: 0x41, count: 100)] {
            #expect(throws: ImagoError.self) { try decoder.decode(Data(bytes), options: DecodingOptions()) }
        }
    }
}
#endif
