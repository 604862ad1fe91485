// Animated WebP: a scan through the demuxer, then frames composited by
// WebPAnimDecoder one at a time as they are played.

#if os(Linux)
import CLibWebP
import Foundation

extension ImageDecoders.WebP {
    /// Decodes the first frame of an animation the demuxer has accepted, and keeps
    /// the data to decode the rest on demand. Frame count, durations and loop count
    /// come from the demuxer's frame records, without decoding.
    ///
    /// With a target size each frame is scaled straight from libwebp's canvas, with
    /// no full-size copy; a single frame that covers the canvas (a still saved as an
    /// animation) is decoded as a still, which libwebp scales while decoding.
    ///
    /// With a `straight` plan that converts, every frame's colours are converted
    /// with straight alpha before they are premultiplied
    /// (`ColourManagement.Plan.convertAndPremultiply`), so the caller converts nothing more.
    func decodeAnimation(
        _ bytes: UnsafeBufferPointer<UInt8>, demux: OpaquePointer, config: inout WebPDecoderConfig,
        orientation: ImageOrientation, options: DecodingOptions, deadline: DecodeDeadline, straight: ColourManagement.Plan
    ) throws(ImagoError) -> DecodedImage {
        let width = Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_WIDTH))
        let height = Int(WebPDemuxGetI(demux, WEBP_FF_CANVAS_HEIGHT))
        let frameCount = Int(WebPDemuxGetI(demux, WEBP_FF_FRAME_COUNT))
        let loopCount = Int(WebPDemuxGetI(demux, WEBP_FF_LOOP_COUNT))
        guard width > 0, height > 0 else { throw Self.failure("the header gives an empty image") }
        try options.checkSize(width: width, height: height, frames: frameCount)
        guard frameCount > 0 else { throw Self.failure("the animation has no frames") }
        let applied = options.appliesOrientation ? orientation : .up

        var durations: [Double] = []
        durations.reserveCapacity(frameCount)
        var covering: UnsafeBufferPointer<UInt8>?
        var iterator = WebPIterator()
        for number in 1...frameCount {
            guard WebPDemuxGetFrame(demux, Int32(number), &iterator) != 0 else {
                throw Self.failure("the animation is malformed")
            }
            durations.append(Self.frameDuration(milliseconds: Int(iterator.duration)))
            if frameCount == 1, iterator.x_offset == 0, iterator.y_offset == 0,
               Int(iterator.width) == width, Int(iterator.height) == height, let start = iterator.fragment.bytes {
                covering = UnsafeBufferPointer(start: start, count: iterator.fragment.size)
            }
            WebPDemuxReleaseIterator(&iterator)
        }

        // The fitted size in the stored orientation: frames are scaled, then turned.
        let storedTarget = options.targetSize.map { target in
            applied.swapsDimensions
                ? TargetSize(width: target.height, height: target.width, contentMode: target.contentMode, allowsUpscaling: target.allowsUpscaling)
                : target
        }

        if let covering {
            // Blending one frame over a transparent canvas leaves the frame as it is.
            var frameConfig = WebPDecoderConfig()
            guard WebPInitDecoderConfig(&frameConfig) != 0 else {
                throw Self.failure("the libwebp library does not match the headers Imago was built with")
            }
            try Self.check(WebPGetFeatures(covering.baseAddress, covering.count, &frameConfig.input))
            var (outWidth, outHeight) = (width, height)
            if let storedTarget {
                let layout = storedTarget.layout(sourceWidth: width, sourceHeight: height)
                (outWidth, outHeight) = (layout.scaledWidth, layout.scaledHeight)
                if (outWidth, outHeight) != (width, height) {
                    frameConfig.options.use_scaling = 1
                    frameConfig.options.scaled_width = Int32(outWidth)
                    frameConfig.options.scaled_height = Int32(outHeight)
                }
            }
            try options.checkMemory(outWidth * outHeight * 4 * (applied == .up ? 1 : 2), format: .webp)
            let bitmap = try decodeStill(
                covering, config: &frameConfig, width: outWidth, height: outHeight, deadline: deadline, straight: straight)
            try deadline.check(.webp)
            return DecodedImage(
                firstFrame: .init(bitmap: bitmap.applying(applied), duration: durations[0]), animation: nil,
                loopCount: loopCount, format: .webp, orientation: orientation)
        }

        let scalesCanvas = storedTarget != nil && width * height > ScaledCanvas.largestFullCanvas
        if !scalesCanvas {
            // WebPAnimDecoder keeps two canvases (the frame being made and the one
            // before its disposal); each frame is copied out, or scaled from the canvas,
            // and the first frame stays with the image while the others are made. An
            // 11000² animation at full size took 1.4 GB.
            let canvas = width * height * 4
            let output = storedTarget.map { $0.layout(sourceWidth: width, sourceHeight: height) }
                .map { $0.outputWidth * $0.outputHeight * 4 } ?? canvas * (applied == .up ? 1 : 2)
            try options.checkMemory(canvas * 2 + output * 2, format: .webp)
        }
        let pinned = PinnedBytes(bytes)
        // Frames played after the decode has returned have no deadline: no load waits.
        let open = { @Sendable (deadline: DecodeDeadline) throws(ImagoError) -> any FrameProducing in
            if scalesCanvas, let storedTarget {
                return try ScaledWebPFrameCursor(
                    pinned, width: width, height: height, frameCount: frameCount, orientation: applied, target: storedTarget,
                    straight: straight, deadline: deadline)
            }
            return try WebPFrameCursor(
                pinned, width: width, height: height, frameCount: frameCount, orientation: applied, target: storedTarget,
                straight: straight, deadline: deadline)
        }
        guard let first = try open(deadline).nextFrame() else { throw Self.failure("the animation has no frames") }
        let animation = DecodedImage.AnimatedFrames(
            frameCount: frameCount, durations: durations, loopCount: loopCount,
            width: first.width, height: first.height, retainedCost: pinned.count, open: { () throws(ImagoError) in try open(.none) })
        return DecodedImage(
            firstFrame: .init(bitmap: first, duration: durations[0]), animation: animation,
            loopCount: loopCount, format: .webp, orientation: orientation)
    }
}

/// WebPAnimDecoder over an animation's data: its canvases in order, each copied (or
/// scaled straight from libwebp's canvas to the target) and turned upright.
final class WebPFrameCursor: FrameProducing {
    private let storage: PinnedBytes
    private let decoder: OpaquePointer
    private let width: Int
    private let height: Int
    private let orientation: ImageOrientation
    private let target: TargetSize?
    /// Converts each canvas's colours, straight, before they are premultiplied; when
    /// it does, libwebp composites with straight alpha.
    private let straight: ColourManagement.Plan
    private var index = 0
    /// Checked before and after each frame: WebPAnimDecoder decodes a frame in one call.
    private let deadline: DecodeDeadline

    init(
        _ storage: PinnedBytes, width: Int, height: Int, frameCount: Int, orientation: ImageOrientation, target: TargetSize?,
        straight: ColourManagement.Plan = .none, deadline: DecodeDeadline = .none
    ) throws(ImagoError) {
        self.storage = storage
        self.deadline = deadline
        self.straight = straight
        self.width = width
        self.height = height
        self.orientation = orientation
        self.target = target
        var animOptions = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&animOptions) != 0 else {
            throw ImageDecoders.WebP.failure("the libwebp library does not match the headers Imago was built with")
        }
        animOptions.color_mode = straight.converts ? MODE_RGBA : MODE_rgbA
        // Decoding runs on the caller's thread; Imago parallelises across images.
        animOptions.use_threads = 0
        // The decoder reads the bytes in place; `storage` keeps them alive.
        var data = WebPData(bytes: storage.base, size: storage.count)
        guard let decoder = WebPAnimDecoderNew(&data, &animOptions) else {
            throw ImageDecoders.WebP.failure("the animation is malformed")
        }
        self.decoder = decoder
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0,
              Int(info.canvas_width) == width, Int(info.canvas_height) == height,
              Int(info.frame_count) == frameCount else {
            throw ImageDecoders.WebP.failure("the animation is malformed")
        }
    }

    deinit { WebPAnimDecoderDelete(decoder) }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
        try deadline.check(.webp)
        index += 1
        var canvas: UnsafeMutablePointer<UInt8>?
        var timestamp: Int32 = 0
        guard WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0, let canvas else {
            throw ImageDecoders.WebP.failure("corrupt bitstream in frame \(index)")
        }
        try deadline.check(.webp)
        if straight.converts {
            // The canvas handed out is libwebp's scratch: the next frame starts from
            // its own copy of it (the previous frame, disposed), so it may be changed.
            let pixels = UnsafeMutableRawBufferPointer(start: canvas, count: width * height * 4)
            straight.convertAndPremultiply(pixels, count: width * height)
        }
        // libwebp reuses its canvas for the next frame, so each frame needs its own
        // pixels: a copy, or the scaled frame read straight from the canvas.
        let pixels = Resampler.Pixels(base: canvas, width: width, height: height, bytesPerRow: width * 4)
        if let target { return Resampler.fitted(pixels, to: target).applying(orientation) }
        let bitmap = try Bitmap.make(width: width, height: height) { out in
            out.copyMemory(from: UnsafeRawBufferPointer(start: canvas, count: out.count))
        }
        return bitmap.applying(orientation)
    }
}

/// An animation's frames composited on a `ScaledCanvas`, for a canvas too large to
/// hold: each frame is decoded by libwebp straight to its scaled rectangle (its
/// rescaler keeps a few rows), then blended and disposed as WebPAnimDecoder does.
final class ScaledWebPFrameCursor: FrameProducing {
    private let storage: PinnedBytes
    private let demux: OpaquePointer
    private let frameCount: Int
    private let orientation: ImageOrientation
    private let canvas: ScaledCanvas
    /// The previous frame's rectangle when it is disposed to the background.
    private var disposed: ScaledCanvas.Rectangle?
    private var index = 0
    /// Stops each frame's decode (libwebp's incremental decoder, a slice at a time).
    private let deadline: DecodeDeadline
    /// Converts each frame's colours, straight, before they are premultiplied.
    private let straight: ColourManagement.Plan

    init(
        _ storage: PinnedBytes, width: Int, height: Int, frameCount: Int, orientation: ImageOrientation, target: TargetSize,
        straight: ColourManagement.Plan = .none, deadline: DecodeDeadline = .none
    ) throws(ImagoError) {
        self.storage = storage
        self.deadline = deadline
        self.straight = straight
        self.frameCount = frameCount
        self.orientation = orientation
        canvas = ScaledCanvas(width: width, height: height, target: target)
        var data = WebPData(bytes: storage.base, size: storage.count)
        guard let demux = WebPDemux(&data) else { throw ImageDecoders.WebP.failure("the animation is malformed") }
        self.demux = demux
    }

    deinit { WebPDemuxDelete(demux) }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < frameCount else { return nil }
        index += 1
        var iterator = WebPIterator()
        guard WebPDemuxGetFrame(demux, Int32(index), &iterator) != 0, let start = iterator.fragment.bytes else {
            throw ImageDecoders.WebP.failure("the animation is malformed")
        }
        defer { WebPDemuxReleaseIterator(&iterator) }
        if let disposed { canvas.clear(disposed) }
        let rectangle = canvas.rectangle(
            x: Int(iterator.x_offset), y: Int(iterator.y_offset), width: Int(iterator.width), height: Int(iterator.height))

        let fragment = UnsafeBufferPointer(start: start, count: iterator.fragment.size)
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else {
            throw ImageDecoders.WebP.failure("the libwebp library does not match the headers Imago was built with")
        }
        try ImageDecoders.WebP.check(WebPGetFeatures(fragment.baseAddress, fragment.count, &config.input))
        if (rectangle.width, rectangle.height) != (Int(iterator.width), Int(iterator.height)) {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(rectangle.width)
            config.options.scaled_height = Int32(rectangle.height)
        }
        let frame: Bitmap
        do throws(ImagoError) {
            frame = try ImageDecoders.WebP().decodeStill(
                fragment, config: &config, width: rectangle.width, height: rectangle.height, deadline: deadline, straight: straight)
        } catch {
            if case .decodingTimedOut = error { throw error }
            throw ImageDecoders.WebP.failure("corrupt bitstream in frame \(index)")
        }
        canvas.draw(frame, in: rectangle, blending: iterator.blend_method == WEBP_MUX_BLEND && iterator.has_alpha != 0)
        disposed = iterator.dispose_method == WEBP_MUX_DISPOSE_BACKGROUND ? rectangle : nil
        return canvas.output().applying(orientation)
    }
}
#endif
