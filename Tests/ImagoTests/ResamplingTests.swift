import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite struct TargetSizeTests {
    func layout(_ target: TargetSize, _ w: Int, _ h: Int) -> [Int] {
        let l = target.layout(sourceWidth: w, sourceHeight: h)
        return [l.scaledWidth, l.scaledHeight, l.outputWidth, l.outputHeight]
    }

    @Test func fitKeepsTheWholeImageInsideTheBox() {
        #expect(layout(.thumbnail(256), 1800, 1200) == [256, 171, 256, 171])
        #expect(layout(.thumbnail(256), 1200, 1800) == [171, 256, 171, 256])
        #expect(layout(.thumbnail(256), 3000, 7) == [256, 1, 256, 1])
        #expect(layout(TargetSize(width: 100, height: 300), 1000, 1000) == [100, 100, 100, 100])
        #expect(layout(TargetSize(width: 333, height: 77), 4000, 3001) == [103, 77, 103, 77])
    }

    @Test func fillCoversTheBoxAndCropsTheRest() {
        let square = TargetSize(width: 256, height: 256, contentMode: .aspectFill)
        #expect(layout(square, 1800, 1200) == [384, 256, 256, 256])
        #expect(layout(square, 1200, 1800) == [256, 384, 256, 256])
        #expect(layout(TargetSize(width: 300, height: 100, contentMode: .aspectFill), 1000, 1000) == [300, 300, 300, 100])
        #expect(layout(TargetSize(width: 50, height: 70, contentMode: .aspectFill), 641, 479) == [94, 70, 50, 70])
    }

    @Test func smallImagesAreNotEnlargedUnlessAsked() {
        #expect(layout(.thumbnail(256), 100, 50) == [100, 50, 100, 50])
        // A fill not enlarged still keeps the box's shape (as Nuke does): an avatar
        // is square whatever the source.
        #expect(layout(TargetSize(width: 256, height: 256, contentMode: .aspectFill), 100, 300) == [100, 300, 100, 100])
        #expect(layout(TargetSize(width: 1000, height: 1000, contentMode: .aspectFill), 640, 480) == [640, 480, 480, 480])
        #expect(layout(TargetSize(width: 400, height: 200, contentMode: .aspectFill), 300, 300) == [300, 300, 300, 150])
        #expect(layout(TargetSize(width: 256, height: 256, allowsUpscaling: true), 100, 50) == [256, 128, 256, 128])
        #expect(layout(TargetSize(width: 200, height: 200, contentMode: .aspectFill, allowsUpscaling: true), 100, 50) == [400, 200, 200, 200])
    }

    @Test func pointsTimesScaleRoundUp() {
        let target = TargetSize(points: 100.3, 50, scale: 3)
        #expect(target.width == 301 && target.height == 150)
        #expect(TargetSize(points: 44, 44, scale: 2, contentMode: .aspectFill).description == "fill-88x88")
        #expect(TargetSize.thumbnail(256).description == "fit-256x256")
        #expect(TargetSize(width: 10, height: 20, allowsUpscaling: true).description == "fit-10x20-up")
    }
}

@Suite struct ResamplerTests {
    /// The exact area average: each output pixel is the mean of the source area it
    /// covers, partial pixels weighted by their covered fraction. Slow and plainly
    /// right, the reference a downsampler is measured against.
    static func areaAverage(_ source: Bitmap, width: Int, height: Int) -> Bitmap {
        func weights(_ inCount: Int, _ outCount: Int) -> [[(Int, Double)]] {
            let scale = Double(inCount) / Double(outCount)
            return (0..<outCount).map { o in
                let lo = Double(o) * scale, hi = lo + scale
                return (Int(lo)..<min(inCount, Int(hi.rounded(.up)))).map { i in
                    (i, min(hi, Double(i + 1)) - max(lo, Double(i)))
                }
            }
        }
        let wx = weights(source.width, width), wy = weights(source.height, height)
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                var sum = [Double](repeating: 0, count: 4), total = 0.0
                for (sy, fy) in wy[y] {
                    for (sx, fx) in wx[x] {
                        let p = source[sx, sy]
                        sum[0] += Double(p.r) * fx * fy; sum[1] += Double(p.g) * fx * fy
                        sum[2] += Double(p.b) * fx * fy; sum[3] += Double(p.a) * fx * fy
                        total += fx * fy
                    }
                }
                for c in 0..<4 { pixels[(y * width + x) * 4 + c] = UInt8((sum[c] / total).rounded()) }
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    static func psnr(_ a: Bitmap, _ b: Bitmap) -> Double {
        var squared = 0.0
        for i in 0..<a.pixels.count {
            let d = Double(a.pixels[i]) - Double(b.pixels[i])
            squared += d * d
        }
        let mse = squared / Double(a.pixels.count)
        return mse == 0 ? .infinity : 10 * log10(255 * 255 / mse)
    }

    /// The cubic filter is sharper than a plain area average, so the two differ at edges by
    /// design; what must not happen is aliasing or a shift, which cost far more.
    /// Measured on these photos: 40.0–46.4 dB for resizing the full decode, 37.1 dB
    /// for the JPEG path through DCT scaling; nearest-neighbour sampling scores
    /// 20.5–27.2 dB and a one-pixel shift 20.9–26.2 dB.
    @Test(Corpus.available, arguments: ["photos/kodak/kodim05.png", "photos/kodak/kodim23.png", "jpeg/exif-orientation/Landscape_1.jpg"])
    func downsampledPhotosMatchTheExactAreaAverage(path: String) throws {
        let data = try Corpus.data(path)
        let full = try ImageDecoders.Registry.shared.decode(data).bitmap
        let target = TargetSize.thumbnail(200)
        let reference = Self.areaAverage(full, width: target.layout(sourceWidth: full.width, sourceHeight: full.height).outputWidth,
                                         height: target.layout(sourceWidth: full.width, sourceHeight: full.height).outputHeight)
        let resized = full.fitted(to: target)
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target)).bitmap
        #expect(resized.width == reference.width && resized.height == reference.height)
        #expect(thumbnail.width == reference.width && thumbnail.height == reference.height)
        #expect(Self.psnr(resized, reference) > 38, "\(path): \(Self.psnr(resized, reference)) dB")
        #expect(Self.psnr(thumbnail, reference) > 35, "\(path): \(Self.psnr(thumbnail, reference)) dB")
        #expect(resized.isPremultiplied && thumbnail.isPremultiplied)
    }

    /// White squares on a transparent checkerboard: resampled in premultiplied form,
    /// every visible pixel is still white once alpha is divided out. Resampling
    /// straight RGBA would mix in the transparent pixels' black and grey the edges.
    @Test func transparentCheckerboardGetsNoDarkFringes() {
        let size = 97, square = 7
        var pixels = [UInt8]()
        for y in 0..<size {
            for x in 0..<size {
                let white = (x / square + y / square) % 2 == 0
                pixels += white ? [255, 255, 255, 255] : [0, 0, 0, 0]
            }
        }
        let board = Bitmap(width: size, height: size, pixels: pixels)
        for (w, h) in [(40, 40), (13, 29), (200, 150), (5, 5)] {
            let resized = board.resized(width: w, height: h)
            #expect(resized.isPremultiplied)
            let straight = resized.straightAlphaPixels()
            var darkest: UInt8 = 255
            for i in stride(from: 0, to: straight.count, by: 4) where straight[i + 3] >= 8 {
                darkest = min(darkest, straight[i], straight[i + 1], straight[i + 2])
            }
            #expect(darkest >= 245, "\(w)×\(h): a visible pixel as dark as \(darkest)")
        }
    }

    @Test func fillCropsTheMiddle() {
        // Left third red, middle green, right third blue.
        var pixels = [UInt8]()
        for _ in 0..<30 {
            for x in 0..<90 { pixels += x < 30 ? [255, 0, 0, 255] : x < 60 ? [0, 255, 0, 255] : [0, 0, 255, 255] }
        }
        let bitmap = Bitmap(width: 90, height: 30, pixels: pixels)
        let square = bitmap.fitted(to: TargetSize(width: 10, height: 10, contentMode: .aspectFill))
        #expect(square.width == 10 && square.height == 10)
        #expect(square[5, 5] == (0, 255, 0, 255))
        // At scale 1 a fill is a plain crop: exact pixels, no blur.
        let cropped = bitmap.fitted(to: TargetSize(width: 30, height: 30, contentMode: .aspectFill))
        #expect(cropped.pixels == bitmap.cropped(x: 30, y: 0, width: 30, height: 30).pixels)
        #expect(Set(stride(from: 1, to: cropped.pixels.count, by: 4).map { cropped.pixels[$0] }) == [255])
    }

    @Test func resizingKeepsFlatColoursExact() {
        let flat = Bitmap(width: 37, height: 23, pixels: [UInt8]((0..<37 * 23).flatMap { _ in [60, 120, 30, 200] }))
        for (w, h) in [(10, 10), (100, 70), (1, 1), (37, 5)] {
            let resized = flat.resized(width: w, height: h)
            #expect(Set(stride(from: 0, to: resized.pixels.count, by: 4).map { resized[($0 / 4) % w, ($0 / 4) / w].g }) == [120])
            #expect(resized[0, 0] == (60, 120, 30, 200))
        }
    }

    /// A fit whose centred region starts a hair before the first row (1000×700 to
    /// 64 px: 45 rows of 15.56 each) averages only the image's own pixels: a flat
    /// colour stays exact on the edge rows too, and nothing before the pixels is read.
    @Test func aRegionStartingBeforeTheFirstRowReadsOnlyTheImage() {
        let flat = Bitmap(width: 1000, height: 700, pixels: [UInt8]((0..<1000 * 700).flatMap { _ in [60, 120, 30, 200] }))
        for target in [TargetSize.thumbnail(64), .thumbnail(7), TargetSize(width: 100, height: 100, contentMode: .aspectFill)] {
            let fitted = flat.fitted(to: target)
            #expect(Set(stride(from: 0, to: fitted.pixels.count, by: 4).map { fitted.pixels[$0 + 1] }) == [120], "\(target)")
            #expect(fitted[0, 0] == (60, 120, 30, 200) && fitted[fitted.width - 1, fitted.height - 1] == (60, 120, 30, 200))
        }
    }

    /// The filter in 16-bit fixed point against the same filter in doubles, written
    /// the plain way: at most one level apart, for sources smaller than the filter,
    /// odd and even sizes, reductions and enlargements, with and without alpha.
    @Test func fixedPointFilterMatchesTheFilterInDoubles() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func random() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        let sizes = [(1, 1, 3, 2), (1, 5, 2, 3), (2, 3, 5, 7), (3, 2, 1, 1), (7, 5, 4, 3), (33, 17, 20, 11),
                     (33, 17, 50, 40), (320, 213, 256, 171), (101, 99, 100, 98), (64, 64, 17, 63)]
        for (w, h, outW, outH) in sizes {
            for opaque in [true, false] {
                var pixels = [UInt8]()
                for _ in 0..<w * h {
                    let alpha = opaque ? 255 : random()
                    // Premultiplied: no colour above its alpha.
                    pixels += [random(), random(), random()].map { UInt8(Int($0) * Int(alpha) / 255) } + [alpha]
                }
                let source = Bitmap(width: w, height: h, pixels: pixels)
                let resized = source.resized(width: outW, height: outH)
                let reference = Self.filteredInDoubles(source, width: outW, height: outH)
                let worst = zip(resized.pixels, reference).map { abs(Int($0) - Int($1)) }.max() ?? 0
                #expect(worst <= 1, "\(w)×\(h) → \(outW)×\(outH)\(opaque ? "" : ", alpha"): off by \(worst)")
                #expect(resized.isPremultiplied)
            }
        }
    }

    /// The separable Catmull-Rom filter over the whole source, each output pixel's
    /// weights normalised to one, colours clamped to 0…alpha at the end.
    static func filteredInDoubles(_ source: Bitmap, width: Int, height: Int) -> [UInt8] {
        func weights(_ length: Int, _ outputs: Int) -> [[(Int, Double)]] {
            let scale = Double(length) / Double(outputs), filterScale = max(scale, 1)
            return (0..<outputs).map { i in
                let center = (Double(i) + 0.5) * scale
                let taps = (0..<length).map { j in (j, Resampler.kernel((Double(j) + 0.5 - center) / filterScale)) }.filter { $0.1 != 0 }
                let sum = taps.reduce(0) { $0 + $1.1 }
                return taps.map { ($0.0, $0.1 / sum) }
            }
        }
        let across = weights(source.width, width), down = weights(source.height, height)
        var rows = [[Double]](repeating: [Double](repeating: 0, count: width * 4), count: source.height)
        for y in 0..<source.height {
            for x in 0..<width {
                for (j, w) in across[x] {
                    for c in 0..<4 { rows[y][x * 4 + c] += w * Double(source.pixels[y * source.bytesPerRow + j * 4 + c]) }
                }
            }
        }
        var out = [UInt8]()
        for y in 0..<height {
            for x in 0..<width {
                var pixel = [Double](repeating: 0, count: 4)
                for (j, w) in down[y] { for c in 0..<4 { pixel[c] += w * rows[j][x * 4 + c] } }
                let alpha = min(255, max(0, pixel[3]))
                out += pixel.enumerated().map { c, v in UInt8(min(c == 3 ? 255 : alpha, max(0, v)).rounded()) }
            }
        }
        return out
    }

    @Test func largeReductionsAverageEverything() {
        // A fine black-and-white line pattern averages to grey, with no moiré.
        var pixels = [UInt8]()
        for y in 0..<1000 { for _ in 0..<1000 { pixels += y % 2 == 0 ? [255, 255, 255, 255] : [0, 0, 0, 255] } }
        let lines = Bitmap(width: 1000, height: 1000, pixels: pixels)
        let small = lines.resized(width: 16, height: 16)
        let values = Set(stride(from: 0, to: small.pixels.count, by: 4).map { small.pixels[$0] })
        #expect(values.allSatisfy { (125...130).contains($0) }, "\(values)")
    }

    @Test(Corpus.available) func orientationIsAppliedBeforeSizing() throws {
        let upright = try ImageDecoders.Registry.shared.decode(try Corpus.data("jpeg/exif-orientation/Portrait_1.jpg"), options: DecodingOptions(targetSize: .thumbnail(120)))
        for n in [3, 5, 6, 8] {
            let image = try ImageDecoders.Registry.shared.decode(try Corpus.data("jpeg/exif-orientation/Portrait_\(n).jpg"), options: DecodingOptions(targetSize: .thumbnail(120)))
            #expect(image.width == 80 && image.height == 120, "Portrait_\(n)")
            let differences = zip(image.bitmap.blockAverages(block: 20), upright.bitmap.blockAverages(block: 20)).map { abs($0 - $1) }
            #expect(differences.reduce(0, +) / Double(differences.count) < 4, "Portrait_\(n)")
        }
    }

    /// A thumbnail upright as stored goes to the resampler a band of rows at a time;
    /// one that must be turned first is decoded whole, turned, then resampled. Both
    /// feed the same rows to the same filter: the streamed thumbnail of a mirrored
    /// photo, mirrored, is the whole-canvas one (to a level: the filter's weights are
    /// rounded each on its own side).
    @Test(Corpus.available) func aStreamedJPEGThumbnailIsTheWholeDecodesThumbnail() throws {
        let data = try Corpus.data("jpeg/exif-orientation/Landscape_2.jpg")
        for target in [TargetSize.thumbnail(100), .init(width: 90, height: 90, contentMode: .aspectFill), .thumbnail(257)] {
            var options = DecodingOptions(targetSize: target)
            let whole = try ImageDecoders.Registry.shared.decode(data, options: options)
            options.appliesOrientation = false
            let streamed = try ImageDecoders.Registry.shared.decode(data, options: options).bitmap.applying(.upMirrored)
            #expect(streamed.width == whole.width && streamed.height == whole.height, "\(target)")
            let worst = zip(streamed.pixels, whole.bitmap.pixels).map { abs(Int($0) - Int($1)) }.max() ?? 0
            #expect(worst <= 1, "\(target): off by \(worst)")
        }
    }

    /// The filtered rows a stream holds are a window the height of the filter's
    /// reach, not the image: a 1000-row source resampled by a hair keeps some dozens
    /// of its rows, whatever the source's height.
    @Test func aStreamHoldsAWindowOfRowsNotTheImage() {
        for height in [1000, 4000] {
            let stream = Resampler.Stream(
                sourceWidth: 1000, sourceHeight: height, region: .init(x: 0, y: 0, width: 1000, height: Double(height)),
                width: 999, height: height - 1)
            let output = 999 * (height - 1) * 4
            // Each filtered row is 1000 pixels of 8 bytes; holding them all was 8 MB
            // for 1000 rows.
            #expect(stream.workingBytes - output < 64 * 1000 * 8, "\(height) rows: \(stream.workingBytes - output) bytes besides the output")
        }
    }

    @Test func keptTablesAreTheTablesMadeAfresh() {
        func same(_ a: Resampler.Contributions, _ b: Resampler.Contributions) -> Bool {
            a.starts == b.starts && a.weights == b.weights && a.pairs == b.pairs && a.end == b.end
        }
        // More geometries than are kept, twice over, so the second round meets both kept
        // tables and ones made again after the recent ones were let go.
        for _ in 0..<2 {
            for i in 0..<(2 * Resampler.Contributions.recentLimit) {
                let start = Double(i % 3) / 4, length = Double(300 + 7 * i), limit = 320 + 7 * i, outputs = 37 + i
                let made = Resampler.Contributions(start: start, length: length, limit: limit, outputs: outputs)
                #expect(same(.cached(start: start, length: length, limit: limit, outputs: outputs), made))
                let even = Resampler.Contributions.cached(start: start, length: length, limit: limit, outputs: outputs, even: true)
                #expect(same(even, made.paddedToEven()) && even.starts.count % 2 == 0)
            }
        }
    }

    @Test func jpegScaleCoversTheTarget() {
        // 4000 px to a 256 px thumbnail decodes at 1/8: a 500 × 375 buffer, never the
        // 48 MB of the full image.
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 4000, height: 3000, orientation: .up, target: .thumbnail(256)) == 8)
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 1280, height: 960, orientation: .up, target: .thumbnail(256)) == 4)
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 1280, height: 960, orientation: .up, target: .thumbnail(700)) == 1)
        // Sizes are those of the upright image: stored 1800 × 1200 turned by
        // orientation 6 is 1200 × 1800 upright, and needs 267 × 400 of it.
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 1800, height: 1200, orientation: .right, target: TargetSize(width: 1000, height: 400)) == 4)
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 1800, height: 1200, orientation: .up, target: TargetSize(width: 1000, height: 400)) == 2)
        let fill = TargetSize(width: 256, height: 256, contentMode: .aspectFill)
        #expect(ImageDecoders.JPEG.scaleDenominator(width: 4000, height: 1000, orientation: .up, target: fill) == 2)
    }

    @Test(Corpus.available) func animationsResizeEveryFrame() throws {
        let image = try ImageDecoders.Registry.shared.decode(try Corpus.data("gif/image-gif/samples/moon_impact.gif"), options: DecodingOptions(targetSize: .thumbnail(50)))
        #expect(image.frames.count == 14)
        #expect(image.frames.allSatisfy { $0.bitmap.width == 50 && $0.bitmap.height == 43 })
    }
}
