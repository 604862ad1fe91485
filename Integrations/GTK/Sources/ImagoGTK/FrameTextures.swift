import Imago

/// Where an animation stands: the time played so far, kept across pauses, so a view
/// that leaves the screen resumes where it was.
struct AnimationClock {
    /// Seconds played before the latest resumption.
    private var played = 0.0
    /// When playing resumed, on the frame clock; nil while paused.
    private var resumed: Double?
    private var lastTime = 0.0

    /// GIFs with no delay, or a delay of 10 ms or less, are shown for 100 ms, as
    /// browsers do: such files rely on it.
    static func duration(_ seconds: Double) -> Double {
        seconds <= 0.01 ? 0.1 : seconds
    }

    mutating func pause() {
        if let resumed { played += max(0, lastTime - resumed) }
        resumed = nil
    }

    /// The playback position to show at `time` (seconds on the frame clock),
    /// counting frames across loops; the last frame once a finite animation is done.
    mutating func position(of frames: FrameTextures, at time: Double) -> Int {
        if resumed == nil { resumed = time }
        lastTime = time
        let elapsed = played + (time - (resumed ?? time))
        let count = frames.durations.count, total = frames.totalDuration
        let loops = frames.image.loopCount
        if loops > 0, elapsed >= total * Double(loops) { return loops * count - 1 }
        let loop = Int(elapsed / total)
        var t = elapsed - Double(loop) * total
        for (index, duration) in frames.durations.enumerated() {
            t -= duration
            if t < 0 { return loop * count + index }
        }
        return loop * count + count - 1
    }

    /// Whether a finite animation has played all its loops.
    func isFinished(_ frames: FrameTextures) -> Bool {
        guard frames.image.loopCount > 0 else { return false }
        return played + (resumed.map { lastTime - $0 } ?? 0) >= frames.totalDuration * Double(frames.image.loopCount)
    }
}

/// The textures of one image's frames: for an animation, those of the few frames
/// around the one on screen, made from an `AnimationPlayer`'s bounded buffer; frames
/// already shown are let go.
final class FrameTextures {
    /// Textures kept at most: the frame on screen and the few decoded after it.
    static let maximumTextures = 3

    let image: DecodedImage
    let identity: UnsafeRawPointer?
    let durations: [Double]
    let totalDuration: Double
    private let player: AnimationPlayer?
    /// Textures by playback position.
    private var textures: [Int: OpaquePointer] = [:]

    init(_ image: DecodedImage) {
        self.image = image
        identity = image.bitmap.storageIdentity
        durations = image.frameDurations.map(AnimationClock.duration)
        totalDuration = durations.reduce(0, +)
        player = image.isAnimated ? AnimationPlayer(image) : nil
    }

    deinit {
        for texture in textures.values { g_object_unref(UnsafeMutableRawPointer(texture)) }
    }

    var textureCount: Int { textures.count }

    /// The texture of the frame at `position`, or nil while it is being decoded.
    /// Textures of earlier positions are released (a crossfade holds its own
    /// reference to the one fading out).
    func texture(at position: Int) -> OpaquePointer? {
        if let texture = textures[position] { return texture }
        let bitmap: Bitmap
        if let player {
            guard let frame = player.frame(at: position) ?? (position == 0 ? image.firstFrame : nil) else { return nil }
            bitmap = frame.bitmap
        } else {
            bitmap = image.bitmap
        }
        for (key, texture) in textures where key < position || textures.count >= Self.maximumTextures {
            g_object_unref(UnsafeMutableRawPointer(texture))
            textures[key] = nil
        }
        let texture = bitmap.makeTexture()
        textures[position] = texture
        return texture
    }
}
