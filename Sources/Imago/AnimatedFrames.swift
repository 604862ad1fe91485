import Foundation

extension DecodedImage {
    /// The frames of an animation, decoded when asked for rather than held: the compressed
    /// data, what a cheap scan of it said (frame count, durations, loop count, frame size),
    /// and a way to decode its frames in order.
    ///
    /// Compositing formats (GIF, APNG, animated WebP, AVIF sequences) build each frame on
    /// the one before, so the primitive is a cursor from frame 0 (`makeIterator()`);
    /// playing a loop again starts a new one. `AnimationPlayer` keeps a few frames ahead
    /// of the display, so memory follows what is shown, not the frame count.
    ///
    /// Transforms (fitting to a size, processors) are carried along and applied to each
    /// frame as it is produced.
    public final class AnimatedFrames: Sendable {
        /// How many frames the scan found; a frame that then fails to decode ends the
        /// animation early (`Iterator.next()` throws).
        package let frameCount: Int
        /// How long each frame stays on screen, in seconds; `frameCount` entries.
        package let durations: [Double]
        /// How many times the animation plays; 0 means forever.
        package let loopCount: Int
        /// The size of every frame produced, transforms applied.
        package let width: Int
        /// The height of every frame produced, transforms applied.
        package let height: Int
        /// Bytes this object keeps alive: the compressed data (or, for frames given
        /// decoded, their pixels). What a memory cache charges beyond the first frame.
        let retainedCost: Int

        private let open: @Sendable () throws(ImagoError) -> any FrameProducing
        private let transform: (@Sendable (Bitmap) -> Bitmap)?

        /// Frames from a codec: `open` makes a producer of composited canvases from frame 0.
        init(
            frameCount: Int, durations: [Double], loopCount: Int, width: Int, height: Int, retainedCost: Int,
            open: @escaping @Sendable () throws(ImagoError) -> any FrameProducing
        ) {
            precondition(durations.count == frameCount, "one duration per frame")
            self.frameCount = frameCount
            self.durations = durations
            self.loopCount = loopCount
            self.width = width
            self.height = height
            self.retainedCost = retainedCost
            self.open = open
            self.transform = nil
        }

        private init(base: DecodedImage.AnimatedFrames, width: Int, height: Int, transform: @escaping @Sendable (Bitmap) -> Bitmap) {
            frameCount = base.frameCount
            durations = base.durations
            loopCount = base.loopCount
            self.width = width
            self.height = height
            retainedCost = base.retainedCost
            open = base.open
            if let previous = base.transform {
                self.transform = { transform(previous($0)) }
            } else {
                self.transform = transform
            }
        }

        /// Frames already decoded, held as they are: for decoders that produce every
        /// frame at once (ImageIO) and for callers building animations themselves.
        public convenience init(frames: [DecodedImage.Frame], loopCount: Int) {
            precondition(!frames.isEmpty, "an animation has at least one frame")
            let bitmaps = frames.map(\.bitmap)
            self.init(
                frameCount: frames.count, durations: frames.map(\.duration), loopCount: loopCount,
                width: frames[0].bitmap.width, height: frames[0].bitmap.height,
                retainedCost: bitmaps.dropFirst().reduce(0) { $0 + $1.cost },
                open: { ArrayFrameProducer(bitmaps) })
        }

        /// The same animation with `transform` applied to each frame as it is produced;
        /// `width` × `height` is the size it gives.
        func mapped(width: Int, height: Int, _ transform: @escaping @Sendable (Bitmap) -> Bitmap) -> DecodedImage.AnimatedFrames {
            DecodedImage.AnimatedFrames(base: self, width: width, height: height, transform: transform)
        }

        /// A cursor over the frames from the first, decoding each when asked for it.
        public func makeIterator() -> Iterator {
            Iterator(self)
        }

        /// Bytes one frame takes.
        var frameCost: Int { width * height * 4 }

        /// The total time of one play, in seconds.
        package var totalDuration: Double { durations.reduce(0, +) }

        fileprivate func openProducer() throws(ImagoError) -> any FrameProducing { try open() }
        fileprivate func apply(_ bitmap: Bitmap) -> Bitmap { transform.map { $0(bitmap) } ?? bitmap }
    }
}

extension DecodedImage.AnimatedFrames {
    /// Decodes an animation's frames in order, from the first. Not `Sendable`: one
    /// thread at a time uses a cursor (the codecs' state is not shareable).
    public final class Iterator {
        private let animation: DecodedImage.AnimatedFrames
        private var producer: (any FrameProducing)?
        private var index = 0
        private var ended = false

        fileprivate init(_ animation: DecodedImage.AnimatedFrames) {
            self.animation = animation
        }

        /// The index of the frame `next()` produces.
        package var nextIndex: Int { index }

        /// The next frame, or nil after the last one (or after the data ended early).
        /// Throws when a frame cannot be decoded; the frames before it stand, and the
        /// cursor then reports the end.
        public func next() throws(ImagoError) -> DecodedImage.Frame? {
            guard !ended, index < animation.frameCount else { return nil }
            do throws(ImagoError) {
                if producer == nil { producer = try animation.openProducer() }
                guard let bitmap = try producer?.nextFrame() else {
                    ended = true
                    producer = nil
                    return nil
                }
                let frame = DecodedImage.Frame(bitmap: animation.apply(bitmap), duration: animation.durations[index])
                index += 1
                if index == animation.frameCount { producer = nil }
                return frame
            } catch {
                ended = true
                producer = nil
                throw error
            }
        }
    }
}

/// A codec's cursor: composited canvases in order, from frame 0; nil at the end.
protocol FrameProducing: AnyObject {
    func nextFrame() throws(ImagoError) -> Bitmap?
}

/// Frames already decoded, handed out in order.
private final class ArrayFrameProducer: FrameProducing {
    private let bitmaps: [Bitmap]
    private var index = 0

    init(_ bitmaps: [Bitmap]) { self.bitmaps = bitmaps }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < bitmaps.count else { return nil }
        defer { index += 1 }
        return bitmaps[index]
    }
}

/// Compressed data copied once into memory that does not move, so C decoders that
/// read it across many calls (giflib's callback, libwebp's demuxer) can keep a
/// pointer; shared by every cursor over one animation.
final class PinnedBytes: Sendable {
    nonisolated(unsafe) let base: UnsafeMutablePointer<UInt8>
    let count: Int

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        count = bytes.count
        base = .allocate(capacity: max(bytes.count, 1))
        if let source = bytes.baseAddress { base.update(from: source, count: bytes.count) }
    }

    deinit { base.deallocate() }

    var buffer: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }
}
