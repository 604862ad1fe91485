#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The GIF decoder: the shared corpus against figures checked independently, and
/// small GIFs written here to pin down compositing, clipping and error handling.
///
/// Expected frame counts, sizes and loop counts were checked with ImageMagick's
/// `identify`; the frame hashes come from a separate Python decoder (its own LZW,
/// de-interlacing and compositing under the same rules), which agreed with Imago on
/// every frame of every valid corpus file.
@Suite struct GIFDecoderTests {
    // MARK: Corpus

    struct Expectation: Sendable {
        let width: Int
        let height: Int
        let frames: Int
        let loopCount: Int
        /// FNV-1a 64 of chosen frames' RGBA bytes, by frame index.
        let hashes: [Int: UInt64]
    }

    static let expectations: [String: Expectation] = [
        "samples/2x2.gif": .init(width: 2, height: 2, frames: 1, loopCount: 1, hashes: [0: 0x0153_ec76_769f_217d]),
        "samples/alpha_gif_a.gif": .init(width: 256, height: 256, frames: 1, loopCount: 1, hashes: [0: 0xba10_0561_2ddf_2325]),
        "samples/anim-gr.gif": .init(width: 100, height: 50, frames: 2, loopCount: 0,
                                     hashes: [0: 0x2eb8_0a21_6a6f_7b65, 1: 0xa4e3_4aee_97d5_6a15]),
        "samples/beacon.gif": .init(width: 6, height: 6, frames: 2, loopCount: 0,
                                    hashes: [0: 0xbc4c_4a0a_fefb_feb5, 1: 0x15de_c5f1_a7a1_0abd]),
        "samples/beacon_icc.gif": .init(width: 6, height: 6, frames: 2, loopCount: 0,
                                        hashes: [0: 0xbc4c_4a0a_fefb_feb5, 1: 0x15de_c5f1_a7a1_0abd]),
        "samples/beacon_xmp.gif": .init(width: 6, height: 6, frames: 2, loopCount: 0,
                                        hashes: [0: 0xbc4c_4a0a_fefb_feb5, 1: 0x15de_c5f1_a7a1_0abd]),
        "samples/gifplayer-muybridge.gif": .init(
            width: 472, height: 298, frames: 380, loopCount: 0,
            hashes: [0: 0x3755_bbba_8487_20d0, 190: 0x34ae_25d9_7445_9ac5, 379: 0x687e_6fae_704b_b0bf]),
        "samples/interlaced.gif": .init(width: 540, height: 330, frames: 1, loopCount: 1, hashes: [0: 0x7615_8f5a_28d5_840b]),
        // NETSCAPE2.0 says 10 repetitions: 11 plays, as in browsers (and `identify`).
        "samples/moon_impact.gif": .init(
            width: 116, height: 100, frames: 14, loopCount: 11,
            hashes: [0: 0x74e4_d490_0718_f347, 7: 0x41e8_a9a2_a009_6063, 13: 0x0ae3_e274_76a0_eecf]),
        "samples/sample_1.gif": .init(width: 10, height: 10, frames: 1, loopCount: 1, hashes: [0: 0x74b0_1a23_85de_70ad]),
        // No global colour table: every frame has its own. No loop extension: one play.
        "samples/sample_big.gif": .init(
            width: 1000, height: 175, frames: 259, loopCount: 1,
            hashes: [0: 0xaf9b_ce19_fc49_0772, 129: 0x330b_eea9_4e0b_f0a3, 258: 0x8648_1324_2a69_d67f]),
        // LZW minimum code size 1, below the specification's 2.
        "samples/set_hsts.gif": .init(width: 1, height: 1, frames: 1, loopCount: 1, hashes: [0: 0x4d25_767f_9dce_13f5]),
        "regression/issue-208-block-type.gif": .init(width: 8, height: 8, frames: 1, loopCount: 1, hashes: [0: 0x962b_558a_4ce5_5125]),
        "regression/issue-208-block-type-beta.gif": .init(width: 8, height: 8, frames: 1, loopCount: 1, hashes: [0: 0x962b_558a_4ce5_5125]),
        // An extension with an unregistered label (0x2A), which must be skipped.
        "regression/issue-209-extension-block-type.gif": .init(width: 1, height: 1, frames: 1, loopCount: 1, hashes: [0: 0x994f_7665_3e2a_3951]),
        "benches/note.gif": .init(width: 1080, height: 2160, frames: 1, loopCount: 1, hashes: [0: 0x4fc5_d5eb_0453_89b6]),
        "benches/samples/test.gif": .init(width: 1280, height: 1067, frames: 1, loopCount: 1, hashes: [0: 0x917e_9bae_05da_31f5]),
    ]

    static let corpus = "gif/image-gif/"

    @Test(Corpus.available, arguments: GIFDecoderTests.expectations.keys.sorted())
    func corpusFileDecodes(_ name: String) throws {
        let expected = try #require(Self.expectations[name])
        let image = try ImageDecoders.GIF().decode(try Corpus.data(Self.corpus + name), options: DecodingOptions())
        #expect(image.format == .gif)
        #expect(image.width == expected.width && image.height == expected.height)
        #expect(image.frames.count == expected.frames)
        #expect(image.loopCount == expected.loopCount)
        for frame in image.frames {
            #expect(frame.bitmap.width == expected.width && frame.bitmap.height == expected.height)
        }
        for (index, hash) in expected.hashes where index < image.frames.count {
            #expect(fnv1a(image.frames[index].bitmap.pixels) == hash, "frame \(index)")
        }
    }

    /// A file added to the corpus without expectations would otherwise go untested.
    @Test(Corpus.available, arguments: ["samples", "regression", "benches", "benches/samples"])
    func everyCorpusFileHasExpectations(_ folder: String) throws {
        for url in try Corpus.files(Self.corpus + folder, ext: "gif") {
            #expect(Self.expectations[folder + "/" + url.lastPathComponent] != nil, "\(url.path)")
        }
    }

    @Test(Corpus.available) func durations() throws {
        let muybridge = try decodeCorpus("samples/gifplayer-muybridge.gif")
        #expect(muybridge.frames.prefix(3).map(\.duration) == [0.36, 0.04, 0.04])
        #expect(muybridge.frames[190].duration == 0.12)
        // Delays of 1 cs and 10000 cs: the first shown for 100 ms, as browsers do.
        #expect(try decodeCorpus("samples/anim-gr.gif").frames.map(\.duration) == [0.1, 100])
        #expect(try decodeCorpus("samples/moon_impact.gif").frames.allSatisfy { $0.duration == 0.15 })
        // Delay 0 throughout.
        #expect(try decodeCorpus("samples/beacon.gif").frames.map(\.duration) == [0.1, 0.1])
    }

    @Test(Corpus.available) func knownPixels() throws {
        let alpha = try decodeCorpus("samples/alpha_gif_a.gif").bitmap
        #expect(rgba(alpha, 0, 0) == [0, 0, 255, 255])
        #expect(rgba(alpha, 128, 128) == [0, 0, 0, 0])
        #expect(alpha.hasAlpha)
        #expect(rgba(try decodeCorpus("samples/set_hsts.gif").bitmap, 0, 0) == [0, 0, 0, 0])

        let checker = try decodeCorpus("samples/2x2.gif").bitmap
        #expect(rgba(checker, 0, 0) == [0, 0, 0, 255] && rgba(checker, 1, 0) == [255, 255, 255, 255])
        #expect(rgba(checker, 0, 1) == [255, 255, 255, 255] && rgba(checker, 1, 1) == [0, 0, 0, 255])

        let sample = try decodeCorpus("samples/sample_1.gif").bitmap
        #expect(rgba(sample, 0, 0) == [255, 0, 0, 255] && rgba(sample, 5, 5) == [255, 255, 255, 255])

        let anim = try decodeCorpus("samples/anim-gr.gif")
        #expect(rgba(anim.frames[0].bitmap, 50, 25) == [0, 255, 0, 255])
        #expect(rgba(anim.frames[1].bitmap, 50, 25) == [255, 0, 0, 255])

        let beacon = try decodeCorpus("samples/beacon.gif")
        #expect(rgba(beacon.frames[0].bitmap, 2, 2) == [0, 0, 0, 255])
        #expect(rgba(beacon.frames[1].bitmap, 2, 2) == [255, 255, 255, 255])
        #expect(rgba(beacon.frames[1].bitmap, 1, 1) == [0, 0, 0, 255])

        let interlaced = try decodeCorpus("samples/interlaced.gif").bitmap
        #expect(rgba(interlaced, 270, 165) == [123, 0, 132, 255])
    }

    /// ImageMagick's non-interlaced re-encoding of interlaced.gif (same palette and
    /// pixels) must decode to exactly the same bitmap.
    @Test(Corpus.available) func interlacedMatchesItsDeinterlacedCopy() throws {
        let interlaced = try decodeCorpus("samples/interlaced.gif")
        let copy = try ImageDecoders.GIF().decode(try fixture("interlaced-deinterlaced.gif"), options: DecodingOptions())
        #expect(interlaced.bitmap == copy.bitmap)
    }

    @Test(Corpus.available) func registryPicksTheGIFDecoder() throws {
        let image = try ImageDecoders.Registry().decode(try Corpus.data(Self.corpus + "samples/beacon.gif"))
        #expect(image.format == .gif && image.frames.count == 2)
    }

    // MARK: Corrupt data

    /// image-gif's crash and stall cases: each must fail cleanly (or decode), fast,
    /// with the default limit and with a limit too large to stop anything early.
    @Test(Corpus.available, arguments: ["crashtest", "stall"])
    func corruptCorpusFilesFailCleanly(_ folder: String) throws {
        for url in try Corpus.files(Self.corpus + folder, ext: "gif") {
            let data = try Data(contentsOf: url)
            for options in [DecodingOptions(), DecodingOptions(maximumPixelCount: 1 << 30)] {
                let elapsed = threadCPUTime {
                    switch failure(data, options: options) {
                    case nil, .decodingFailed(format: .gif, _, _, _), .imageTooLarge: break
                    case let other?: Issue.record("\(url.lastPathComponent): unexpected \(other)")
                    }
                }
                // The stall cases made other decoders spin.
                #expect(elapsed < .seconds(10), "\(url.lastPathComponent)")
            }
        }
    }

    /// A file that ends early shows the frames that arrived, as in browsers, and
    /// says it is partial; one cut before any frame's data fails.
    @Test(Corpus.available, arguments: [
        "samples/2x2.gif", "samples/alpha_gif_a.gif", "samples/anim-gr.gif", "samples/beacon.gif",
        "samples/interlaced.gif", "samples/sample_1.gif", "samples/gifplayer-muybridge.gif",
    ])
    func truncatedCorpusFilesArePartial(_ name: String) throws {
        let data = try Corpus.data(Self.corpus + name)
        let expected = try #require(Self.expectations[name])
        for length in Set([data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            do {
                let image = try ImageDecoders.GIF().decode(data.prefix(length), options: DecodingOptions())
                #expect(image.isPartial, "\(name) cut to \(length) bytes")
                #expect(image.frameCount <= expected.frames)
                #expect(image.frames.count >= 1 && image.frames.count <= image.frameCount)
            } catch {
                guard case .decodingFailed(format: .gif, _, _, _) = error else {
                    Issue.record("\(name) cut to \(length) bytes: \(error)")
                    continue
                }
            }
        }
        // Only the trailer is missing: every frame is there, and the result says the
        // file was cut.
        let cut = try ImageDecoders.GIF().decode(data.prefix(data.count - 1), options: DecodingOptions())
        #expect(cut.isPartial)
        #expect(cut.frameCount == expected.frames)
        let whole = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        #expect(!whole.isPartial)
        #expect(cut.frames.last?.bitmap == whole.frames.last?.bitmap)
    }

    @Test func everyPrefixOfAnAnimationFailsOrIsPartial() throws {
        var gif = TestGIF(width: 5, height: 4, loop: 0)
        gif.frames = [
            .init(width: 5, height: 4, indices: pattern(20), disposal: 1, delay: 7, transparent: 3),
            .init(left: 1, top: 1, width: 3, height: 3, indices: pattern(9), disposal: 2, interlaced: true),
        ]
        let bytes = gif.encode()
        let whole = try ImageDecoders.GIF().decode(Data(bytes), options: DecodingOptions())
        #expect(whole.frames.count == 2 && !whole.isPartial)
        var partials = 0
        for length in 0..<bytes.count {
            do {
                let image = try ImageDecoders.GIF().decode(Data(bytes.prefix(length)), options: DecodingOptions())
                #expect(image.isPartial, "a prefix of \(length) of \(bytes.count) bytes")
                #expect((1...2).contains(image.frames.count))
                partials += 1
            } catch {
                guard case .decodingFailed(format: .gif, _, _, _) = error else {
                    Issue.record("a prefix of \(length) of \(bytes.count) bytes: \(error)")
                    continue
                }
            }
        }
        #expect(partials > 0)
    }

    @Test func emptyAndForeignDataFail() {
        // Found before giflib is called: no word from it.
        #expect(failure(Data()) == .decodingFailed(format: .gif, reason: "no data", codec: nil))
        #expect(failure(Data("GIF".utf8)) == .decodingFailed(format: .gif, reason: "the data is not a GIF", codec: nil))
        #expect(failure(Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            == .decodingFailed(format: .gif, reason: "the data is not a GIF", codec: nil))
        let header = failure(Data("GIF89a".utf8))
        #expect(header.map(reason) == "the data ends before the image does")
        #expect(header?.codecMessage?.library == "giflib")
    }

    @Test func canDecodeOnlyGIF() {
        let decoder = ImageDecoders.GIF()
        #expect(decoder.canDecode(Data("GIF89a".utf8), format: .gif))
        for format in ImageFormat.allCases where format != .gif {
            #expect(!decoder.canDecode(Data(), format: format))
        }
        #expect(!decoder.canDecode(Data(), format: nil))
    }

    @Test func fileWithoutFramesFails() {
        var bytes = TestGIF(width: 2, height: 2).encode()
        #expect(bytes.last == 0x3B)
        #expect(failure(Data(bytes)) == .decodingFailed(format: .gif, reason: "the file has no frames", codec: nil))
        // Extensions alone are not frames either.
        bytes = TestGIF(width: 2, height: 2, loop: 0).encode()
        #expect(failure(Data(bytes)) == .decodingFailed(format: .gif, reason: "the file has no frames", codec: nil))
    }

    @Test func anEmptyScreenWithAnEmptyFirstFrameFails() {
        var gif = TestGIF(width: 0, height: 0)
        gif.frames = [.init(width: 0, height: 0, indices: [])]
        guard case .decodingFailed(format: .gif, let reason, _, _)? = failure(Data(gif.encode())) else {
            Issue.record("an empty logical screen with an empty frame decoded")
            return
        }
        #expect(reason.contains("are empty"))
    }

    @Test func missingColourTableFails() {
        var gif = TestGIF(width: 2, height: 2, palette: nil)
        gif.frames = [.init(width: 2, height: 2, indices: [0, 1, 1, 0])]
        guard case .decodingFailed(format: .gif, let reason, _, _)? = failure(Data(gif.encode())) else {
            Issue.record("a frame without any colour table decoded")
            return
        }
        #expect(reason.contains("colour table"))
    }

    /// A stray byte where a record should start ends the file, as in Chrome and
    /// Firefox: the frames before it are shown. Before any frame, it is an error with
    /// giflib's word as the reason.
    @Test func unknownRecordTypeAfterTheFramesEndsTheFile() throws {
        var gif = TestGIF(width: 1, height: 1)
        gif.frames = [.init(width: 1, height: 1, indices: [1]), .init(width: 1, height: 1, indices: [2])]
        var bytes = gif.encode()
        bytes.insert(0x00, at: bytes.count - 1)
        let image = try decode(bytes)
        #expect(image.frames.count == 2 && rgba(image.bitmap, 0, 0) == [255, 0, 0, 255])
        // Between the frames: the first is shown alone, the rest is never read.
        var first = gif
        first.frames = [gif.frames[0]]
        let one = first.encode()
        let truncatedAfterStray = Array(one.dropLast()) + [0x00] + Array(gif.encode().dropFirst(one.count - 1))
        #expect(try decode(truncatedAfterStray).frames.count == 1)

        var empty = TestGIF(width: 1, height: 1).encode()
        empty.insert(0x00, at: empty.count - 1)
        guard case .decodingFailed(format: .gif, let reason, let codec?, _)? = failure(Data(empty)) else {
            Issue.record("a stray record byte before any frame was accepted, or failed without giflib's word")
            return
        }
        #expect(codec.library == "giflib" && codec.message == reason && !reason.isEmpty, "\(reason)")
    }

    /// LZW minimum code sizes of 9 to 12 bits, which giflib refuses: browsers decode
    /// them (a literal's pixel being its low 8 bits), and so does Imago. Over 12 is
    /// refused, as in browsers.
    @Test func codeSizesUpToTwelveBitsDecodeAsInBrowsers() throws {
        let header = Array("GIF89a".utf8) + [3, 0, 2, 0, 0x81, 0, 0] + TestGIF.basicPalette.flatMap { $0 }
        let indices: [UInt8] = [1, 2, 3, 0, 1, 2]
        for codeSize in 9...12 {
            let data = TestGIF.lzw(indices, codeSize: codeSize)
            var bytes = header + [0x2C, 0, 0, 0, 0, 3, 0, 2, 0, 0, UInt8(codeSize)]
            for start in stride(from: 0, to: data.count, by: 255) {
                let block = data[start..<min(start + 255, data.count)]
                bytes += [UInt8(block.count)] + block
            }
            bytes += [0, 0x3B]
            let image = try decode(bytes)
            #expect(rgba(image.bitmap, 0, 0) == [255, 0, 0, 255], "code size \(codeSize)")
            #expect(rgba(image.bitmap, 1, 0) == [0, 255, 0, 255], "code size \(codeSize)")
            #expect(rgba(image.bitmap, 2, 0) == [0, 0, 255, 255], "code size \(codeSize)")
            #expect(rgba(image.bitmap, 0, 1) == [0, 0, 0, 255], "code size \(codeSize)")
            #expect(rgba(image.bitmap, 2, 1) == [0, 255, 0, 255], "code size \(codeSize)")
            // Every shorter prefix fails with a typed error, or, once the frame's
            // data has begun, shows what arrived and says it is partial.
            for length in 0..<bytes.count - 1 {
                let partial = try? ImageDecoders.GIF().decode(Data(bytes.prefix(length)), options: DecodingOptions()).isPartial
                #expect(partial == true || failure(Data(bytes.prefix(length))) != nil, "code size \(codeSize), \(length) bytes")
            }
        }
        let header2 = Array("GIF89a".utf8) + [2, 0, 2, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255]
        for codeSize: UInt8 in [13, 255] {
            let bytes = header2 + [0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0, codeSize, 0x02, 0x4C, 0x01, 0, 0x3B]
            // giflib's own word for it is a failed read, which Imago explains.
            #expect(failure(Data(bytes)) == .decodingFailed(
                format: .gif, reason: "the LZW code size is over 8 bits",
                codec: .init(library: "giflib", message: "Failed to read from given file")))
        }
    }

    /// giflib stops reading at the trailer; bytes after it (moon_impact.gif has some)
    /// are not the image's business.
    @Test func bytesAfterTheTrailerAreIgnored() throws {
        var gif = TestGIF(width: 1, height: 1)
        gif.frames = [.init(width: 1, height: 1, indices: [1])]
        let image = try decode(gif.encode() + [0x00, 0xFF, 0x2C, 0x21])
        #expect(rgba(image.bitmap, 0, 0) == [255, 0, 0, 255])
    }

    // MARK: Decompression bombs

    @Test func hugeLogicalScreenIsRefusedBeforeAllocating() {
        // Only a header: the refusal must come before anything else is read.
        var bytes = Array("GIF89a".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        #expect(failure(Data(bytes)) == .imageTooLarge(
            width: 65535, height: 65535, frames: 1, limit: DecodingOptions.defaultMaximumPixelCount))
        bytes += [0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 2, 0x02, 0x4C, 0x01, 0, 0x3B]
        #expect(failure(Data(bytes)) == .imageTooLarge(
            width: 65535, height: 65535, frames: 1, limit: DecodingOptions.defaultMaximumPixelCount))
    }

    @Test func longAnimationIsRefusedByFrameCount() throws {
        var gif = TestGIF(width: 10, height: 10, loop: 0)
        gif.frames = Array(repeating: .init(width: 10, height: 10, indices: pattern(100)), count: 5)
        let data = Data(gif.encode())
        // The canvas counts once against the pixel limit.
        #expect(try ImageDecoders.GIF().decode(data, options: DecodingOptions(maximumPixelCount: 100)).frames.count == 5)
        #expect(failure(data, options: DecodingOptions(maximumPixelCount: 99))
            == .imageTooLarge(width: 10, height: 10, frames: 1, limit: 99))
        #expect(failure(data, options: DecodingOptions(maximumFrameCount: 4)) == .tooManyFrames(count: 5, limit: 4))
    }

    /// A frame claiming far more pixels than its few bytes of data could encode is
    /// refused before any decoding, rather than decoded until the data runs out.
    @Test func frameLargerThanItsDataIsRefused() {
        var bytes = Array("GIF89a".utf8) + [100, 0, 100, 0, 0x80, 0, 0] + [0, 0, 0, 255, 255, 255]
        bytes += [0x2C, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 2, 0x02, 0x4C, 0x01, 0, 0x3B]
        var outcome: ImagoError?
        let elapsed = threadCPUTime { outcome = failure(Data(bytes)) }
        guard case .decodingFailed(format: .gif, let reason, _, _)? = outcome else {
            Issue.record("a 65535 × 65535 frame in 30 bytes was accepted")
            return
        }
        #expect(reason.contains("more than the rest of the data can hold"))
        // Decoding the frame would take tens of seconds; refusing it, microseconds.
        #expect(elapsed < .seconds(5))
    }

    // MARK: Compositing

    @Test func disposalNoneKeepsTheFrame() throws {
        var gif = TestGIF(width: 4, height: 4, loop: 0)
        gif.frames = [
            .init(width: 4, height: 4, indices: Array(repeating: 1, count: 16), disposal: 1),
            .init(left: 1, top: 1, width: 2, height: 2, indices: [2, 2, 2, 2], disposal: 0),
            .init(left: 3, top: 3, width: 1, height: 1, indices: [3]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(image(frames[0]) == grid("RRRR RRRR RRRR RRRR"))
        #expect(image(frames[1]) == grid("RRRR RGGR RGGR RRRR"))
        #expect(image(frames[2]) == grid("RRRR RGGR RGGR RRRB"))
    }

    @Test func disposalBackgroundClearsToTransparent() throws {
        var gif = TestGIF(width: 4, height: 4, loop: 0, background: 2)
        gif.frames = [
            .init(width: 4, height: 4, indices: Array(repeating: 1, count: 16), disposal: 1),
            .init(left: 1, top: 1, width: 2, height: 2, indices: [2, 2, 2, 2], disposal: 2),
            .init(left: 0, top: 0, width: 1, height: 1, indices: [3], disposal: 2),
            .init(left: 3, top: 0, width: 1, height: 1, indices: [3]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(image(frames[1]) == grid("RRRR RGGR RGGR RRRR"))
        // The background colour (green here) is not used: browsers clear to transparent.
        #expect(image(frames[2]) == grid("BRRR R..R R..R RRRR"))
        #expect(image(frames[3]) == grid(".RRB R..R R..R RRRR"))
        #expect(rgba(frames[3], 1, 1) == [0, 0, 0, 0])
    }

    @Test func disposalPreviousRestoresTheCanvas() throws {
        var gif = TestGIF(width: 4, height: 4, loop: 0)
        gif.frames = [
            .init(width: 4, height: 4, indices: Array(repeating: 1, count: 16), disposal: 1),
            .init(left: 0, top: 0, width: 2, height: 2, indices: [2, 2, 2, 2], disposal: 3),
            .init(left: 1, top: 1, width: 2, height: 2, indices: [3, 3, 3, 3], disposal: 3),
            .init(left: 3, top: 3, width: 1, height: 1, indices: [0]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(image(frames[1]) == grid("GGRR GGRR RRRR RRRR"))
        #expect(image(frames[2]) == grid("RRRR RBBR RBBR RRRR"))
        #expect(image(frames[3]) == grid("RRRR RRRR RRRR RRRK"))
    }

    @Test func disposalPreviousOnTheFirstFrameRestoresTransparency() throws {
        var gif = TestGIF(width: 2, height: 2, loop: 0)
        gif.frames = [
            .init(width: 2, height: 2, indices: [2, 2, 2, 2], disposal: 3),
            .init(width: 1, height: 1, indices: [3]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(image(frames[0]) == grid("GG GG"))
        #expect(image(frames[1]) == grid("B. .."))
    }

    /// Some encoders wrote 4 for "restore to previous"; browsers read it as 3. The
    /// undefined 5 to 7 leave the frame in place.
    @Test func disposalFourActsAsPreviousAndHigherAsNone() throws {
        for (method, expected) in [(4, "RR RR"), (5, "BR RR"), (7, "BR RR")] {
            var gif = TestGIF(width: 2, height: 2, loop: 0)
            gif.frames = [
                .init(width: 2, height: 2, indices: [1, 1, 1, 1], disposal: 1),
                .init(width: 1, height: 1, indices: [3], disposal: method),
                .init(left: 1, top: 1, width: 1, height: 1, indices: [1]),
            ]
            let frames = try decode(gif.encode()).frames.map(\.bitmap)
            #expect(image(frames[2]) == grid(expected), "disposal \(method)")
        }
    }

    @Test func transparencyShowsWhatIsBelow() throws {
        var gif = TestGIF(width: 3, height: 1, loop: 0)
        gif.frames = [
            // Transparent pixels on the first frame are transparent black.
            .init(width: 3, height: 1, indices: [1, 0, 2], disposal: 1, transparent: 0),
            .init(width: 3, height: 1, indices: [2, 2, 0], transparent: 2),
            // The control block applied only to the frame after it: 2 is opaque here.
            .init(width: 3, height: 1, indices: [2, 3, 2], control: false),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(image(frames[0]) == grid("R.G"))
        #expect(rgba(frames[0], 1, 0) == [0, 0, 0, 0])
        #expect(image(frames[1]) == grid("R.K"))
        #expect(image(frames[2]) == grid("GBG"))
    }

    @Test func localColourTableOverridesGlobal() throws {
        var gif = TestGIF(width: 2, height: 1, loop: 0)
        gif.frames = [
            .init(width: 2, height: 1, indices: [0, 1], palette: [[255, 255, 255], [9, 8, 7]]),
            .init(width: 1, height: 1, indices: [1]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        #expect(rgba(frames[0], 0, 0) == [255, 255, 255, 255] && rgba(frames[0], 1, 0) == [9, 8, 7, 255])
        #expect(rgba(frames[1], 0, 0) == [255, 0, 0, 255] && rgba(frames[1], 1, 0) == [9, 8, 7, 255])
    }

    /// LZW can carry indices up to 2^code size − 1 whatever the table's size; those
    /// past its end draw nothing, and nothing is read beyond the table.
    @Test func indicesPastTheColourTableAreTransparent() throws {
        var gif = TestGIF(width: 4, height: 1, palette: [[10, 20, 30], [40, 50, 60]])
        gif.frames = [.init(width: 4, height: 1, indices: [0, 1, 2, 3])]
        let bitmap = try decode(gif.encode()).bitmap
        #expect(rgba(bitmap, 0, 0) == [10, 20, 30, 255] && rgba(bitmap, 1, 0) == [40, 50, 60, 255])
        #expect(rgba(bitmap, 2, 0) == [0, 0, 0, 0] && rgba(bitmap, 3, 0) == [0, 0, 0, 0])
        // Past a full 8-bit table too, with a transparent index that is not in it.
        var wide = TestGIF(width: 3, height: 1, palette: [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]])
        wide.frames = [.init(width: 3, height: 1, indices: [255, 3, 200], transparent: 200)]
        #expect(image(try decode(wide.encode()).bitmap, palette: [:]) == ".10,11,12.")
    }

    @Test(arguments: 1...17)
    func interlacedFramesComeOutInOrder(_ height: Int) throws {
        let indices = (0..<height * 3).map { UInt8($0 / 3 % 250) }
        var interlaced = TestGIF(width: 3, height: height, palette: TestGIF.greyPalette)
        interlaced.frames = [.init(width: 3, height: height, indices: indices, interlaced: true)]
        var plain = interlaced
        plain.frames[0].interlaced = false
        let bitmap = try decode(interlaced.encode()).bitmap
        #expect(bitmap == (try decode(plain.encode()).bitmap))
        for y in 0..<height {
            #expect(rgba(bitmap, 1, y) == [UInt8(y % 250), UInt8(y % 250), UInt8(y % 250), 255])
        }
    }

    /// An interlaced frame taller than the canvas: only its visible rows are drawn, the
    /// rest of its data is skipped, and the next frame still decodes.
    @Test func interlacedFrameReachingPastTheCanvas() throws {
        var gif = TestGIF(width: 2, height: 5, loop: 0, palette: TestGIF.greyPalette)
        gif.frames = [
            .init(width: 2, height: 12, indices: (0..<24).map { UInt8($0 / 2) }, interlaced: true),
            .init(left: 1, top: 4, width: 1, height: 1, indices: [200]),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap)
        for y in 0..<5 { #expect(rgba(frames[0], 0, y) == [UInt8(y), UInt8(y), UInt8(y), 255]) }
        #expect(rgba(frames[1], 1, 4) == [200, 200, 200, 255] && rgba(frames[1], 0, 4) == [4, 4, 4, 255])
    }

    @Test func rectanglesOutsideTheCanvasAreClipped() throws {
        var gif = TestGIF(width: 4, height: 4, loop: 0)
        gif.frames = [
            // Fits: only the first frame grows the canvas to its rectangle.
            .init(width: 1, height: 1, indices: [0], transparent: 0),
            // Sticks out to the right and bottom.
            .init(left: 2, top: 2, width: 4, height: 3, indices: [1, 2, 3, 1, 3, 1, 2, 2, 1, 1, 1, 1]),
            // Wholly outside, then empty: frames all the same, data skipped.
            .init(left: 60000, top: 1, width: 3, height: 3, indices: pattern(9)),
            .init(left: 1, top: 1, width: 0, height: 0, indices: []),
            .init(left: 0, top: 60000, width: 2, height: 2, indices: pattern(4)),
            // Wider than the canvas, starting inside.
            .init(left: 1, top: 0, width: 600, height: 1, indices: Array(repeating: 3, count: 600)),
        ]
        let frames = try decode(gif.encode()).frames.map(\.bitmap).dropFirst()
        #expect(frames.count == 5)
        #expect(image(frames[1]) == grid(".... .... ..RG ..BR"))
        for frame in frames[2...4] { #expect(frame == frames[1]) }
        #expect(image(frames[5]) == grid(".BBB .... ..RG ..BR"))
    }

    @Test func loopCountFollowsBrowsers() throws {
        func loops(_ loop: Int?, application: String = "NETSCAPE2.0") throws -> Int {
            var gif = TestGIF(width: 1, height: 1, loop: loop, loopApplication: application)
            gif.frames = Array(repeating: .init(width: 1, height: 1, indices: [1]), count: 2)
            return try decode(gif.encode()).loopCount
        }
        #expect(try loops(nil) == 1)
        #expect(try loops(0) == 0)
        #expect(try loops(1) == 2)
        #expect(try loops(3) == 4)
        #expect(try loops(65535) == 65536)
        #expect(try loops(2, application: "ANIMEXTS1.0") == 3)
        // Another application's block is not a loop count.
        #expect(try loops(2, application: "XMP DataXMP") == 1)
    }

    @Test func delaysFollowBrowsers() throws {
        var gif = TestGIF(width: 1, height: 1, loop: 0)
        gif.frames = [0, 1, 2, 10, 150].map { .init(width: 1, height: 1, indices: [1], delay: $0) }
        gif.frames.append(.init(width: 1, height: 1, indices: [1], control: false))
        #expect(try decode(gif.encode()).frames.map(\.duration) == [0.1, 0.1, 0.02, 0.1, 1.5, 0.1])
        #expect(ImageDecoders.GIF.frameDuration(centiseconds: 3) == 0.03)
    }

    @Test func interlacedRowOrder() {
        for height in 1...40 {
            let expected = Array(stride(from: 0, to: height, by: 8)) + Array(stride(from: 4, to: height, by: 8))
                + Array(stride(from: 2, to: height, by: 4)) + Array(stride(from: 1, to: height, by: 2))
            #expect((0..<height).map { ImageDecoders.GIF.interlacedRow($0, height: height) } == expected, "height \(height)")
            for visible in 0...height {
                let needed = ImageDecoders.GIF.rowsNeeded(height: height, interlaced: true, visibleRows: visible)
                let lastVisible = expected.lastIndex { $0 < visible }.map { $0 + 1 } ?? 0
                #expect(needed == lastVisible, "height \(height), visible \(visible)")
            }
        }
    }

    // MARK: Helpers

    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/gif")

    func fixture(_ name: String) throws -> Data {
        try Data(contentsOf: Self.fixtures.appendingPathComponent(name))
    }

    func decodeCorpus(_ name: String) throws -> DecodedImage {
        try ImageDecoders.GIF().decode(try Corpus.data(Self.corpus + name), options: DecodingOptions())
    }

    func decode(_ bytes: [UInt8]) throws -> DecodedImage {
        try ImageDecoders.GIF().decode(Data(bytes), options: DecodingOptions())
    }

    /// The error decoding `data` throws, or nil when it decodes.
    func failure(_ data: Data, options: DecodingOptions = DecodingOptions()) -> ImagoError? {
        do {
            _ = try ImageDecoders.GIF().decode(data, options: options)
            return nil
        } catch {
            return error
        }
    }

    /// The reason of a GIF decoding failure; the description of any other error.
    func reason(_ error: ImagoError) -> String {
        if case .decodingFailed(.gif, let reason, _, _) = error { return reason }
        return error.description
    }

    func rgba(_ bitmap: Bitmap, _ x: Int, _ y: Int) -> [UInt8] {
        let p = bitmap[x, y]
        return [p.r, p.g, p.b, p.a]
    }

    /// The test palette's colours by letter; "." is transparent.
    static let letters: [String: [UInt8]] = [
        "K": [0, 0, 0, 255], "R": [255, 0, 0, 255], "G": [0, 255, 0, 255], "B": [0, 0, 255, 255], ".": [0, 0, 0, 0],
    ]

    /// A bitmap as letters, row after row, for colours in `palette`; other colours
    /// come out as "r,g,b" and transparent pixels as ".".
    func image(_ bitmap: Bitmap, palette: [String: [UInt8]] = letters) -> String {
        var text = ""
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let pixel = rgba(bitmap, x, y)
                if pixel[3] == 0 && pixel != [0, 0, 0, 0] { return "unpremultiplied transparent pixel" }
                if pixel == [0, 0, 0, 0] { text += "."; continue }
                text += palette.first { $0.value == pixel }?.key ?? pixel[0..<3].map(String.init).joined(separator: ",")
            }
        }
        return text
    }

    func grid(_ rows: String) -> String { rows.replacingOccurrences(of: " ", with: "") }

    func pattern(_ count: Int) -> [UInt8] { (0..<count).map { UInt8($0 % 4) } }

    func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBufferPointer { bytes in
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash &*= 0x0000_0100_0000_01b3
            }
            return hash
        }
    }
}
#endif
