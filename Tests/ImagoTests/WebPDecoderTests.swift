#if os(Linux)
import CLibPNG
import CLibWebP
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// One corpus WebP and what it is, as `webpinfo` and `webpmux -info` (libwebp 1.2.4)
/// report it: written down here so the tests need neither tool.
struct WebPSample: Sendable, CustomTestStringConvertible {
    enum Kind: Sendable { case lossy, lossyAlpha, lossless }

    let path: String
    let width: Int
    let height: Int
    let kind: Kind
    /// Frame count and per-frame duration in seconds, for animations.
    let frames: Int
    let duration: Double

    init(_ path: String, _ width: Int, _ height: Int, _ kind: Kind, frames: Int = 1, duration: Double = 0) {
        self.path = path
        self.width = width
        self.height = height
        self.kind = kind
        self.frames = frames
        self.duration = duration
    }

    var testDescription: String { path }
    var file: String { "webp/image-webp/\(path).webp" }

    /// dwebp's decode of the still image, or `webpmux -get frame N` of each frame.
    var references: [String] {
        frames == 1
            ? ["webp/image-webp/reference/\(path).png"]
            : (1...frames).map { "webp/image-webp/reference/\(path)-\($0).png" }
    }

    static let all: [WebPSample] = [
        WebPSample("animated/random_lossless", 64, 63, .lossless, frames: 3, duration: 0.1),
        WebPSample("animated/random_lossy", 99, 87, .lossy, frames: 4, duration: 0.15),
        WebPSample("gallery1/1", 550, 368, .lossy),
        WebPSample("gallery1/2", 550, 404, .lossy),
        WebPSample("gallery1/3", 1280, 720, .lossy),
        WebPSample("gallery1/4", 1024, 772, .lossy),
        WebPSample("gallery1/5", 1024, 752, .lossy),
        WebPSample("gallery2/1_webp_a", 400, 301, .lossyAlpha),
        WebPSample("gallery2/1_webp_ll", 400, 301, .lossless),
        WebPSample("gallery2/2_webp_a", 386, 395, .lossyAlpha),
        WebPSample("gallery2/2_webp_ll", 386, 395, .lossless),
        WebPSample("gallery2/3_webp_a", 800, 600, .lossyAlpha),
        WebPSample("gallery2/3_webp_ll", 800, 600, .lossless),
        WebPSample("gallery2/4_webp_a", 421, 163, .lossyAlpha),
        WebPSample("gallery2/4_webp_ll", 421, 163, .lossless),
        WebPSample("gallery2/5_webp_a", 300, 300, .lossyAlpha),
        WebPSample("gallery2/5_webp_ll", 300, 300, .lossless),
        WebPSample("regression/color_index", 30, 30, .lossless),
        WebPSample("regression/dark", 1, 1, .lossy),
        WebPSample("regression/lossless_indexed_1bit_palette", 230, 128, .lossless),
        WebPSample("regression/lossless_indexed_2bit_palette", 230, 128, .lossless),
        WebPSample("regression/lossless_indexed_4bit_palette", 500, 300, .lossless),
        WebPSample("regression/tiny", 10, 7, .lossless),
    ]
}

@Suite struct WebPDecoderTests {
    let decoder = ImageDecoders.WebP()

    // MARK: Corpus

    @Test(Corpus.available) func samplesListEveryCorpusFile() throws {
        var found: [String] = []
        for group in ["animated", "gallery1", "gallery2", "regression"] {
            found += try Corpus.files("webp/image-webp/\(group)", ext: "webp").map {
                "\(group)/\($0.deletingPathExtension().lastPathComponent)"
            }
        }
        #expect(found.sorted() == WebPSample.all.map(\.path).sorted())
    }

    @Test(Corpus.available, arguments: WebPSample.all)
    func decodesWithTheRightGeometry(_ sample: WebPSample) throws {
        let data = try Corpus.data(sample.file)
        #expect(decoder.canDecode(data, format: ImageFormat.detect(data)))
        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.format == .webp)
        #expect(image.width == sample.width && image.height == sample.height)
        #expect(image.frames.count == sample.frames)
        #expect(image.loopCount == 0)
        #expect(image.orientation == .up)
        for frame in image.frames {
            #expect(frame.bitmap.width == sample.width && frame.bitmap.height == sample.height)
            #expect(frame.bitmap.bytesPerRow == sample.width * 4)
            #expect(frame.duration == sample.duration)
        }
        if sample.kind == .lossy {
            #expect(!image.bitmap.hasAlpha)
        }
    }

    /// Tolerances, per channel, against the reference premultiplied here (measured
    /// maxima in brackets):
    ///
    /// - Lossy, opaque: 0 [0]. dwebp made the references with the same libwebp
    ///   decoder and the same default (fancy) upsampling, and libwebp keeps its SIMD
    ///   and plain C paths bit-exact, so nothing may differ.
    /// - Lossy with alpha, and lossless: 1 [1]. libwebp premultiplies with its own
    ///   fixed-point rounding of `v × a / 255` and the test with Imago's, which part
    ///   on some pixels that are neither opaque nor transparent. And the references
    ///   for frames 2 and 3 of random_lossless, made with webpmux and ImageMagick, are
    ///   1 lower in every channel of every pixel than dwebp's decode of the same
    ///   extracted frame (frame 1 matches exactly): the reference is off, not libwebp.
    @Test(Corpus.available, arguments: WebPSample.all)
    func pixelsMatchTheReference(_ sample: WebPSample) throws {
        let image = try decoder.decode(try Corpus.data(sample.file), options: DecodingOptions())
        for (frame, reference) in zip(image.frames, sample.references) {
            let expected = try referencePixels(try Corpus.data(reference))
            #expect(expected.width == frame.bitmap.width && expected.height == frame.bitmap.height)
            let (difference, at) = maximumDifference(frame.bitmap.pixels, expected.pixels)
            let tolerance = sample.kind == .lossy ? 0 : 1
            #expect(difference <= tolerance, "\(reference): off by \(difference) at byte \(at)")
        }
    }

    @Test(Corpus.available) func animationTimingAndFrames() throws {
        let image = try decoder.decode(try Corpus.data("webp/image-webp/animated/random_lossy.webp"), options: DecodingOptions())
        #expect(image.isAnimated)
        #expect(image.frames.map(\.duration) == [0.15, 0.15, 0.15, 0.15])
        // The frames are different pictures, not one canvas returned four times.
        #expect(image.frames[0].bitmap != image.frames[1].bitmap)
        // One frame held, and the file to decode the others from as they play.
        #expect(image.cost == 99 * 87 * 4 + (try Corpus.data("webp/image-webp/animated/random_lossy.webp")).count)
    }

    @Test func shortFrameDurationsPlayAtBrowserSpeed() {
        #expect(ImageDecoders.WebP.frameDuration(milliseconds: 0) == 0.1)
        #expect(ImageDecoders.WebP.frameDuration(milliseconds: 10) == 0.1)
        #expect(ImageDecoders.WebP.frameDuration(milliseconds: 11) == 0.011)
        #expect(ImageDecoders.WebP.frameDuration(milliseconds: 150) == 0.15)
    }

    @Test func canDecodeOnlyWebP() {
        let riff = riffFile([chunk("VP8L", [0x2F, 0, 0, 0, 0])])
        #expect(decoder.canDecode(riff, format: .webp))
        #expect(!decoder.canDecode(riff, format: .png))
        #expect(!decoder.canDecode(riff, format: nil))
    }

    // MARK: EXIF orientation

    @Test(arguments: [false, true])
    func appliesTheExifOrientation(jpegStylePrefix: Bool) throws {
        // 3 × 2, every pixel distinct and opaque so premultiplication leaves them be.
        let pixels: [UInt8] = [
            255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255,
            255, 255, 0, 255, 0, 255, 255, 255, 255, 255, 255, 255,
        ]
        let prefix: [UInt8] = jpegStylePrefix ? Array("Exif\0\0".utf8) : []
        let data = try muxedWebP(pixels: pixels, width: 3, height: 2, exif: prefix + tiffWithOrientation(6))

        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.orientation == .right)
        #expect(image.width == 2 && image.height == 3)
        // Orientation 6 turns the picture a quarter clockwise: the stored top-left
        // corner ends at the top right, the stored bottom-left at the top left.
        #expect(image.bitmap[1, 0] == (255, 0, 0, 255))
        #expect(image.bitmap[0, 0] == (255, 255, 0, 255))
        #expect(image.bitmap[0, 2] == (255, 255, 255, 255))

        let stored = try decoder.decode(data, options: DecodingOptions(appliesOrientation: false))
        #expect(stored.orientation == .right)
        #expect(stored.width == 3 && stored.height == 2)
        #expect(stored.bitmap[0, 0] == (255, 0, 0, 255))
    }

    @Test func turnsEveryFrameOfAnAnimation() throws {
        // DecodedImage promises upright pixels, so animations are turned too.
        let pixels: [UInt8] = [
            255, 0, 0, 255, 0, 255, 0, 255, 0, 0, 255, 255,
            255, 255, 0, 255, 0, 255, 255, 255, 255, 255, 255, 255,
        ]
        let frame = try anmf(image: losslessChunk(pixels: pixels, width: 3, height: 2))
        let data = riffFile([
            vp8x(flags: 0x02 | 0x08, width: 3, height: 2), anim(), frame, frame,
            chunk("EXIF", tiffWithOrientation(6)),
        ])
        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.orientation == .right)
        #expect(image.frames.count == 2)
        for frame in image.frames {
            #expect(frame.bitmap.width == 2 && frame.bitmap.height == 3)
            #expect(frame.bitmap[1, 0] == (255, 0, 0, 255))
        }
    }

    @Test func ignoresABrokenExifChunk() throws {
        let data = try muxedWebP(pixels: [9, 9, 9, 255], width: 1, height: 1, exif: [0x49, 0x49, 0x2A])
        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.orientation == .up)
        #expect(image.bitmap[0, 0] == (9, 9, 9, 255))
    }

    // MARK: Corrupt data

    /// A still cut short shows the rows received, the rest transparent, and says it
    /// is partial; an animation cut short plays the frames that arrived whole, as
    /// browsers do, and says it is partial; a still cut before its first row, or an
    /// animation before its first whole frame, fails as data that ends early.
    @Test(Corpus.available, arguments: WebPSample.all)
    func truncatedCopiesShowTheirRowsOrThrow(_ sample: WebPSample) throws {
        let data = try Corpus.data(sample.file)
        let whole = try decoder.decode(data, options: DecodingOptions())
        for length in Set([data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            do {
                let image = try decoder.decode(data.prefix(length), options: DecodingOptions())
                #expect(image.isPartial, "\(sample.path) cut to \(length) decoded whole")
                #expect(image.width == whole.width && image.height == whole.height)
                if sample.frames > 1 {
                    let frames = image.frames, wholeFrames = whole.frames
                    #expect(frames.count < sample.frames, "\(sample.path) cut to \(length): \(frames.count) frames")
                    for (index, frame) in frames.enumerated() {
                        #expect(frame.bitmap == wholeFrames[index].bitmap, "\(sample.path) cut to \(length), frame \(index)")
                        #expect(frame.duration == wholeFrames[index].duration)
                    }
                }
            } catch {
                guard case .decodingFailed(.webp, let reason, _, _) = error else {
                    Issue.record("\(sample.path) cut to \(length): \(error)")
                    continue
                }
                #expect(reason == "the data ends before the image does", "\(sample.path) cut to \(length)")
            }
        }
    }

    /// An animation cut in its last frame plays the three that came whole.
    @Test(Corpus.available) func anAnimationCutInItsLastFramePlaysTheOthers() throws {
        let data = try Corpus.data("webp/image-webp/animated/random_lossy.webp")
        let image = try decoder.decode(data.prefix(data.count - 200), options: DecodingOptions())
        #expect(image.isPartial && image.frameCount == 3 && image.loopCount == 0)
    }

    /// The rows of a still cut short are the whole image's, but for the last few
    /// libwebp smooths with the rows below; the rows not received are transparent.
    @Test(arguments: [false, true])
    func aStillCutShortShowsTheRowsReceived(lossless: Bool) throws {
        let picture = InterlacedPNG.picture(width: 256, height: 256)
        let data = try ImageEncoders.WebP(quality: 80, lossless: lossless).encode(picture)
        let whole = try decoder.decode(data, options: DecodingOptions())
        let cut = try decoder.decode(data.prefix(data.count * 6 / 10), options: DecodingOptions())
        #expect(cut.isPartial && !whole.isPartial && cut.width == 256 && cut.height == 256)
        let received = (0..<256).filter { y in (0..<256).contains { cut.bitmap[$0, y].a != 0 } }
        print("a \(lossless ? "lossless" : "lossy") WebP of \(data.count) bytes cut to 60 %: \(received.count) rows of 256")
        #expect(received.count >= 32 && received.count < 256 && received == Array(0..<received.count))
        let exact = received.dropLast(16)
        #expect(exact.allSatisfy { y in (0..<256).allSatisfy { cut.bitmap[$0, y] == whole.bitmap[$0, y] } })
        #expect(throws: ImagoError.self) { try decoder.decode(data.prefix(40), options: DecodingOptions()) }
    }

    /// A frame that fails to decode ends the animation at the frame before it, as in
    /// browsers; the cursor says why.
    @Test(Corpus.available) func corruptAnimationFrameEndsTheAnimation() throws {
        var bytes = [UInt8](try Corpus.data("webp/image-webp/animated/random_lossless.webp"))
        // Overwrite the second frame's entropy codes, past the VP8L header: the
        // demuxer reads only headers, so the container passes and the frame fails.
        let vp8l = Array("VP8L".utf8)
        let starts = (0..<bytes.count - 4).filter { bytes[$0..<$0 + 4].elementsEqual(vp8l) }
        try #require(starts.count == 3)
        for i in starts[1] + 8 + 5..<starts[1] + 8 + 64 { bytes[i] = 0xFF }
        let image = try decoder.decode(Data(bytes), options: DecodingOptions())
        #expect(image.frameCount == 3)
        #expect(image.frames.count == 1)
        let cursor = try #require(image.animation).makeIterator()
        #expect(try cursor.next() != nil)
        #expect(throws: ImagoError.decodingFailed(format: .webp, reason: "corrupt bitstream in frame 2", codec: nil)) {
            try cursor.next()
        }
        #expect(try cursor.next() == nil)
    }

    /// libwebp has no messages, only status codes: a bitstream it rejects fails with
    /// Imago's sentence and the status's name as libwebp's word.
    @Test func corruptBitstreamNamesLibwebpAndItsStatus() throws {
        var bytes = [UInt8](try ImageEncoders.WebP(lossless: true).encode(Bitmap.coordinates(width: 16, height: 16)))
        #expect(Array(bytes[12..<16]) == Array("VP8L".utf8))
        // Past the VP8L header (the chunk's payload starts at 20): the container
        // and the header pass, the entropy codes do not.
        for i in 20 + 5..<min(bytes.count, 20 + 64) { bytes[i] = 0xFF }
        let error: ImagoError
        do {
            _ = try decoder.decode(Data(bytes), options: DecodingOptions())
            Issue.record("a corrupt bitstream decoded")
            return
        } catch let caught {
            error = caught
        }
        #expect(error == .decodingFailed(
            format: .webp, reason: "corrupt bitstream",
            codec: .init(library: "libwebp", message: "VP8_STATUS_BITSTREAM_ERROR")))
        #expect(error.description == "WebP decoding failed: corrupt bitstream (libwebp: VP8_STATUS_BITSTREAM_ERROR)")
    }

    @Test func emptyAndHeaderOnlyDataThrow() {
        expectDecodingFailure(Data(), "empty")
        expectDecodingFailure(Data("RIFF".utf8), "RIFF alone")
        expectDecodingFailure(riffFile([]), "a RIFF/WEBP header and nothing else")
    }

    @Test(arguments: 0..<16)
    func garbageAfterTheHeaderThrows(variant: Int) {
        var generator = SplitMix64(state: UInt64(variant))
        let garbage = (0..<(64 + variant * 97)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var data = Data("RIFF".utf8) + littleEndian(UInt32(4 + garbage.count), bytes: 4) + Data("WEBP".utf8)
        data += garbage
        expectDecodingFailure(data, "variant \(variant)")
    }

    @Test func chunkOverrunningTheFileThrows() {
        // A VP8L chunk that claims more bytes than the RIFF holds.
        var bytes = [UInt8](riffFile([chunk("VP8L", [0x2F, 0, 0, 0, 0, 0, 0, 0])]))
        bytes[16] = 0xFF
        expectDecodingFailure(Data(bytes), "overrunning chunk")
    }

    // MARK: Decompression bombs

    @Test func hugeStillCanvasIsRefusedFromTheHeader() throws {
        // 16384 × 16384 is the largest WebP; 2²⁸ pixels, twice the default limit. The
        // bitstream after the VP8L header is missing, so reaching the decoder at all
        // would fail differently.
        let side = 16384
        let data = riffFile([
            vp8x(flags: 0, width: side, height: side),
            chunk("VP8L", vp8lHeader(width: side, height: side) + [0, 0, 0]),
        ])
        #expect(throws: ImagoError.imageTooLarge(
            width: side, height: side, frames: 1, limit: DecodingOptions.defaultMaximumPixelCount)) {
            try decoder.decode(data, options: DecodingOptions())
        }
    }

    @Test func animationLimitsCountTheCanvasOnceAndTheFrames() throws {
        // 16 one-pixel frames on a 4096 × 4096 canvas: the canvas counts once (frames
        // are decoded as they are shown), so the pixel limit refuses it only below
        // one canvas; the frame limit counts the frames, from the demuxer.
        let side = 4096
        let frame = try anmf(image: losslessChunk(pixels: [1, 2, 3, 255], width: 1, height: 1))
        let data = riffFile([vp8x(flags: 0x02, width: side, height: side), anim()] + Array(repeating: frame, count: 16))
        #expect(throws: ImagoError.imageTooLarge(width: side, height: side, frames: 1, limit: side * side - 1)) {
            try decoder.decode(data, options: DecodingOptions(maximumPixelCount: side * side - 1))
        }
        #expect(throws: ImagoError.tooManyFrames(count: 16, limit: 15)) {
            try decoder.decode(data, options: DecodingOptions(maximumFrameCount: 15))
        }
        #expect(try decoder.decode(data, options: DecodingOptions()).frameCount == 16)
    }

    @Test(Corpus.available) func corpusAnimationAgainstATightLimit() throws {
        let data = try Corpus.data("webp/image-webp/animated/random_lossless.webp")
        let canvas = 64 * 63
        #expect(throws: ImagoError.imageTooLarge(width: 64, height: 63, frames: 1, limit: canvas - 1)) {
            try decoder.decode(data, options: DecodingOptions(maximumPixelCount: canvas - 1))
        }
        #expect(try decoder.decode(data, options: DecodingOptions(maximumPixelCount: canvas)).frames.count == 3)
    }

    @Test func smallAnimationDecodesWithEveryFrame() throws {
        // The bomb test's file, small enough to decode: checks the crafted
        // container is valid, so the bomb test fails for the size alone.
        let frame = try anmf(image: losslessChunk(pixels: [10, 20, 30, 255], width: 1, height: 1), duration: 0)
        let data = riffFile([vp8x(flags: 0x02, width: 2, height: 2), anim(loops: 3)] + Array(repeating: frame, count: 3))
        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.frames.count == 3)
        #expect(image.loopCount == 3)
        #expect(image.frames.map(\.duration) == [0.1, 0.1, 0.1])
        #expect(image.bitmap[0, 0] == (10, 20, 30, 255))
        #expect(image.bitmap[1, 1] == (0, 0, 0, 0))
    }
}

// MARK: - Helpers

/// Expects `.decodingFailed(format: .webp, …)` and returns its reason.
@discardableResult
private func expectDecodingFailure(
    _ data: Data, _ comment: Comment, sourceLocation: SourceLocation = #_sourceLocation
) -> String? {
    do {
        _ = try ImageDecoders.WebP().decode(data, options: DecodingOptions())
        Issue.record("decoded, expected a failure: \(comment)", sourceLocation: sourceLocation)
    } catch {
        if case .decodingFailed(.webp, let reason, _, _) = error { return reason }
        Issue.record("\(error), expected decodingFailed: \(comment)", sourceLocation: sourceLocation)
    }
    return nil
}

/// The largest per-byte difference and its offset.
private func maximumDifference(_ a: [UInt8], _ b: [UInt8]) -> (Int, Int) {
    var worst = a.count == b.count ? 0 : Int.max, at = 0
    for i in 0..<min(a.count, b.count) {
        let d = abs(Int(a[i]) - Int(b[i]))
        if d > worst { (worst, at) = (d, i) }
    }
    return (worst, at)
}

/// A reference PNG as premultiplied RGBA, read with libpng's simplified API: the
/// PNG decoder is not what these tests are about, and must not be needed by them.
private func referencePixels(_ png: Data) throws -> (width: Int, height: Int, pixels: [UInt8]) {
    var image = png_image()
    image.version = UInt32(PNG_IMAGE_VERSION)
    defer { png_image_free(&image) }
    let begun = png.withUnsafeBytes { png_image_begin_read_from_memory(&image, $0.baseAddress, $0.count) }
    try #require(begun != 0, "libpng: \(message(&image))")
    image.format = UInt32(PNG_FORMAT_FLAG_COLOR | PNG_FORMAT_FLAG_ALPHA)
    let width = Int(image.width), height = Int(image.height)
    var pixels = [UInt8](repeating: 0, count: width * height * 4)
    let finished = pixels.withUnsafeMutableBytes { png_image_finish_read(&image, nil, $0.baseAddress, 0, nil) }
    try #require(finished != 0, "libpng: \(message(&image))")
    pixels.withUnsafeMutableBytes { $0.premultiplyRGBA(count: width * height) }
    return (width, height, pixels)
}

private func message(_ image: inout png_image) -> String {
    withUnsafeBytes(of: &image.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
}

private func littleEndian(_ value: UInt32, bytes: Int) -> [UInt8] {
    (0..<bytes).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
}

/// A RIFF chunk, padded to an even length as the format requires.
private func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
    Array(fourCC.utf8) + littleEndian(UInt32(payload.count), bytes: 4) + payload + (payload.count % 2 == 1 ? [0] : [])
}

private func riffFile(_ chunks: [[UInt8]]) -> Data {
    let body = Array("WEBP".utf8) + chunks.joined()
    return Data(Array("RIFF".utf8) + littleEndian(UInt32(body.count), bytes: 4) + body)
}

private func vp8x(flags: UInt8, width: Int, height: Int) -> [UInt8] {
    chunk("VP8X", [flags, 0, 0, 0] + littleEndian(UInt32(width - 1), bytes: 3) + littleEndian(UInt32(height - 1), bytes: 3))
}

private func anim(loops: UInt16 = 0) -> [UInt8] {
    chunk("ANIM", [0, 0, 0, 0] + littleEndian(UInt32(loops), bytes: 2))
}

/// An ANMF chunk showing `image`, a whole VP8L chunk, at the canvas origin.
private func anmf(image: [UInt8], duration: Int = 100) -> [UInt8] {
    // The frame size sits in the VP8L header: 14 bits each after the 0x2F signature.
    let bits = UInt32(image[9]) | UInt32(image[10]) << 8 | UInt32(image[11]) << 16 | UInt32(image[12]) << 24
    let width = bits & 0x3FFF + 1, height = (bits >> 14) & 0x3FFF + 1
    let header = littleEndian(0, bytes: 3) + littleEndian(0, bytes: 3)
        + littleEndian(width - 1, bytes: 3) + littleEndian(height - 1, bytes: 3)
        + littleEndian(UInt32(duration), bytes: 3) + [0]
    return chunk("ANMF", header + image)
}

/// The 5-byte VP8L header: signature, then width − 1 and height − 1 in 14 bits each.
private func vp8lHeader(width: Int, height: Int) -> [UInt8] {
    [0x2F] + littleEndian(UInt32(width - 1) | UInt32(height - 1) << 14, bytes: 4)
}

/// Lossless WebP of `pixels` (straight RGBA) by libwebp itself.
private func encodeLossless(pixels: [UInt8], width: Int, height: Int) throws -> [UInt8] {
    var output: UnsafeMutablePointer<UInt8>?
    let size = WebPEncodeLosslessRGBA(pixels, Int32(width), Int32(height), Int32(width * 4), &output)
    defer { WebPFree(output) }
    let bytes = try #require(output)
    try #require(size > 0)
    return Array(UnsafeBufferPointer(start: bytes, count: size))
}

/// The VP8L chunk of a simple lossless file, header included.
private func losslessChunk(pixels: [UInt8], width: Int, height: Int) throws -> [UInt8] {
    let file = try encodeLossless(pixels: pixels, width: width, height: height)
    try #require(file[12..<16].elementsEqual("VP8L".utf8))
    return Array(file[12...])
}

/// A WebP with an EXIF chunk, assembled by libwebpmux.
private func muxedWebP(pixels: [UInt8], width: Int, height: Int, exif: [UInt8]) throws -> Data {
    let image = try encodeLossless(pixels: pixels, width: width, height: height)
    let mux = try #require(WebPMuxNew())
    defer { WebPMuxDelete(mux) }
    var assembled = WebPData()
    defer { WebPDataClear(&assembled) }
    try image.withUnsafeBufferPointer { imageBytes in
        try exif.withUnsafeBufferPointer { exifBytes in
            var imageData = WebPData(bytes: imageBytes.baseAddress, size: imageBytes.count)
            var exifData = WebPData(bytes: exifBytes.baseAddress, size: exifBytes.count)
            try #require(WebPMuxSetImage(mux, &imageData, 1) == WEBP_MUX_OK)
            try #require(WebPMuxSetChunk(mux, "EXIF", &exifData, 1) == WEBP_MUX_OK)
            try #require(WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK)
        }
    }
    return Data(bytes: assembled.bytes, count: assembled.size)
}

/// A little-endian TIFF block whose first IFD holds only the Orientation tag.
private func tiffWithOrientation(_ value: UInt16) -> [UInt8] {
    [0x49, 0x49, 0x2A, 0x00, 0x08, 0x00, 0x00, 0x00,
     0x01, 0x00,
     0x12, 0x01, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, UInt8(value), 0x00, 0x00, 0x00,
     0x00, 0x00, 0x00, 0x00]
}

/// A generator with a fixed start, so the garbage tests are the same on every run.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(state: UInt64) { self.state = state }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
#endif
