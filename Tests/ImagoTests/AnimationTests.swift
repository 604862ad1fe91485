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

    @Test func decodingALongAnimationInAProcessStaysSmall() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("long.gif")
        try Self.longGIF(frames: 500, side: 500).write(to: file)
        let rest = try await Tool.peakMemoryAtRest()
        let decoding = try await Tool.peakMemory(decoding: file)
        print("peak RSS decoding a 500-frame 500×500 GIF: \(decoding / 1024) MB (\(rest / 1024) MB at rest); its frames together are 477 MB")
        // One canvas is 1 MB; every frame held would be 477 MB.
        #expect(decoding - rest < 100 * 1024)
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

    /// A still saved as a one-frame animation on a large canvas decodes as the still
    /// does, scaled by libwebp while decoding: no canvas-sized buffer at all.
    @Test func largeOneFrameWebPAnimationThumbnailDecodesScaled() async throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let side = 6000
        let still = folder.appendingPathComponent("still.webp")
        let stillData = try ImageEncoders.WebP().encode(Self.gradient(width: side, height: side, from: (0x33, 0x66, 0x99), to: (0xFF, 0xCC, 0x00)))
        try stillData.write(to: still)
        let image = [UInt8](stillData[12...])
        try #require(image.starts(with: Array("VP8 ".utf8)))
        let frame = Self.chunk("ANMF", Self.littleEndian(0, 6) + Self.littleEndian(side - 1, 3) + Self.littleEndian(side - 1, 3)
            + Self.littleEndian(100, 3) + [0] + image)
        let body = Array("WEBP".utf8) + Self.chunk("VP8X", [0x02, 0, 0, 0] + Self.littleEndian(side - 1, 3) + Self.littleEndian(side - 1, 3))
            + Self.chunk("ANIM", [0, 0, 0, 0, 0, 0]) + frame
        let animated = folder.appendingPathComponent("animated.webp")
        try Data(Array("RIFF".utf8) + Self.littleEndian(body.count, 4) + body).write(to: animated)

        var options = DecodingOptions()
        options.targetSize = .thumbnail(256)
        let thumbnail = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: animated), options: options)
        let stillThumbnail = try ImageDecoders.Registry.shared.decode(stillData, options: options)
        #expect(thumbnail.bitmap == stillThumbnail.bitmap)

        let rest = try await Tool.peakMemoryAtRest()
        let peak = try await Tool.peakMemory(decoding: animated, thumbnail: 256)
        let stillPeak = try await Tool.peakMemory(decoding: still, thumbnail: 256)
        let canvas = side * side * 4 / 1024
        print("peak RSS of a 256 px thumbnail of a one-frame \(side)×\(side) animated WebP: \(peak / 1024) MB, of the same still \(stillPeak / 1024) MB (\(rest / 1024) MB at rest; one canvas is \(canvas / 1024) MB)")
        #expect(peak - rest < canvas / 2)
        #expect(peak < stillPeak + 16 * 1024)
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

    /// A `side` × `side` GIF of `frames` frames: a full first frame, then a small
    /// patch moving about, with delays of 4 to 6 hundredths.
    static func longGIF(frames count: Int, side: Int) -> Data {
        var gif = TestGIF(width: side, height: side, loop: 0)
        gif.frames = longGIFFrames(frames: count, side: side)
        return Data(gif.encode())
    }

    static func longGIFFrames(frames count: Int, side: Int) -> [TestGIF.Frame] {
        let first = (0..<side * side).map { UInt8(($0 / side / 50 + $0 % side / 50) % 4) }
        var frames: [TestGIF.Frame] = [.init(width: side, height: side, indices: first, delay: 4)]
        let patch = min(10, side)
        for i in 1..<count {
            frames.append(.init(
                left: i * 37 % (side - patch + 1), top: i * 53 % (side - patch + 1), width: patch, height: patch,
                indices: [UInt8](repeating: UInt8(i % 4), count: patch * patch), delay: 4 + i % 3))
        }
        return frames
    }

    /// An animation by name: a fixture's path, or "gif" and "webp" for ones made here.
    static func animation(_ name: String) throws -> Data {
        switch name {
        case "gif":
            return longGIF(frames: 8, side: 90)
        case "webp":
            return try animatedWebP()
        default:
            return try Fixture.data(name)
        }
    }

    /// A four-frame 72×48 animated WebP: two gradients, a pattern of hard edges and a
    /// transparent frame, each coded losslessly by Imago's own encoder and put into an
    /// animation's chunks here, 100 ms a frame, blended over the one before.
    static func animatedWebP() throws -> Data {
        let (width, height) = (72, 48)
        let checks = (0..<height).flatMap { y in
            (0..<width).flatMap { x -> [UInt8] in
                let on = (x / 6 + y / 6) % 2 == 0
                return on ? [UInt8(x * 3), UInt8(y * 5), 0x80, 0xFF] : [0x20, UInt8(255 - x * 3), UInt8(y * 5), 0xFF]
            }
        }
        let frames = [
            gradient(width: width, height: height, from: (0xFF, 0, 0), to: (0, 0, 0xFF)),
            gradient(width: width, height: height, from: (0, 0x80, 0), to: (0xFF, 0xFF, 0)),
            Bitmap(width: width, height: height, pixels: checks),
            Bitmap(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 4)),
        ]
        var animation: [UInt8] = []
        for bitmap in frames {
            // The encoder's file is RIFF, size, WEBP, then the one VP8L chunk.
            let file = try ImageEncoders.WebP(lossless: true).encode(bitmap)
            animation += chunk("ANMF", littleEndian(0, 6) + littleEndian(width - 1, 3) + littleEndian(height - 1, 3)
                + littleEndian(100, 3) + [0] + [UInt8](file.dropFirst(12)))
        }
        let hasAnimationAndAlpha: UInt8 = 0x02 | 0x10
        let body = Array("WEBP".utf8) + chunk("VP8X", [hasAnimationAndAlpha, 0, 0, 0] + littleEndian(width - 1, 3) + littleEndian(height - 1, 3))
            + chunk("ANIM", [0, 0, 0, 0, 0, 0]) + animation
        return Data(Array("RIFF".utf8) + littleEndian(body.count, 4) + body)
    }

    /// An opaque bitmap shading from `top` to `bottom`, row by row; written a pixel
    /// word at a time, as the 6000 px one is slow to build in a debug build otherwise.
    static func gradient(width: Int, height: Int, from top: (UInt8, UInt8, UInt8), to bottom: (UInt8, UInt8, UInt8)) -> Bitmap {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        pixels.withUnsafeMutableBytes { bytes in
            for y in 0..<height {
                let t = height > 1 ? Double(y) / Double(height - 1) : 0
                func mix(_ a: UInt8, _ b: UInt8) -> UInt32 { UInt32((Double(a) * (1 - t) + Double(b) * t).rounded()) }
                let word = (mix(top.0, bottom.0) | mix(top.1, bottom.1) << 8 | mix(top.2, bottom.2) << 16 | 0xFF << 24).littleEndian
                let row = bytes.baseAddress! + y * width * 4
                for x in 0..<width { (row + x * 4).storeBytes(of: word, as: UInt32.self) }
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// A RIFF chunk: its four-character code, its length, its payload padded to an even length.
    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        Array(fourCC.utf8) + littleEndian(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-animation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func littleEndian(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }

    static func maximumDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        guard a.width == b.width, a.height == b.height else { return .max }
        return zip(a.pixels, b.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
    }
}
#endif
