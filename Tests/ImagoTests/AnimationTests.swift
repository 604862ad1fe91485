#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Animations decoded on demand: what a decode holds, the player's bounded buffer,
/// the frame-count limit, thumbnails of animations, and frames that fail or are cut.
@Suite struct AnimationTests {
    // MARK: Memory follows the display, not the frame count

    @Test func longAnimationHoldsOneFrameAndItsData() throws {
        let data = Self.longGIF(frames: 500, side: 500)
        let image = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        #expect(image.frameCount == 500 && image.isAnimated)
        #expect(image.width == 500 && image.height == 500)
        // The first frame and the compressed data, nothing per frame.
        #expect(image.cost == 500 * 500 * 4 + data.count)
        print("500-frame 500×500 GIF: cost \(image.cost / 1024) KB (\(data.count / 1024) KB of it the file); all frames would be \(500 * 500 * 4 * 500 / 1_048_576) MB")
    }

    @Test func playerPlaysEveryFrameInOrderAcrossALoop() async throws {
        let count = 500
        let data = Self.longGIF(frames: count, side: 500)
        let image = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        let player = AnimationPlayer(image)
        #expect(player.capacity >= 1 && player.capacity <= 4)
        // The reference: a cursor of its own, frame by frame.
        let reference = try #require(image.animation).makeIterator()
        for position in 0..<count + 20 {
            let frame = try #require(await player.waitForFrame(at: position), "position \(position)")
            if position < count {
                let expected = try #require(try reference.next())
                #expect(frame.bitmap == expected.bitmap, "frame \(position)")
                #expect(frame.duration == ImageDecoders.GIF.frameDuration(centiseconds: 4 + position % 3))
            } else if position == count {
                #expect(frame.bitmap == image.bitmap, "the second loop starts from the first frame")
            }
            #expect(player.duration(at: position) == ImageDecoders.GIF.frameDuration(centiseconds: 4 + position % count % 3))
            #expect(player.bufferedFrameCount <= player.capacity)
        }
        #expect(player.endPosition == nil)
    }

    @Test func playerStopsAtAFiniteAnimationsLastPlay() async throws {
        var gif = TestGIF(width: 4, height: 4, loop: 1)
        gif.frames = (0..<3).map { .init(width: 4, height: 4, indices: [UInt8](repeating: UInt8($0 + 1), count: 16)) }
        let image = try ImageDecoders.GIF().decode(Data(gif.encode()), options: DecodingOptions())
        #expect(image.loopCount == 2)
        let player = AnimationPlayer(image)
        for position in 0..<6 { #expect(await player.waitForFrame(at: position) != nil) }
        #expect(await player.waitForFrame(at: 6) == nil, "two plays of three frames")
    }

    @Test func playerJumpsAheadAndBack() async throws {
        let data = Self.longGIF(frames: 9, side: 30)
        let image = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        let frames = image.frames
        let player = AnimationPlayer(image, maximumFrames: 2)
        // Far ahead: the frames between are decoded and dropped, never held.
        #expect(await player.waitForFrame(at: 3 * 9 + 5)?.bitmap == frames[5].bitmap)
        #expect(player.bufferedFrameCount <= 2)
        // Back (a replay): decoding starts again from that loop's first frame.
        #expect(await player.waitForFrame(at: 1)?.bitmap == frames[1].bitmap)
        #expect(await player.waitForFrame(at: 2)?.bitmap == frames[2].bitmap)
        #expect(player.decodedFrameCount <= 3 * 9 + 5 + 1 + 2 + 2 + 2)
    }

    /// The player's frames are the frames `frames` decodes all at once (which the
    /// codecs' own tests pin to reference decodes), for every animated format.
    @Test(arguments: ["apng/basic.png", "apng/dispose-previous.png", "avif/animated.avif", "gif", "webp"])
    func playerFramesEqualTheEagerDecode(_ name: String) async throws {
        let data = try Self.animation(name)
        let image = try ImageDecoders.Registry.shared.decode(data)
        let eager = image.frames
        #expect(eager.count == image.frameCount && eager.count > 1, "\(name)")
        let player = AnimationPlayer(image, maximumFrames: 2)
        for position in 0..<eager.count * 2 {
            let frame = try #require(await player.waitForFrame(at: position))
            #expect(frame.bitmap == eager[position % eager.count].bitmap, "\(name) frame \(position)")
            #expect(frame.duration == eager[position % eager.count].duration)
        }
    }

    // MARK: Limits

    @Test func frameCountLimitRefusesFromTheScan() throws {
        var gif = TestGIF(width: 1, height: 1, loop: 0)
        gif.frames = Array(repeating: .init(width: 1, height: 1, indices: [1]), count: 5000)
        let data = Data(gif.encode())
        var options = DecodingOptions()
        options.maximumFrameCount = 1000
        let elapsed = threadCPUTime {
            #expect(throws: ImagoError.tooManyFrames(count: 5000, limit: 1000)) {
                try ImageDecoders.GIF().decode(data, options: options)
            }
        }
        print("5,000-frame GIF refused by the frame limit in \(elapsed) of CPU time")
        #expect(elapsed < .seconds(5))
        // Under the default limit it decodes, holding one frame and the file.
        let image = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        #expect(image.frameCount == 5000 && image.cost == 4 + data.count)
        #expect(ImagoError.tooManyFrames(count: 5000, limit: 1000).description.contains("5000 exceeds the limit of 1000"))
    }

    // MARK: Thumbnails and processors, frame by frame

    @Test(arguments: ["gif", "apng/dispose-previous.png", "webp", "avif/animated.avif"])
    func thumbnailFramesMatchTheFullDecodeFitted(_ name: String) throws {
        let data = try Self.animation(name)
        let full = try ImageDecoders.Registry.shared.decode(data)
        let target = TargetSize(width: max(1, full.width / 3), height: max(1, full.height / 3), contentMode: .aspectFill)
        var options = DecodingOptions()
        options.targetSize = target
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: options)
        let small = thumbnail.frames, large = full.frames
        #expect(small.count == large.count && small.count == thumbnail.frameCount)
        for (index, (frame, reference)) in zip(small, large).enumerated() {
            let expected = reference.bitmap.fitted(to: target)
            #expect(frame.bitmap.width == expected.width && frame.bitmap.height == expected.height, "\(name) frame \(index)")
            #expect(Self.maximumDifference(frame.bitmap, expected) <= 2, "\(name) frame \(index)")
        }
        #expect(thumbnail.cost < full.cost)
    }

    @Test func processorsApplyToEachFrameAsItIsDecoded() throws {
        let data = Self.longGIF(frames: 12, side: 60)
        let image = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        let processed = image.processed(by: [ImageProcessors.Resize(TargetSize(width: 20, height: 20))])
        #expect(processed.cost == 20 * 20 * 4 + data.count)
        let frames = processed.frames
        #expect(frames.count == 12)
        for (frame, original) in zip(frames, image.frames) {
            #expect(frame.bitmap == original.bitmap.fitted(to: TargetSize(width: 20, height: 20)))
        }
    }

    // MARK: Broken files

    @Test func aCorruptLaterFrameEndsTheAnimationAtTheLastGoodFrame() async throws {
        var gif = TestGIF(width: 8, height: 8, loop: 0)
        gif.frames = (0..<6).map { .init(width: 8, height: 8, indices: [UInt8](repeating: UInt8($0 % 3 + 1), count: 64), delay: 5) }
        var bytes = gif.encode()
        // Frame 4's LZW data (after its descriptor, code size and length byte)
        // replaced by codes no table holds.
        var head = gif
        head.frames = Array(gif.frames.prefix(3))
        let start = head.encode().count - 1 + 8  // the GCE of frame 4, then its descriptor
        #expect(bytes[start] == 0x2C)
        let length = Int(bytes[start + 11])
        for i in start + 12..<start + 12 + length { bytes[i] = 0xFF }

        let image = try ImageDecoders.GIF().decode(Data(bytes), options: DecodingOptions())
        #expect(image.frameCount == 6 && !image.isPartial)
        #expect(image.frames.count == 3)
        let player = AnimationPlayer(image)
        var shown: [Bitmap] = []
        for position in 0..<6 {
            guard let frame = await player.waitForFrame(at: position) else { break }
            shown.append(frame.bitmap)
        }
        #expect(shown.count == 3)
        #expect(player.endPosition == 3)
        // Past the end, the last good frame stays.
        #expect(player.frame(at: 5)?.bitmap == shown.last)
    }

    @Test func aTruncatedGIFShowsTheFramesThatArrived() async throws {
        let data = Self.longGIF(frames: 10, side: 40)
        var head = TestGIF(width: 40, height: 40, loop: 0)
        head.frames = Array(Self.longGIFFrames(frames: 10, side: 40).prefix(5))
        // Cut inside frame 6's data: five whole frames, the sixth begun.
        let cut = data.prefix(head.encode().count - 1 + 8 + 14)
        let image = try ImageDecoders.GIF().decode(cut, options: DecodingOptions())
        #expect(image.isPartial)
        #expect(image.frameCount == 6)
        let frames = image.frames
        #expect(frames.count == 6)
        let whole = try ImageDecoders.GIF().decode(data, options: DecodingOptions()).frames
        for index in 0..<5 { #expect(frames[index].bitmap == whole[index].bitmap, "frame \(index)") }
        let player = AnimationPlayer(image)
        for position in 0..<12 { #expect(await player.waitForFrame(at: position) != nil) }
    }

    // MARK: Helpers

    static func maximumDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        guard a.width == b.width, a.height == b.height else { return .max }
        return zip(a.pixels, b.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }
}
#endif
