import Foundation
import Imago

/// One animation playing in one view, as the GTK view plays it: the frames come from an
/// `AnimationPlayer`, which decodes them off the calling thread a few ahead into a
/// bounded buffer, so the view's thread (the main thread) never decodes and memory
/// follows the frames on screen, not the frame count.
///
/// The view's toolkit only calls `advance(at:)` when `nextTick(at:)` says and shows
/// the frame it returns; every decision is here. A frame is shown for its own delay
/// (`ImageSourceRules.frameDelay`, so no file asks for a 1 ms timer); a frame not
/// decoded when it is due leaves the one on screen in place, as browsers do, rather
/// than skipping. Off screen nothing is decoded and the clock stops, so a view coming
/// back resumes where it was. On memory pressure playback pauses and the decoded
/// frames are let go, until the view comes on screen again.
@MainActor
final class AnimationPlayback {
    /// The image played.
    let image: DecodedImage
    /// How long each frame stays on screen, in seconds, as played.
    let durations: [Double]
    /// The longest a view waits between two ticks when it asks again for a frame that
    /// was not decoded in time: a display's frame. Never a tighter loop.
    static let retryInterval = 1.0 / 60

    /// The playback position on screen, counting frames across loops.
    private(set) var position = 0
    /// The frame on screen.
    private(set) var frame: DecodedImage.Frame
    /// Whether the view is on screen (in a window), as it last said.
    private(set) var isOnScreen = false
    /// Whether memory pressure paused playback; it resumes when the view leaves the
    /// screen and comes back (scrolled away and back, another tab and back), not at
    /// the next tick, which would decode again at once what pressure let go.
    private(set) var isPausedByMemoryPressure = false
    /// Whether a finite animation has played its loops, or a frame failed to decode:
    /// the frame on screen stays for good.
    private(set) var isFinished = false

    private var player: AnimationPlayer?
    /// The position the player counts from: the start of the loop playback was in
    /// when the player was made, so that a player made again (after memory pressure)
    /// decodes at most one loop to get back to the frame on screen.
    private var playerBase = 0
    /// When the frame on screen went up, on the caller's clock; nil while stopped.
    private var shownAt: Double?
    /// How long the frame on screen had been up when playback last stopped.
    private var shownFor = 0.0
    private var subscription: MemoryPressureMonitor.Subscription?

    /// Playback of `image` (an animation) from its first frame, already decoded: its
    /// poster. Memory pressure reported to `memoryPressure` pauses it.
    init(_ image: DecodedImage, memoryPressure: MemoryPressureMonitor = .shared) {
        self.image = image
        durations = image.frameDurations.map(ImageSourceRules.frameDelay)
        frame = image.firstFrame
        // Weak: the monitor outlives the view; a report after the view is gone does nothing.
        subscription = memoryPressure.subscribe { [weak self] _ in
            if Thread.isMainThread {
                MainActor.assumeIsolated { self?.memoryPressureReported() }
            } else {
                Task { @MainActor in self?.memoryPressureReported() }
            }
        }
    }

    /// The frames held decoded for this view at most: the one on screen and the
    /// player's buffer (the frame on screen is often in it too).
    var heldFrameCount: Int { 1 + (player?.bufferedFrameCount ?? 0) }

    /// The player decoding the frames, while there is one; for tests.
    var currentPlayer: AnimationPlayer? { player }

    /// Tells whether the view is on screen at `now` (seconds, on any steady clock
    /// the caller keeps to). Coming on screen starts decoding towards the next frame;
    /// going off stops the clock and decodes nothing more.
    func setOnScreen(_ onScreen: Bool, at now: Double) {
        guard onScreen != isOnScreen else { return }
        isOnScreen = onScreen
        if onScreen {
            isPausedByMemoryPressure = false
            resume(at: now)
        } else {
            stop(at: now)
        }
    }

    /// The frame to show at `now` when it changes, else nil (the one on screen stays):
    /// the next frame once the one on screen has had its delay and the next is decoded.
    func advance(at now: Double) -> DecodedImage.Frame? {
        guard isPlaying, let shownAt else { return nil }
        let count = durations.count
        let due = shownAt + durations[position % count]
        guard now >= due else { return nil }
        let next = position + 1
        if image.loopCount > 0, next >= image.loopCount * count {
            finish()
            return nil
        }
        let player = currentOrNewPlayer()
        if let end = player.endPosition, next - playerBase >= end {
            finish()
            return nil
        }
        guard let frame = player.frame(at: next - playerBase) else { return nil }
        // On schedule while playback keeps up; a frame later than its own delay
        // starts its time now, so that playback does not rush through frames to catch up.
        self.shownAt = now - due < durations[next % count] ? due : now
        position = next
        self.frame = frame
        return frame
    }

    /// How long from `now` until `advance(at:)` should be called again; nil while
    /// nothing is to be played (off screen, paused, finished): a view then only
    /// watches for coming on screen again, unless `isFinished`. Never less than
    /// `retryInterval`, so a late frame is asked for at a display's pace, not in a spin.
    func nextTick(at now: Double) -> Double? {
        guard isPlaying, let shownAt else { return nil }
        let due = shownAt + durations[position % durations.count]
        return max(due - now, Self.retryInterval)
    }

    private var isPlaying: Bool { isOnScreen && !isPausedByMemoryPressure && !isFinished }

    private func resume(at now: Double) {
        guard !isFinished, shownAt == nil else { return }
        shownAt = now - shownFor
        shownFor = 0
        // Decoding starts now, towards the frames after the one on screen.
        let player = currentOrNewPlayer()
        _ = player.frame(at: position - playerBase)
    }

    private func stop(at now: Double) {
        if let shownAt { shownFor = max(0, now - shownAt) }
        shownAt = nil
    }

    private func finish() {
        isFinished = true
        player = nil
    }

    private func currentOrNewPlayer() -> AnimationPlayer {
        if let player { return player }
        let player = AnimationPlayer(image)
        playerBase = position - position % durations.count
        self.player = player
        return player
    }

    private func memoryPressureReported() {
        guard !isFinished else { return }
        isPausedByMemoryPressure = true
        // The player's buffer goes with it; the frame on screen stays.
        player = nil
        // The frame on screen has its whole delay again when playback resumes.
        shownAt = nil
        shownFor = 0
    }
}
