/// A decoded image: one bitmap, or the first frame of an animation and its other
/// frames to decode on demand, with what the file said about them.
///
/// This is the platform-neutral result of every decoder. On Apple platforms
/// `platformImage(scale:)` (in the Apple adapters) turns it into a `UIImage` or `NSImage`.
///
/// An animation holds its first frame (the poster, `bitmap`) and an `DecodedImage.AnimatedFrames`
/// that keeps the compressed data and decodes the rest in order when asked: play it
/// through an `AnimationPlayer`, which keeps a few frames ahead of the display, so
/// memory follows what is shown, not the frame count.
public struct DecodedImage: Sendable {
    /// One frame of an animation, already composited: each frame is a full canvas,
    /// ready to show as it is.
    public struct Frame: Sendable {
        /// The frame's pixels.
        public let bitmap: Bitmap
        /// How long the frame stays on screen, in seconds.
        public let duration: Double

        /// Makes a frame shown for `duration` seconds.
        public init(bitmap: Bitmap, duration: Double) {
            self.bitmap = bitmap
            self.duration = duration
        }
    }

    /// What an image holds, in one object. An image is copied many times on its way
    /// to a view (out of the memory cache, into what the view shows, into a
    /// response): a copy of one reference is one retain, where a copy of the fields
    /// was one for each of their references and a hundred bytes moved.
    private final class Storage: Sendable {
        let firstFrame: Frame
        let animation: DecodedImage.AnimatedFrames?
        let loopCount: Int
        let format: ImageFormat
        let orientation: ImageOrientation
        let isPartial: Bool
        let platformOrigin: (any AnyObject & Sendable)?
        let notes: [String]

        init(
            firstFrame: Frame, animation: DecodedImage.AnimatedFrames?, loopCount: Int, format: ImageFormat,
            orientation: ImageOrientation, isPartial: Bool, platformOrigin: (any AnyObject & Sendable)?, notes: [String]
        ) {
            self.firstFrame = firstFrame
            self.animation = animation
            self.loopCount = loopCount
            self.format = format
            self.orientation = orientation
            self.isPartial = isPartial
            self.platformOrigin = platformOrigin
            self.notes = notes
        }

        /// The same, with another origin and other notes, or said to be partial.
        func with(platformOrigin: (any AnyObject & Sendable)?, notes: [String], isPartial: Bool? = nil) -> Storage {
            Storage(
                firstFrame: firstFrame, animation: animation, loopCount: loopCount, format: format,
                orientation: orientation, isPartial: isPartial ?? self.isPartial, platformOrigin: platformOrigin, notes: notes)
        }
    }

    /// The same image, said to be partial: its frames (an animation's still on
    /// demand) and notes as they are.
    var markedPartial: DecodedImage {
        var image = self
        image.storage = storage.with(platformOrigin: storage.platformOrigin, notes: storage.notes, isPartial: true)
        return image
    }

    private var storage: Storage

    /// The first frame, decoded: the whole image for a still, the poster for an
    /// animation.
    public var firstFrame: Frame { storage.firstFrame }
    /// The frames of an animation, decoded when asked for; nil for a still image.
    public var animation: DecodedImage.AnimatedFrames? { storage.animation }
    /// How many times an animation plays; 0 means forever.
    public var loopCount: Int { storage.loopCount }
    /// The format the bytes were in.
    public var format: ImageFormat { storage.format }
    /// The EXIF orientation the file declared. The pixels are already upright: this is
    /// for callers who want to know, not something left for them to do.
    public var orientation: ImageOrientation { storage.orientation }
    /// Whether the data ended early and only what arrived was decoded, the rest of the
    /// canvas filled (as browsers show a truncated file). A partial image is never
    /// stored as a processed variant.
    public var isPartial: Bool { storage.isPartial }
    /// The toolkit image this one was made from (a bundled `UIImage`, the image a view
    /// showed before its first load), which a view shows as it is, at its own scale,
    /// rather than wrapping these pixels again; nil for a decoded file. Anything made
    /// from this image (fitted, processed) has none: its pixels are its own.
    package var platformOrigin: (any AnyObject & Sendable)? {
        get { storage.platformOrigin }
        set { storage = storage.with(platformOrigin: newValue, notes: storage.notes) }
    }
    /// What the decoder set aside rather than fail for, in words: an embedded colour
    /// profile that was damaged, or did not fit the pixels, and was ignored (the image
    /// then shows as untagged, in sRGB). Empty for most images.
    public var notes: [String] {
        get { storage.notes }
        set { storage = storage.with(platformOrigin: storage.platformOrigin, notes: newValue) }
    }

    /// Makes a decoded image from frames already decoded. `frames` must not be
    /// empty; an animation holds all of them, so prefer a decoder's on-demand frames
    /// for anything long.
    public init(frames: [Frame], loopCount: Int = 0, format: ImageFormat, orientation: ImageOrientation = .up, isPartial: Bool = false) {
        precondition(!frames.isEmpty, "an image has at least one frame")
        self.init(
            firstFrame: frames[0],
            animation: frames.count > 1 ? DecodedImage.AnimatedFrames(frames: frames, loopCount: loopCount) : nil,
            loopCount: loopCount, format: format, orientation: orientation, isPartial: isPartial)
    }

    /// Makes an animation from its decoded first frame and its frames on demand (nil
    /// for a still image).
    package init(
        firstFrame: Frame, animation: DecodedImage.AnimatedFrames?, loopCount: Int, format: ImageFormat,
        orientation: ImageOrientation = .up, isPartial: Bool = false
    ) {
        storage = Storage(
            firstFrame: firstFrame, animation: animation.flatMap { $0.frameCount > 1 ? $0 : nil }, loopCount: loopCount,
            format: format, orientation: orientation, isPartial: isPartial, platformOrigin: nil, notes: [])
    }

    /// Makes a still image.
    public init(bitmap: Bitmap, format: ImageFormat, orientation: ImageOrientation = .up, isPartial: Bool = false) {
        self.init(frames: [Frame(bitmap: bitmap, duration: 0)], format: format, orientation: orientation, isPartial: isPartial)
    }

    /// Every frame at once, decoded now: costly (all canvases in memory together),
    /// for tests, encoders and callers who know the animation is short. Displaying
    /// and caching go through `animation` and `AnimationPlayer` instead. A frame that
    /// fails to decode ends the list at the last good frame, as it ends playback.
    public var frames: [Frame] {
        guard let animation else { return [firstFrame] }
        var frames = [firstFrame]
        let cursor = animation.makeIterator()
        // Frame 0 is decoded again: later frames are composited on it.
        guard (try? cursor.next()) != nil else { return frames }
        while let frame = try? cursor.next() { frames.append(frame) }
        return frames
    }

    /// How many frames there are: 1 for a still, the scan's count for an animation.
    public var frameCount: Int { animation?.frameCount ?? 1 }
    /// How long each frame stays on screen, in seconds, without decoding any.
    public var frameDurations: [Double] { animation?.durations ?? [firstFrame.duration] }
    /// The first frame: the whole image for a still, the poster frame for an animation.
    public var bitmap: Bitmap { firstFrame.bitmap }
    /// Width in pixels, upright.
    public var width: Int { bitmap.width }
    /// Height in pixels, upright.
    public var height: Int { bitmap.height }
    /// Whether there is more than one frame.
    public var isAnimated: Bool { animation != nil }
    /// Bytes of memory the image holds: the first frame, plus for an animation what
    /// its frame source keeps (the compressed data). What a memory cache charges.
    public var cost: Int { bitmap.cost + (animation?.retainedCost ?? 0) }
}

extension DecodedImage {
    /// Whether `other` is this very image: the same first-frame pixels in memory (a
    /// copy of the value, the same memory-cache entry), not merely equal ones. A view
    /// handed the image it shows already keeps it as it is, an animation playing on.
    package func sharesPixels(with other: DecodedImage) -> Bool {
        guard width == other.width, height == other.height else { return false }
        let mine = bitmap.pixels.withUnsafeBytes { $0.baseAddress }
        return mine != nil && mine == other.bitmap.pixels.withUnsafeBytes { $0.baseAddress }
    }
}
