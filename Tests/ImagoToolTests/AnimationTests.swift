#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Animations measured in a fresh `imago` process: memory follows the display, not
/// the frame count, and a one-frame animation on a large canvas decodes scaled.
@Suite struct AnimationTests {
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
}
#endif
