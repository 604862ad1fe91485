#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Files that end early decode as far as they go, as browsers show them: real corpus
/// files cut at several lengths, compared with the decode of the whole file.
@Suite struct PartialDecodeTests {
    let registry = ImageDecoders.Registry()

    /// The rows `[0, rows)` of both bitmaps compared.
    static func topDifference(_ a: Bitmap, _ b: Bitmap, rows: Int) -> PixelDifference {
        let rows = min(rows, a.height, b.height)
        let top = { (bitmap: Bitmap) in
            Bitmap(width: bitmap.width, height: rows, bytesPerRow: bitmap.bytesPerRow,
                   pixels: Array(bitmap.pixels[0..<rows * bitmap.bytesPerRow]))
        }
        return top(a).difference(to: top(b))
    }

    /// How many rows at the top of `a` equal those of `b` within `tolerance`.
    static func matchingRows(_ a: Bitmap, _ b: Bitmap, tolerance: Int) -> Int {
        for y in 0..<min(a.height, b.height) {
            for i in y * a.bytesPerRow..<y * a.bytesPerRow + a.width * 4 where abs(Int(a.pixels[i]) - Int(b.pixels[i])) > tolerance {
                return y
            }
        }
        return min(a.height, b.height)
    }

    @Test(Corpus.available, arguments: [
        "jpeg/exif-orientation/Landscape_1.jpg", "jpeg/jpeg-decoder/benches/tower_grayscale.jpg",
        "jpeg/libjpeg-turbo/testimgari.jpg", "jpeg/jpeg-decoder/reftest/ycck.jpg",
    ])
    func baselineJPEGCutKeepsTheRowsReceived(_ path: String) throws {
        let data = try Corpus.data(path)
        let whole = try registry.decode(data)
        #expect(!whole.isPartial)
        let start = try TestImages.firstScanData(data)
        var previousRows = 0
        for fraction in [0.2, 0.5, 0.8, 0.97] {
            let cut = data.prefix(start + Int(Double(data.count - start) * fraction))
            let image = try registry.decode(cut)
            let (isPartial, width, height) = (image.isPartial, image.width, image.height)
            #expect(isPartial && width == whole.width && height == whole.height, "\(path) at \(fraction)")
            // The rows received are the whole file's, top down; the rest is filled.
            let rows = Self.matchingRows(image.bitmap, whole.bitmap, tolerance: 2)
            print("\(path) cut at \(fraction): the top \(rows) of \(whole.height) rows match the whole decode")
            #expect(rows > previousRows && rows < whole.height, "\(path) at \(fraction)")
            #expect(Double(rows) >= Double(whole.height) * fraction * 0.3, "\(path) at \(fraction)")
            previousRows = rows
        }
    }

    @Test(Corpus.available, arguments: ["jpeg/jpeg-decoder/benches/tower_progressive.jpg"])
    func progressiveJPEGCutShowsTheScansReceived(_ path: String) throws {
        let data = try Corpus.data(path)
        let whole = try registry.decode(data)
        #expect(!whole.isPartial)
        var previous = Double.infinity
        let start = try TestImages.firstScanData(data)
        for fraction in [0.15, 0.3, 0.5, 0.7, 0.9, 0.99] {
            let cut = data.prefix(start + Int(Double(data.count - start) * fraction))
            let image = try registry.decode(cut)
            let isPartial = image.isPartial
            #expect(isPartial, "\(path) at \(fraction)")
            let all = image.bitmap.difference(to: whole.bitmap)
            let top = Self.topDifference(image.bitmap, whole.bitmap, rows: whole.height / 10)
            print("\(path) cut at \(fraction): mean difference \(all.mean), top tenth max \(top.maximum) mean \(top.mean)")
            // Each scan refines the whole picture: closer with every cut point.
            #expect(all.mean <= previous + 0.5, "\(path) at \(fraction)")
            if fraction >= 0.5 { #expect(all.mean < 5, "\(path) at \(fraction)") }
            // The last scans refine the luminance top down: near the end, the top rows
            // are final.
            if fraction >= 0.9 { #expect(top.maximum <= 2, "\(path) at \(fraction)") }
            previous = all.mean
        }
    }

    /// A progressive file cut inside each of its segments between scans (the tables
    /// libjpeg would misread) and inside each scan: every cut shows what came before.
    @Test func progressiveJPEGCutAnywhereAfterTheFirstScanDecodes() throws {
        let picture = InterlacedPNG.picture(width: 96, height: 64)
        let data = try ImageEncoders.JPEG(quality: 90, progressive: true).encode(picture)
        let bytes = [UInt8](data)
        let whole = try registry.decode(data)
        #expect(!whole.isPartial)
        let scanStarts = (0..<bytes.count - 1).filter { bytes[$0] == 0xFF && bytes[$0 + 1] == 0xDA }
        #expect(scanStarts.count >= 6)
        let start = try TestImages.firstScanData(data)
        var decoded = 0
        for cut in stride(from: start + 1, to: bytes.count - 1, by: 7) {
            let image = try registry.decode(Data(bytes[..<cut]))
            let (isPartial, width, height) = (image.isPartial, image.width, image.height)
            #expect(isPartial && width == 96 && height == 64, "cut at \(cut)")
            decoded += 1
        }
        print("a \(bytes.count)-byte progressive JPEG of \(scanStarts.count) scans decoded cut at \(decoded) points")
    }

    /// Nothing to show: cut in the header, or after it but before any scan data.
    @Test(Corpus.available) func cutsBeforeAnyPixelFailAsBefore() throws {
        let jpeg = try Corpus.data("jpeg/exif-orientation/Landscape_1.jpg")
        let start = try TestImages.firstScanData(jpeg)
        for cut in [2, 3, 100, start - 3, start] {
            do { _ = try ImageDecoders.JPEG().decode(jpeg.prefix(cut), options: DecodingOptions()) } catch {
                guard case .decodingFailed(.jpeg, let reason, _, _) = error else {
                    Issue.record("JPEG cut at \(cut): \(error)")
                    continue
                }
                #expect(reason == "the data ends before the image does", "JPEG cut at \(cut)")
                continue
            }
            Issue.record("JPEG cut at \(cut) decoded")
        }
        let png = try Corpus.data("photos/kodak/kodim01.png")
        let firstIDAT = try #require(TestImages.chunkOffset("IDAT", in: png))
        for cut in [8, 20, 33, firstIDAT, firstIDAT + 8, firstIDAT + 10] {
            #expect(throws: ImagoError.decodingFailed(format: .png, reason: "the data ends before the image does", codec: nil),
                    "PNG cut at \(cut)") { try registry.decode(png.prefix(cut)) }
        }
    }

    @Test(Corpus.available) func plainPNGCutKeepsItsRowsAndTheRestIsTransparent() throws {
        for path in ["photos/kodak/kodim01.png", "png/pngsuite/basn6a16.png", "photos/kodak/kodim02.png"] {
            let data = try Corpus.data(path)
            let whole = try registry.decode(data)
            #expect(!whole.isPartial)
            let start = try #require(TestImages.chunkOffset("IDAT", in: data)) + 8
            var previousRows = 0
            for fraction in [0.3, 0.6, 0.85] {
                let cut = data.prefix(start + Int(Double(data.count - start) * fraction))
                let image = try registry.decode(cut)
                let isPartial = image.isPartial
                #expect(isPartial, "\(path) at \(fraction)")
                let rows = Self.matchingRows(image.bitmap, whole.bitmap, tolerance: 0)
                print("\(path) cut at \(fraction): the top \(rows) of \(whole.height) rows match")
                #expect(rows > previousRows && rows < whole.height, "\(path) at \(fraction)")
                // Every row below is transparent.
                for y in rows + 1..<image.height {
                    #expect((0..<image.width).allSatisfy { image.bitmap[$0, y].a == 0 }, "\(path) row \(y)")
                }
                previousRows = rows
            }
        }
    }

    /// An interlaced file shows the passes received, each pixel widened over its
    /// block, sharper with every pass.
    @Test func interlacedPNGCutShowsThePassesReceived() throws {
        let picture = InterlacedPNG.picture(width: 128, height: 96)
        let data = InterlacedPNG.encode(picture, chunkSize: 1000)
        let whole = try registry.decode(data)
        let (isPartial, same) = (whole.isPartial, whole.bitmap == picture)
        #expect(!isPartial && same)
        let start = try #require(TestImages.chunkOffset("IDAT", in: data)) + 8
        // With stored deflate blocks, passes take the file in proportion to their
        // pixels: 1/64, 1/64, 1/32, 1/16, 1/8, 1/4, 1/2.
        var previous = Double.infinity
        for fraction in [0.04, 0.07, 0.13, 0.26, 0.51, 0.9] {
            let cut = data.prefix(start + Int(Double(data.count - start) * fraction))
            let image = try registry.decode(cut)
            let isPartial = image.isPartial
            #expect(isPartial, "at \(fraction)")
            let difference = image.bitmap.difference(to: picture)
            print("interlaced PNG cut at \(fraction): mean difference \(difference.mean)")
            #expect(difference.mean < previous, "at \(fraction)")
            // The first pass alone already covers the canvas (no transparent pixel on
            // the top row).
            #expect((0..<image.width).allSatisfy { image.bitmap[$0, 0].a == 255 }, "at \(fraction)")
            previous = difference.mean
        }
        // The pixels of the first pass are exact.
        let first = try registry.decode(data.prefix(start + (data.count - start) / 20))
        for y in stride(from: 0, to: 96, by: 8) {
            for x in stride(from: 0, to: 128, by: 8) { #expect(first.bitmap[x, y] == picture[x, y]) }
        }
    }

    @Test(Corpus.available) func truncatedInterlacedCorpusFilesDecode() throws {
        for name in ["basi0g01.png", "basi2c16.png", "basi3p08.png", "basi4a16.png", "basi6a08.png"] {
            let data = try Corpus.data("png/pngsuite/\(name)")
            #expect(try !registry.decode(data).isPartial)
            let start = try #require(TestImages.chunkOffset("IDAT", in: data)) + 8
            for fraction in [0.5, 0.9] {
                let image = try registry.decode(data.prefix(start + Int(Double(data.count - 12 - start) * fraction)))
                let (isPartial, width, height) = (image.isPartial, image.width, image.height)
                #expect(isPartial && width == 32 && height == 32, "\(name) at \(fraction)")
            }
        }
    }

    /// Decoding small (the DCT scaling, the resampler) keeps the partial mark.
    @Test(Corpus.available) func aPartialImageDecodedSmallIsStillPartial() throws {
        let jpeg = try Corpus.data("jpeg/exif-orientation/Landscape_1.jpg")
        var options = DecodingOptions()
        options.targetSize = TargetSize(width: 100, height: 100)
        let small = try registry.decode(jpeg.prefix(jpeg.count / 2), options: options)
        #expect(small.isPartial && max(small.width, small.height) == 100)
        #expect(try !registry.decode(jpeg, options: options).isPartial)
    }
}
#endif
