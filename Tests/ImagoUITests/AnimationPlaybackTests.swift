import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// How a view plays an animation (`AnimationPlayback`, which the UIKit, AppKit and
/// SwiftUI views only drive with a timer): frames decoded a few ahead off the main
/// actor, a bounded buffer, nothing decoded off screen, a pause on memory pressure.
@Suite struct AnimationPlaybackTests {
    /// A 200-frame 1000×1000 GIF, 40 ms a frame: a full first frame, then a 10×10
    /// patch a frame, as screen recordings and stickers change little between frames.
    static let largeGIF: Data = {
        var gif = TestGIF(width: 1000, height: 1000, loop: 0)
        gif.frames.append(.init(width: 1000, height: 1000, indices: [UInt8](repeating: 0, count: 1_000_000), delay: 4))
        for index in 1..<200 {
            gif.frames.append(.init(
                left: index * 37 % 990, top: index * 53 % 990, width: 10, height: 10,
                indices: [UInt8](repeating: UInt8(1 + index % 3), count: 100), delay: 4))
        }
        return Data(gif.encode())
    }()

    static func largeAnimation() throws -> DecodedImage {
        try ImageDecoders.GIF().decode(largeGIF, options: DecodingOptions())
    }

    /// Plays one loop as a view's timer would, on a clock of its own; a frame not
    /// decoded when due is waited for (the main actor sleeps: the decoding is
    /// elsewhere). Returns the most frames held at any tick and the frames shown.
    @MainActor
    static func playOneLoop(_ playback: AnimationPlayback) async throws -> (held: Int, shown: [Int]) {
        var now = 0.0, held = playback.heldFrameCount, shown = [0]
        playback.setOnScreen(true, at: now)
        while playback.position < playback.image.frameCount - 1 {
            now += try #require(playback.nextTick(at: now))
            if playback.advance(at: now) != nil {
                shown.append(playback.position)
            } else {
                try await Task.sleep(for: .milliseconds(1))
            }
            held = max(held, playback.heldFrameCount)
            try #require(now < 10_000, "playback stalled")
        }
        return (held, shown)
    }

    @Test @MainActor func aLongLargeAnimationHoldsAFewFramesWhilePlaying() async throws {
        let image = try Self.largeAnimation()
        #expect(image.frameCount == 200 && image.width == 1000 && image.height == 1000)
        let playback = AnimationPlayback(image, memoryPressure: MemoryPressureMonitor())
        let (held, shown) = try await Self.playOneLoop(playback)
        // Every frame shown once, in order, none skipped.
        #expect(shown == Array(0..<200))
        // The frame on screen and the player's buffer: 4 MB frames, 5 at most (20 MB),
        // never the 800 MB of the whole animation.
        #expect(held <= 5)
        #expect(try #require(playback.currentPlayer).capacity == 4)
        #expect(try #require(playback.currentPlayer).bufferedFrameCount <= 4)
    }

    @Test @MainActor func nothingIsDecodedOffScreenAndPlayResumesWhereItWas() async throws {
        let image = try Self.largeAnimation()
        let playback = AnimationPlayback(image, memoryPressure: MemoryPressureMonitor())
        // Never on screen (a view not in a window): no player, no decoding, no ticks.
        for time in stride(from: 0.0, through: 2, by: 0.04) {
            #expect(playback.advance(at: time) == nil && playback.nextTick(at: time) == nil)
        }
        #expect(playback.currentPlayer == nil && playback.position == 0)

        playback.setOnScreen(true, at: 10)
        let player = try #require(playback.currentPlayer)
        _ = await player.waitForFrame(at: 1)
        // Frame 1 was due at 10.04: on schedule, it counts as up since then.
        #expect(playback.advance(at: 10.05)?.bitmap.width == 1000 && playback.position == 1)
        // Off screen 20 ms into frame 1's 40 ms.
        playback.setOnScreen(false, at: 10.06)
        // The buffer the player had filled ahead settles; then nothing more is decoded.
        try await waitUntil { player.decodedFrameCount >= player.capacity + 1 }
        let decoded = player.decodedFrameCount
        for time in stride(from: 10.1, through: 20, by: 0.5) {
            #expect(playback.advance(at: time) == nil && playback.nextTick(at: time) == nil)
        }
        try await Task.sleep(for: .milliseconds(50))
        #expect(player.decodedFrameCount == decoded && playback.position == 1)
        // Back on screen: frame 1 has its remaining 20 ms, not a new 40.
        playback.setOnScreen(true, at: 100)
        #expect(abs(try #require(playback.nextTick(at: 100)) - 0.02) < 1e-9)
    }

    @Test @MainActor func memoryPressurePausesAndLetsTheFramesGo() async throws {
        let image = try Self.largeAnimation()
        let monitor = MemoryPressureMonitor()
        let playback = AnimationPlayback(image, memoryPressure: monitor)
        playback.setOnScreen(true, at: 0)
        let player = try #require(playback.currentPlayer)
        try await waitUntil { player.bufferedFrameCount >= 2 }
        monitor.report(.warning)
        try await waitUntil { playback.isPausedByMemoryPressure }
        // Only the frame on screen is held; nothing plays or decodes, on screen or not.
        #expect(playback.currentPlayer == nil && playback.heldFrameCount == 1)
        #expect(playback.nextTick(at: 1) == nil && playback.advance(at: 5) == nil)
        // Scrolled away and back: it plays again, from the frame it showed.
        playback.setOnScreen(false, at: 6)
        playback.setOnScreen(true, at: 7)
        #expect(!playback.isPausedByMemoryPressure && playback.currentPlayer != nil)
        #expect(try #require(playback.nextTick(at: 7)) > 0)
    }

    @Test @MainActor func framesPlayForTheirOwnDelaysNeverOnAMillisecondTimer() async throws {
        // Delays of 0, 10 ms and 20 ms: browsers show the first two for 100 ms. The
        // file repeats twice: three plays.
        var gif = TestGIF(width: 2, height: 2, loop: 2)
        for (index, delay) in [0, 1, 2].enumerated() {
            gif.frames.append(.init(width: 2, height: 2, indices: [UInt8](repeating: UInt8(index), count: 4), delay: delay))
        }
        let image = try ImageDecoders.GIF().decode(Data(gif.encode()), options: DecodingOptions())
        #expect(image.loopCount == 3)
        let playback = AnimationPlayback(image, memoryPressure: MemoryPressureMonitor())
        #expect(playback.durations == [0.1, 0.1, 0.02])
        playback.setOnScreen(true, at: 0)
        #expect(try #require(playback.nextTick(at: 0)) == 0.1)
        // However late or early a view asks, never a tighter loop than a display's frame.
        #expect(try #require(playback.nextTick(at: 0.0999)) == AnimationPlayback.retryInterval)
        #expect(try #require(playback.nextTick(at: 50)) == AnimationPlayback.retryInterval)
        // Three plays, then the last frame stays and the timer stops.
        var now = 0.0, positions: [Int] = []
        while !playback.isFinished {
            guard let delay = playback.nextTick(at: now) else { break }
            now += delay
            if playback.advance(at: now) != nil { positions.append(playback.position) } else { try await Task.sleep(for: .milliseconds(1)) }
            try #require(now < 100)
        }
        #expect(positions == Array(1...8))
        #expect(playback.isFinished && playback.nextTick(at: now) == nil && playback.heldFrameCount == 1)
        #expect(playback.frame.bitmap[0, 0] == (0, 255, 0, 255), "the last frame, green, stays")
    }

    /// Waits, a millisecond at a time, up to 10 s, until `condition` holds.
    @MainActor
    private func waitUntil(_ condition: @MainActor () -> Bool) async throws {
        let start = Date()
        while !condition() {
            try #require(Date().timeIntervalSince(start) < 10, "timed out")
            try await Task.sleep(for: .milliseconds(1))
        }
    }
}
