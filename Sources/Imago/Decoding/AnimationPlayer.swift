import Foundation

/// Serves an animation's frames for playback with a bounded buffer, as
/// SDWebImage's `SDAnimatedImagePlayer` does: the frames about to be shown are decoded
/// ahead, off the calling thread, one decode at a time; frames already shown are
/// dropped; the decoder starts again from the first frame at each loop.
///
/// Frames are asked for by playback position, counting across loops (position
/// `loop × frameCount + index`), so a position once passed is never decoded again
/// unless asked for. `frame(at:)` never blocks: it returns the frame when it is
/// ready, else nil (keep showing the current one), and starts decoding towards it;
/// `waitForFrame(at:)` waits for it.
///
/// A frame that fails to decode ends the animation at the last good frame, as
/// browsers do: `endPosition` then says where, and later positions get that frame.
///
/// `@unchecked Sendable`: every mutable field is guarded by `lock`, and the frame
/// cursor (not `Sendable`) is used by the one decode in flight only.
public final class AnimationPlayer: @unchecked Sendable {
    /// The image played.
    public let image: DecodedImage
    /// How many frames are kept decoded at most (at least one).
    let capacity: Int

    private let animation: DecodedImage.AnimatedFrames?
    private let queue: DispatchQueue
    // Everything below is guarded by `lock`.
    private let lock = Lock()
    private var buffer: [Int: DecodedImage.Frame] = [:]
    private var wanted = 0
    private var cursor: DecodedImage.AnimatedFrames.Iterator?
    /// The position the cursor produces next.
    private var nextPosition = 0
    private var decoding = false
    private var ended: (position: Int, last: DecodedImage.Frame)?
    private var lastProduced: (position: Int, frame: DecodedImage.Frame)?
    private var waiters: [(position: Int, continuation: CheckedContinuation<DecodedImage.Frame?, Never>)] = []
    private var decodedCount = 0

    /// The default byte budget of the buffer: 16 MiB.
    public static let defaultByteBudget = 16 << 20

    /// A player for `image`, keeping at most `maximumFrames` frames and `byteBudget`
    /// bytes of them decoded, whichever is less (never fewer than one frame).
    public init(_ image: DecodedImage, byteBudget: Int = AnimationPlayer.defaultByteBudget, maximumFrames: Int = 4) {
        self.image = image
        animation = image.animation
        let frameCost = max(image.animation?.frameCost ?? image.bitmap.cost, 1)
        capacity = max(1, min(maximumFrames, byteBudget / frameCost))
        queue = DispatchQueue(label: "imago.animation-player", qos: .userInitiated)
    }

    /// How many frames one play has, as the scan counted them.
    public var frameCount: Int { image.frameCount }

    /// How long the frame at `position` shows, in seconds.
    public func duration(at position: Int) -> Double {
        let durations = image.frameDurations
        return durations[position % durations.count]
    }

    /// The position where a frame failed to decode, ending the animation (the frame
    /// before it stays); nil while every frame has decoded.
    package var endPosition: Int? {
        lock.withLock { ended?.position }
    }

    /// How many frames are held decoded now: what memory the player costs.
    package var bufferedFrameCount: Int {
        lock.withLock { buffer.count }
    }

    /// How many frames have been decoded since the player was made.
    package var decodedFrameCount: Int {
        lock.withLock { decodedCount }
    }

    /// The frame at `position` if it is decoded, else nil; either way decoding
    /// moves towards it and the frames after it, and frames before it are dropped.
    /// Past the end of a failed animation, its last good frame.
    public func frame(at position: Int) -> DecodedImage.Frame? {
        readyFrame(at: position)
    }

    private func readyFrame(at position: Int) -> DecodedImage.Frame? {
        precondition(position >= 0, "a playback position is not negative")
        guard animation != nil else { return image.firstFrame }
        let (frame, start) = lock.withLock { () -> (DecodedImage.Frame?, Bool) in
            want(position)
            if let ended, position >= ended.position { return (ended.last, false) }
            return (buffer[position], startDecodingIfNeeded())
        }
        if start { queue.async { self.decodeLoop() } }
        return frame
    }

    /// The frame at `position`, waiting for it to be decoded; nil when the animation
    /// ended (a frame failed) before it. Frames before it are dropped.
    public func waitForFrame(at position: Int) async -> DecodedImage.Frame? {
        if let frame = readyFrame(at: position) {
            let endedBefore = lock.withLock { ended.map { position >= $0.position } ?? false }
            return endedBefore ? nil : frame
        }
        return await withCheckedContinuation { continuation in
            let (result, start) = lock.withLock { () -> (DecodedImage.Frame??, Bool) in
                if let ended, position >= ended.position { return (.some(nil), false) }
                if let frame = buffer[position] { return (.some(frame), false) }
                let start = startDecodingIfNeeded()
                // Nothing decoding and nothing to decode: a finite animation's last
                // play is over before `position`.
                guard decoding else { return (.some(nil), false) }
                waiters.append((position, continuation))
                return (nil, start)
            }
            if let result { continuation.resume(returning: result) }
            if start { queue.async { self.decodeLoop() } }
        }
    }

    /// Moves the wanted position; a position before the cursor's starts the loop
    /// again. Called with the lock held.
    private func want(_ position: Int) {
        if position < wanted, buffer[position] == nil, position < nextPosition {
            // Going back (a replay): decode again from the start of that loop.
            cursor = nil
            nextPosition = position - position % frameCount
            buffer.removeAll()
        }
        wanted = position
        buffer = buffer.filter { $0.key >= position }
    }

    /// Whether a decode should start now; marks it started. Called with the lock held.
    private func startDecodingIfNeeded() -> Bool {
        guard !decoding, nextDecodeWanted() else { return false }
        decoding = true
        return true
    }

    /// Whether the cursor's next frame is needed: to reach the wanted position, or
    /// to fill the buffer ahead of it. Called with the lock held.
    private func nextDecodeWanted() -> Bool {
        if ended != nil { return false }
        if image.loopCount > 0, nextPosition >= image.loopCount * frameCount { return false }
        return nextPosition < wanted + capacity
    }

    private func decodeLoop() {
        while true {
            let cursor = lock.withLock { () -> DecodedImage.AnimatedFrames.Iterator in
                if let cursor = self.cursor { return cursor }
                // Each loop decodes from the first frame again.
                let fresh = animation!.makeIterator()
                self.cursor = fresh
                return fresh
            }
            let result = Result { () throws(ImagoError) in try cursor.next() }
            let resumed = lock.withLock { () -> [(CheckedContinuation<DecodedImage.Frame?, Never>, DecodedImage.Frame?)] in
                // The cursor was replaced while decoding (a replay): the frame is stale.
                guard cursor === self.cursor else { return [] }
                let position = nextPosition
                switch result {
                case .success(let frame?):
                    decodedCount += 1
                    nextPosition += 1
                    lastProduced = (position, frame)
                    if position >= wanted { buffer[position] = frame }
                    if nextPosition % frameCount == 0 { self.cursor = nil }
                case .success(nil), .failure:
                    // The frame before stays on screen for good.
                    let last = lastProduced?.frame ?? image.firstFrame
                    ended = (position, last)
                }
                var ready: [(CheckedContinuation<DecodedImage.Frame?, Never>, DecodedImage.Frame?)] = []
                waiters.removeAll { waiter in
                    if let ended, waiter.position >= ended.position {
                        ready.append((waiter.continuation, nil))
                        return true
                    }
                    if let frame = buffer[waiter.position] {
                        ready.append((waiter.continuation, frame))
                        return true
                    }
                    return false
                }
                return ready
            }
            for (continuation, frame) in resumed { continuation.resume(returning: frame) }
            let goOn = lock.withLock { () -> Bool in
                if nextDecodeWanted() { return true }
                decoding = false
                // A waiter for a position past a finite animation's last play.
                let stranded = waiters
                waiters.removeAll()
                stranded.forEach { $0.continuation.resume(returning: nil) }
                return false
            }
            if !goOn { return }
        }
    }
}
