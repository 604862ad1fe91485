#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Thumbnails whose memory follows the output, not the source: rows streamed into
/// the resampler as the codec makes them, and a container's claimed size never
/// trusted over its frame's. Peaks are measured in a fresh `imago` process (the suite of
/// this name in ImagoToolTests); the
/// large decodes and the hostile files are made off the concurrency pool, which has
/// a thread per core for the whole suite.
@Suite struct ThumbnailMemoryTests {
    // MARK: PNG rows into the resampler

    /// A thumbnail made from libpng's rows as they come equals the whole image
    /// decoded and then fitted, with and without alpha, fit and fill, and for a file
    /// cut short (the rows missing transparent in both).
    @Test(arguments: [false, true])
    func streamedPNGThumbnailsEqualTheWholeDecodeFitted(_ alpha: Bool) async throws {
        let targets = [TargetSize.thumbnail(256), .thumbnail(500), TargetSize(width: 90, height: 160, contentMode: .aspectFill), .thumbnail(3)]
        let (whole, pairs, cut) = try await offThePool {
            let picture = Self.picture(width: 1200, height: 700, alpha: alpha)
            let data = try ImageEncoders.PNG().encode(picture)
            let whole = try ImageDecoders.PNG().decode(data, options: DecodingOptions())
            let pairs = try targets.map { target in
                (try ImageDecoders.PNG().decode(data, options: DecodingOptions(targetSize: target)).bitmap, whole.bitmap.fitted(to: target))
            }
            let cut = data.prefix(data.count * 2 / 3)
            let partial = try ImageDecoders.PNG().decode(cut, options: DecodingOptions())
            let streamed = try ImageDecoders.PNG().decode(cut, options: DecodingOptions(targetSize: .thumbnail(256)))
            return (whole.bitmap == picture, pairs, (partial.isPartial && streamed.isPartial, streamed.bitmap == partial.bitmap.fitted(to: .thumbnail(256))))
        }
        #expect(whole)
        for (target, (streamed, fitted)) in zip(targets, pairs) { #expect(streamed == fitted, "\(target)") }
        #expect(cut.0 && cut.1)
    }

    /// An interlaced file, whose rows come in seven passes, still decodes whole and
    /// then fits.
    @Test func interlacedPNGThumbnailsStillFit() throws {
        let picture = InterlacedPNG.picture(width: 600, height: 400)
        let data = InterlacedPNG.encode(picture)
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: .thumbnail(256)))
        #expect(thumbnail.bitmap == picture.fitted(to: .thumbnail(256)))
    }

    /// The time limit stops libpng at a row.
    @Test func theTimeLimitStopsLibpng() async throws {
        let data = try await offThePool { Self.hugeBlackPNG }
        var options = DecodingOptions()
        options.timeout = 0.05
        for target in [nil, TargetSize.thumbnail(256)] {
            options.targetSize = target
            #expect(throws: ImagoError.decodingTimedOut(format: .png, seconds: 0.05)) {
                try ImageDecoders.PNG().decode(data, options: options)
            }
        }
    }

    // MARK: TIFF strips into the resampler

    /// A thumbnail made a strip at a time equals the page decoded and then fitted:
    /// strips of 7 rows, whose bands the resampler's blocks do not line up with, and
    /// every fixture (tiles, alpha, the layouts libtiff converts).
    @Test func stripTIFFThumbnailsEqualTheWholeDecodeFitted() throws {
        let picture = InterlacedPNG.picture(width: 700, height: 450)
        let data = Self.stripTIFF(picture, rowsPerStrip: 7)
        #expect(try ImageDecoders.TIFF().decode(data, options: DecodingOptions()).bitmap == picture)
        for target in [TargetSize.thumbnail(256), .thumbnail(64), TargetSize(width: 90, height: 160, contentMode: .aspectFill)] {
            #expect(try ImageDecoders.TIFF().decode(data, options: DecodingOptions(targetSize: target)).bitmap == picture.fitted(to: target), "\(target)")
        }
        for name in try Fixture.files("tiff", suffix: ".tif") {
            let data = try Fixture.data("tiff/\(name)")
            let whole = try ImageDecoders.TIFF().decode(data, options: DecodingOptions())
            let target = TargetSize.thumbnail(11)
            // Turned files decode whole, turn, then fit (the registry fits them).
            let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
            #expect(thumbnail.bitmap == whole.bitmap.fitted(to: target), "\(name)")
        }
    }

    // MARK: Animated WebP on a large canvas

    /// Composited at the thumbnail's scale, the frames come out as libwebp's
    /// full-size canvases fitted, but for the pixels along frame edges.
    @Test func aLargeCanvasAnimationIsCompositedAtTheThumbnailsScale() async throws {
        #expect(2400 * 2400 > ScaledCanvas.largestFullCanvas)
        let targets = [TargetSize.thumbnail(256), TargetSize(width: 120, height: 200, contentMode: .aspectFill)]
        let frames = try await offThePool {
            let data = try Self.largeCanvasWebP(side: 2400, frameSide: 900)
            let full = try ImageDecoders.WebP().decode(data, options: DecodingOptions()).frames
            return try targets.map { target in
                let thumbnail = try ImageDecoders.WebP().decode(data, options: DecodingOptions(targetSize: target)).frames
                return zip(thumbnail, full).map { ($0.bitmap, $1.bitmap.fitted(to: target)) }
            }
        }
        for (target, pairs) in zip(targets, frames) {
            #expect(pairs.count == 4)
            for (index, (frame, expected)) in pairs.enumerated() {
                // Within a level but along the frame edges (about 4 % of these
                // pixels), where libwebp's box filter and the resampler's cubic differ.
                #expect(Self.closeFraction(frame, expected) > 0.95, "\(target) frame \(index)")
            }
        }
    }

    // MARK: GIF on a large screen

    /// A GIF on a 2400² screen (over the limit for compositing at full size) whose
    /// frames, their rows in order, go through the resampler to their scaled
    /// rectangles: transparent pixels, a frame cleared and one restored after it
    /// shows. Against the full-size composite fitted, all but the frame edges within
    /// a level; an interlaced frame's rows are summed into its average as they come.
    @Test(arguments: [false, true])
    func aLargeScreenGIFIsCompositedAtTheThumbnailsScale(_ interlaced: Bool) async throws {
        let side = 2400, frameSide = 700
        #expect(side * side > ScaledCanvas.largestFullCanvas)
        let pairs = try await offThePool { try Self.largeScreenGIFFrames(side: side, frameSide: frameSide, interlaced: interlaced) }
        #expect(pairs.count == 4)
        for (index, (frame, expected)) in pairs.enumerated() {
            #expect(Self.closeFraction(frame, expected) > 0.95, "frame \(index)")
        }
    }

    /// Each frame of the GIF's 256 px thumbnail, with the full decode's fitted.
    static func largeScreenGIFFrames(side: Int, frameSide: Int, interlaced: Bool) throws -> [(Bitmap, Bitmap)] {
        var gif = TestGIF(width: side, height: side, loop: 0)
        for number in 0..<4 {
            let offset = (side - frameSide) * number / 4
            // A frame of one colour with a transparent diagonal band (index 0).
            let indices = (0..<frameSide * frameSide).map { i -> UInt8 in
                abs(i % frameSide - i / frameSide) < 40 ? 0 : UInt8(1 + number % 3)
            }
            gif.frames.append(.init(
                left: offset, top: offset / 2, width: frameSide, height: frameSide, indices: indices,
                disposal: number == 1 ? 2 : number == 2 ? 3 : 1, delay: 10, transparent: 0, interlaced: interlaced && number == 3))
        }
        let data = Data(gif.encode())
        let full = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        let target = TargetSize.thumbnail(256)
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
        return zip(thumbnail.frames, full.frames).map { ($0.bitmap, $1.bitmap.fitted(to: target)) }
    }

    // MARK: A container's claim

    /// The frame is refused for not being the size the container claims, full size
    /// and as a thumbnail, before any canvas of the claimed size exists.
    @Test func anAVIFFrameSmallerThanItsContainerClaimsIsRefused() throws {
        let data = try Self.lyingAVIF(side: 11_000)
        for target in [nil, TargetSize.thumbnail(256)] {
            let error = #expect(throws: ImagoError.self) {
                try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
            }
            guard case .decodingFailed(.avif, let reason, let codec, _)? = error else {
                Issue.record("unexpected \(String(describing: error))")
                continue
            }
            #expect(reason == "frame 1 is not the 11000×11000 the container claims")
            #expect(codec?.library == "libavif")
        }
    }

    // MARK: Support

    /// The share of values within a level of each other.
    static func closeFraction(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.width == b.width, a.height == b.height else { return 0 }
        let close = zip(a.pixels, b.pixels).filter { abs(Int($0) - Int($1)) <= 1 }.count
        return Double(close) / Double(a.pixels.count)
    }

    /// Smooth gradients with hard edges, and with `alpha` a transparency ramp.
    static func picture(width: Int, height: Int, alpha: Bool) -> Bitmap {
        let opaque = InterlacedPNG.picture(width: width, height: height)
        guard alpha else { return opaque }
        var pixels = opaque.pixels
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                let a = UInt32((x * 255 / width + y * 64 / height) % 256)
                for c in 0..<3 { pixels[i + c] = UInt8((UInt32(pixels[i + c]) * a + 127) / 255) }
                pixels[i + 3] = UInt8(a)
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// An 8-bit RGB TIFF of `picture` (opaque) in uncompressed strips.
    static func stripTIFF(_ picture: Bitmap, rowsPerStrip: Int) -> Data {
        rgbTIFF(width: picture.width, height: picture.height, rowsPerStrip: rowsPerStrip, compression: 1) { rows in
            rows.flatMap { y in (0..<picture.width).flatMap { x in [picture[x, y].r, picture[x, y].g, picture[x, y].b] } }
        }
    }
}
#endif
