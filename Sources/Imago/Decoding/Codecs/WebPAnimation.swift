// Animated WebP: a scan through the demuxer, then frames composited by
// WebPAnimDecoder one at a time as they are played.

#if os(Linux)
import CLibWebP
import Foundation

extension WebPDecoder {
    /// The largest canvas, in pixels, whose thumbnails libwebp composites at full
    /// size (4 megapixels): it keeps two canvases of its own, 957 MB for an 11000²
    /// animation whatever the thumbnail. Larger canvases are composited at the
    /// thumbnail's scale by `ScaledWebPFrameCursor`, which differs from a full-size
    /// composite only along frame edges.
    static let largestCanvasComposited = 1 << 22

    /// Decodes the first frame of an animation the demuxer has accepted, and keeps
    /// the data to decode the rest on demand. Frame count, durations and loop count
    /// come from the demuxer's frame records, without decoding.
    ///
    /// With a target size each frame is scaled straight from libwebp's canvas, with
    /// no full-size copy; a single frame that covers the canvas (a still saved as an
    /// animation) is decoded as a still, which libwebp scales while decoding.
    func decodeAnimation(
        _ bytes: UnsafeBufferPointer<UInt8>, demux: OpaquePointer, config: inout WebPDecoderConfig,
        orientation: ImageOrientation, options: DecodingOptions
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
            let bitmap = try decodeStill(covering, config: &frameConfig, width: outWidth, height: outHeight)
            return DecodedImage(
                firstFrame: .init(bitmap: bitmap.applying(applied), duration: durations[0]), animation: nil,
                loopCount: loopCount, format: .webp, orientation: orientation)
        }

        let pinned = PinnedBytes(bytes)
        let open = { @Sendable () throws(ImagoError) -> any FrameProducing in
            if let storedTarget, width * height > Self.largestCanvasComposited {
                return try ScaledWebPFrameCursor(pinned, width: width, height: height, frameCount: frameCount, orientation: applied, target: storedTarget)
            }
            return try WebPFrameCursor(pinned, width: width, height: height, frameCount: frameCount, orientation: applied, target: storedTarget)
        }
        guard let first = try open().nextFrame() else { throw Self.failure("the animation has no frames") }
        let animation = AnimatedFrames(
            frameCount: frameCount, durations: durations, loopCount: loopCount,
            width: first.width, height: first.height, retainedCost: pinned.count, open: open)
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
    private var index = 0

    init(
        _ storage: PinnedBytes, width: Int, height: Int, frameCount: Int, orientation: ImageOrientation, target: TargetSize?
    ) throws(ImagoError) {
        self.storage = storage
        self.width = width
        self.height = height
        self.orientation = orientation
        self.target = target
        var animOptions = WebPAnimDecoderOptions()
        guard WebPAnimDecoderOptionsInit(&animOptions) != 0 else {
            throw WebPDecoder.failure("the libwebp library does not match the headers Imago was built with")
        }
        animOptions.color_mode = MODE_rgbA
        // Decoding runs on the caller's thread; Imago parallelises across images.
        animOptions.use_threads = 0
        // The decoder reads the bytes in place; `storage` keeps them alive.
        var data = WebPData(bytes: storage.base, size: storage.count)
        guard let decoder = WebPAnimDecoderNew(&data, &animOptions) else {
            throw WebPDecoder.failure("the animation is malformed")
        }
        self.decoder = decoder
        var info = WebPAnimInfo()
        guard WebPAnimDecoderGetInfo(decoder, &info) != 0,
              Int(info.canvas_width) == width, Int(info.canvas_height) == height,
              Int(info.frame_count) == frameCount else {
            throw WebPDecoder.failure("the animation is malformed")
        }
    }

    deinit { WebPAnimDecoderDelete(decoder) }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard WebPAnimDecoderHasMoreFrames(decoder) != 0 else { return nil }
        index += 1
        var canvas: UnsafeMutablePointer<UInt8>?
        var timestamp: Int32 = 0
        guard WebPAnimDecoderGetNext(decoder, &canvas, &timestamp) != 0, let canvas else {
            throw WebPDecoder.failure("corrupt bitstream in frame \(index)")
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

/// An animation's frames composited at the target's scale, for a canvas too large
/// to hold: each frame is decoded by libwebp straight to its scaled rectangle (its
/// rescaler keeps a few rows), then blended onto a canvas of the scaled size and
/// disposed as WebPAnimDecoder does. Memory follows the thumbnail, not the canvas.
final class ScaledWebPFrameCursor: FrameProducing {
    private struct Rectangle {
        var x: Int, y: Int, width: Int, height: Int
    }

    private let storage: PinnedBytes
    private let demux: OpaquePointer
    private let frameCount: Int
    private let scaleX: Double, scaleY: Double
    private let layout: TargetSize.Layout
    private let orientation: ImageOrientation
    /// The scaled canvas, premultiplied RGBA, transparent at first.
    private var canvas: [UInt8]
    /// The previous frame's rectangle when it is disposed to the background.
    private var disposed: Rectangle?
    private var index = 0

    init(
        _ storage: PinnedBytes, width: Int, height: Int, frameCount: Int, orientation: ImageOrientation, target: TargetSize
    ) throws(ImagoError) {
        self.storage = storage
        self.frameCount = frameCount
        self.orientation = orientation
        layout = target.layout(sourceWidth: width, sourceHeight: height)
        scaleX = Double(layout.scaledWidth) / Double(width)
        scaleY = Double(layout.scaledHeight) / Double(height)
        canvas = [UInt8](repeating: 0, count: layout.scaledWidth * layout.scaledHeight * 4)
        var data = WebPData(bytes: storage.base, size: storage.count)
        guard let demux = WebPDemux(&data) else { throw WebPDecoder.failure("the animation is malformed") }
        self.demux = demux
    }

    deinit { WebPDemuxDelete(demux) }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < frameCount else { return nil }
        index += 1
        var iterator = WebPIterator()
        guard WebPDemuxGetFrame(demux, Int32(index), &iterator) != 0, let start = iterator.fragment.bytes else {
            throw WebPDecoder.failure("the animation is malformed")
        }
        defer { WebPDemuxReleaseIterator(&iterator) }
        if let disposed { fill(disposed) { pixel, _ in pixel.update(repeating: 0, count: 4) } }
        // Edges scaled and rounded, so that frames which meet on the canvas meet
        // here too; every frame keeps at least a pixel.
        let x = min(Int((Double(iterator.x_offset) * scaleX).rounded()), layout.scaledWidth - 1)
        let y = min(Int((Double(iterator.y_offset) * scaleY).rounded()), layout.scaledHeight - 1)
        let right = min(Int((Double(Int(iterator.x_offset) + Int(iterator.width)) * scaleX).rounded()), layout.scaledWidth)
        let bottom = min(Int((Double(Int(iterator.y_offset) + Int(iterator.height)) * scaleY).rounded()), layout.scaledHeight)
        let rectangle = Rectangle(x: x, y: y, width: max(1, right - x), height: max(1, bottom - y))

        let fragment = UnsafeBufferPointer(start: start, count: iterator.fragment.size)
        var config = WebPDecoderConfig()
        guard WebPInitDecoderConfig(&config) != 0 else {
            throw WebPDecoder.failure("the libwebp library does not match the headers Imago was built with")
        }
        try WebPDecoder.check(WebPGetFeatures(fragment.baseAddress, fragment.count, &config.input))
        if (rectangle.width, rectangle.height) != (Int(iterator.width), Int(iterator.height)) {
            config.options.use_scaling = 1
            config.options.scaled_width = Int32(rectangle.width)
            config.options.scaled_height = Int32(rectangle.height)
        }
        let frame: Bitmap
        do throws(ImagoError) {
            frame = try WebPDecoder().decodeStill(fragment, config: &config, width: rectangle.width, height: rectangle.height)
        } catch {
            throw WebPDecoder.failure("corrupt bitstream in frame \(index)")
        }
        let blends = iterator.blend_method == WEBP_MUX_BLEND && iterator.has_alpha != 0
        frame.pixels.withUnsafeBufferPointer { source in
            fill(rectangle) { destination, offset in
                let s = source.baseAddress! + offset
                guard blends else {
                    for c in 0..<4 { destination[c] = s[c] }
                    return
                }
                // Source over destination, premultiplied.
                let keep = UInt32(255 - s[3])
                for c in 0..<4 { destination[c] = s[c] &+ UInt8((UInt32(destination[c]) * keep + 127) / 255) }
            }
        }
        disposed = iterator.dispose_method == WEBP_MUX_DISPOSE_BACKGROUND ? rectangle : nil

        // A fill shows the middle of the scaled canvas, as `Bitmap.fitted` crops it.
        let cropX = (layout.scaledWidth - layout.outputWidth) / 2, cropY = (layout.scaledHeight - layout.outputHeight) / 2
        let (outputWidth, scaledWidth) = (layout.outputWidth, layout.scaledWidth)
        let bitmap = try Bitmap.make(width: outputWidth, height: layout.outputHeight) { out in
            canvas.withUnsafeBytes { canvas in
                for row in 0..<out.count / (outputWidth * 4) {
                    (out.baseAddress! + row * outputWidth * 4).copyMemory(
                        from: canvas.baseAddress! + ((cropY + row) * scaledWidth + cropX) * 4, byteCount: outputWidth * 4)
                }
            }
        }
        return bitmap.applying(orientation)
    }

    /// Calls `pixel` for each pixel of `rectangle` on the canvas, with the pixel and
    /// its offset in a bitmap of the rectangle's size.
    private func fill(_ rectangle: Rectangle, _ pixel: (UnsafeMutablePointer<UInt8>, Int) -> Void) {
        canvas.withUnsafeMutableBufferPointer { canvas in
            for row in 0..<rectangle.height {
                let line = canvas.baseAddress! + ((rectangle.y + row) * layout.scaledWidth + rectangle.x) * 4
                for column in 0..<rectangle.width {
                    pixel(line + column * 4, (row * rectangle.width + column) * 4)
                }
            }
        }
    }
}
#endif
