/// A decoded image: one bitmap, or the frames of an animation, with what the file said
/// about them.
///
/// This is the platform-neutral result of every decoder. On Apple platforms
/// `platformImage` (in the Apple adapters) turns it into a `UIImage` or `NSImage`.
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

    /// At least one frame; more for an animation.
    public let frames: [Frame]
    /// How many times an animation plays; 0 means forever.
    public let loopCount: Int
    /// The format the bytes were in.
    public let format: ImageFormat
    /// The EXIF orientation the file declared. The pixels are already upright: this is
    /// for callers who want to know, not something left for them to do.
    public let orientation: ImageOrientation
    /// Whether the data ended early and only what arrived was decoded, the rest of the
    /// canvas filled (as browsers show a truncated file). A partial image is never
    /// stored as a processed variant.
    public let isPartial: Bool

    /// Makes a decoded image. `frames` must not be empty.
    public init(frames: [Frame], loopCount: Int = 0, format: ImageFormat, orientation: ImageOrientation = .up, isPartial: Bool = false) {
        precondition(!frames.isEmpty, "an image has at least one frame")
        self.frames = frames
        self.loopCount = loopCount
        self.format = format
        self.orientation = orientation
        self.isPartial = isPartial
    }

    /// Makes a still image.
    public init(bitmap: Bitmap, format: ImageFormat, orientation: ImageOrientation = .up, isPartial: Bool = false) {
        self.init(frames: [Frame(bitmap: bitmap, duration: 0)], format: format, orientation: orientation, isPartial: isPartial)
    }

    /// The first frame: the whole image for a still, the poster frame for an animation.
    public var bitmap: Bitmap { frames[0].bitmap }
    /// Width in pixels, upright.
    public var width: Int { bitmap.width }
    /// Height in pixels, upright.
    public var height: Int { bitmap.height }
    /// Whether there is more than one frame.
    public var isAnimated: Bool { frames.count > 1 }
    /// Bytes of memory all frames take together: what a memory cache charges.
    public var cost: Int { frames.reduce(0) { $0 + $1.bitmap.cost } }
}
