#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// APNG animation against files written by Pillow (`Fixtures/apng/make_fixtures.py`):
/// every composited frame checked against Pillow's own composited decode (exact: the
/// frames' alpha is all or nothing), with durations and loop counts; for "previous"
/// disposal the reference is computed instead (Pillow's reader keeps the disposed area).
@Suite struct APNGDecoderTests {
    func frames(_ name: String) throws -> DecodedImage {
        try ImageDecoders.PNG().decode(try Fixture.data("apng/\(name).png"), options: DecodingOptions())
    }

    @Test func fullFramesWithDurationsAndPlays() throws {
        let image = try frames("basic")
        #expect(image.frames.count == 3 && image.loopCount == 3)
        #expect(image.frames.map(\.duration) == [0.1, 0.2, 0.05])
        for index in 0..<3 {
            let reference = try Fixture.reference("apng/basic.\(index).ref.png")
            #expect(image.frames[index].bitmap.difference(to: reference).maximum == 0, "frame \(index)")
        }
    }

    @Test(arguments: ["dispose-background", "dispose-previous"])
    func subRectanglesBlendAndDispose(_ name: String) throws {
        let image = try frames(name)
        #expect(image.frames.count == 4 && image.loopCount == 0)
        for index in 0..<4 {
            let reference = try Fixture.reference("apng/\(name).\(index).ref.png")
            #expect(image.frames[index].bitmap.difference(to: reference).maximum == 0, "\(name) frame \(index)")
        }
    }

    /// The default image, when outside the animation, is what viewers without APNG
    /// show; browsers play only the animation frames (Pillow's frames 1 to 3).
    @Test func aDefaultImageOutsideTheAnimationIsNotAFrame() throws {
        let image = try frames("default-not-animated")
        #expect(image.frames.count == 3)
        for index in 0..<3 {
            let reference = try Fixture.reference("apng/default-not-animated.\(index + 1).ref.png")
            #expect(image.frames[index].bitmap.difference(to: reference).maximum == 0, "frame \(index)")
        }
    }

    /// The canvas counts once against the pixel limit (frames are decoded as they
    /// are shown); the frame count has a limit of its own, checked from the chunks.
    @Test func limitsCountTheCanvasOnceAndTheFrames() throws {
        let data = try Fixture.data("apng/basic.png")
        #expect(try ImageDecoders.PNG().decode(data, options: DecodingOptions(maximumPixelCount: 32 * 20)).frameCount == 3)
        #expect(throws: ImagoError.tooManyFrames(count: 3, limit: 2)) {
            try ImageDecoders.PNG().decode(data, options: DecodingOptions(maximumFrameCount: 2))
        }
    }

    /// A damaged animation chunk (wrong CRC) leaves the default image, as browsers
    /// fall back to it; a cut file is still an error, as for any PNG.
    @Test func damageFallsBackOrFails() throws {
        var data = try Fixture.data("apng/dispose-previous.png")
        let bytes = [UInt8](data)
        let fdAT = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual("fdAT".utf8) })
        data[fdAT + 8] ^= 0xFF
        let image = try ImageDecoders.PNG().decode(data, options: DecodingOptions())
        #expect(image.frames.count == 1)
        let original = try Fixture.data("apng/dispose-previous.png")
        for length in [original.count / 2, original.count - 13] {
            #expect(ImageDecoders.PNG().failure(original.prefix(length))?.isDecodingFailure(.png) == true)
        }
        for offset in stride(from: 8, to: original.count, by: 7) {
            var damaged = original
            damaged[offset] ^= 0x5A
            if let error = ImageDecoders.PNG().failure(damaged, limit: 1 << 16) {
                switch error {
                case .decodingFailed(format: .png, _, _, _), .imageTooLarge: break
                default: Issue.record("byte \(offset): \(error)")
                }
            }
        }
    }
}

#endif

#if os(Linux)
/// Found by fuzzing: a 1.4 KB file whose zTXt chunk claims 1.7 GB, which libpng
/// allocated and zeroed before finding the data ends (fuzz runs passed their memory
/// limit on it). The chunk is now cut off before libpng sees it: a quick, typed
/// failure in little memory.
@Suite struct PNGFuzzRegressionTests {
    @Test func theFuzzInputFailsCleanly() throws {
        let data = try Fixture.data("png-regression/fuzz-oom-iccp.png")
        #expect(ImageDecoders.PNG().failure(data)?.isDecodingFailure(.png) == true)
    }
}
#endif
