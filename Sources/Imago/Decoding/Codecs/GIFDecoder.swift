#if os(Linux)
import CGIFLib
import Foundation

extension ImageDecoders {
    /// GIF through giflib: GIF87a and GIF89a, stills and animations, interlaced frames,
    /// local and global colour tables, and transparency.
    ///
    /// Every frame comes out as a full canvas of the logical screen size (grown to hold
    /// the first frame when that is larger, or the screen is 0×0, as browsers and
    /// Pillow grow it), composited the way browsers show it: the canvas starts
    /// transparent, frames are drawn over it, and each frame's disposal method is
    /// applied before the next one is drawn. Areas that are disposed "to background"
    /// become transparent rather than the background colour, as in Chrome, Firefox and
    /// Safari. Frame timing and loop counts follow browsers too;
    /// see `frameDuration(centiseconds:)` and `loopCount(repetitions:)`.
    ///
    /// As in browsers, a stray byte where the next record should start ends the file
    /// (the frames before it are shown), and LZW minimum code sizes of 9 to 12 bits, which
    /// giflib refuses, are decoded. A file that ends early shows, as in browsers, the
    /// frames that arrived, the last one's missing rows left as the canvas was
    /// (transparent on the first frame), and says so with `DecodedImage.isPartial`;
    /// one that ends before any frame's data is an error.
    ///
    /// Only the first frame is decoded up front. A scan of the records (LZW data skipped,
    /// not decoded) gives the frame count, durations and loop count; the other frames
    /// are decoded in order as they are played (`DecodedImage.AnimatedFrames`). A thumbnail of a
    /// logical screen over `ScaledCanvas.largestFullCanvas` is composited at its own
    /// scale, each frame's rows resampled as they are decoded, unless a frame is
    /// interlaced (its rows out of order).
    @_spi(Internals) public struct GIF: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as GIF, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .gif
        }

        /// Decodes the image. Throws `imageTooLarge` from the header, before any pixel
        /// buffer exists, and `decodingFailed` for truncated or corrupt data, with
        /// giflib's message as the codec's word where giflib refused it.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            guard !bytes.isEmpty else { throw Self.failure("no data") }
            // giflib checks only "GIF"; the full signature gives a clearer error for data
            // that was never a GIF, and matches what `canDecode` was asked about.
            guard ImageFormat.detect(bytes) == .gif else { throw Self.failure("the data is not a GIF") }

            let scan = GIFScan(bytes)
            if scan.frameCount > options.maximumFrameCount {
                throw .tooManyFrames(count: scan.frameCount, limit: options.maximumFrameCount)
            }
            let cursor = try GIFFrameCursor(bytes, options: options, scan: scan, deadline: options.deadline())
            guard let first = try cursor.nextFrame() else { throw Self.failure("the file has no frames") }
            let loopCount = Self.loopCount(repetitions: scan.repetitions)
            let firstFrame = DecodedImage.Frame(bitmap: first, duration: scan.durations.first ?? 0.1)
            let partial = scan.truncated || cursor.isPartial
            guard scan.frameCount > 1, !cursor.isFinished else {
                return DecodedImage(firstFrame: firstFrame, animation: nil, loopCount: loopCount, format: .gif, isPartial: partial)
            }
            let pinned = PinnedBytes(bytes)
            let animation = DecodedImage.AnimatedFrames(
                frameCount: scan.frameCount, durations: scan.durations, loopCount: loopCount,
                width: first.width, height: first.height, retainedCost: pinned.count,
                open: { () throws(ImagoError) in
                    try GIFFrameCursor(pinned.buffer, options: options, scan: scan, keeping: pinned)
                })
            return DecodedImage(firstFrame: firstFrame, animation: animation, loopCount: loopCount, format: .gif, isPartial: partial)
        }

        /// A frame's display time in seconds, from the Graphics Control Extension's delay.
        ///
        /// Many GIFs say 0 or 1 hundredths of a second and mean "as fast as is sensible";
        /// Chrome, Firefox and Safari show such frames for 100 ms, and so does Imago, so
        /// animations play at the speed their authors saw.
        static func frameDuration(centiseconds: Int) -> Double {
            centiseconds <= 1 ? 0.1 : Double(centiseconds) / 100
        }

        /// The number of plays for the NETSCAPE2.0 extension's loop field.
        ///
        /// The field counts repetitions after the first play, 0 meaning forever: browsers
        /// play a file that says 2 three times. `DecodedImage.loopCount` counts plays, so
        /// 0 stays 0 and anything else gains one. A file without the extension plays once.
        static func loopCount(repetitions: Int?) -> Int {
            guard let repetitions else { return 1 }
            return repetitions == 0 ? 0 : repetitions + 1
        }

        /// How many rows, in the order the file stores them, must be decoded before every
        /// row within the first `visibleRows` of the frame has been seen.
        static func rowsNeeded(height: Int, interlaced: Bool, visibleRows: Int) -> Int {
            guard visibleRows > 0 else { return 0 }
            guard interlaced, visibleRows < height else { return visibleRows }
            var index = height - 1
            while interlacedRow(index, height: height) >= visibleRows { index -= 1 }
            return index + 1
        }

        /// The frame row that the `index`th row of an interlaced frame's data belongs to.
        ///
        /// giflib returns rows in the order they are stored: every 8th row from 0, every
        /// 8th from 4, every 4th from 2, then every 2nd from 1.
        static func interlacedRow(_ index: Int, height: Int) -> Int {
            let pass1 = (height + 7) / 8, pass2 = (height + 3) / 8, pass3 = (height + 1) / 4
            if index < pass1 { return index * 8 }
            if index < pass1 + pass2 { return (index - pass1) * 8 + 4 }
            if index < pass1 + pass2 + pass3 { return (index - pass1 - pass2) * 4 + 2 }
            return (index - pass1 - pass2 - pass3) * 2 + 1
        }

        /// A failure Imago found itself, without giflib's word.
        static func failure(_ reason: String) -> ImagoError {
            .decodingFailed(format: .gif, reason: reason, codec: nil)
        }

        /// The error for a failed giflib call, whose code giflib left in `code`: giflib's
        /// message for the code, with Imago's reading of it where the message alone
        /// would mislead.
        static func failure(code: Int32, source: GIFByteSource) -> ImagoError {
            let message = GifErrorString(code).map { String(cString: $0) } ?? "error \(code)"
            let reason = if source.ranOut {
                "the data ends before the image does"
            } else if code == D_GIF_ERR_READ_FAILED {
                // The callback never fails otherwise, so this is giflib's stand-in code
                // for an LZW code size over 8 bits ("failed to read" would mislead).
                "the LZW code size is over 8 bits"
            } else {
                message
            }
            return .decodingFailed(format: .gif, reason: reason, codec: .init(library: "giflib", message: message))
        }
    }
}

/// The data giflib reads, and how far it has read.
struct GIFByteSource {
    let base: UnsafePointer<UInt8>
    let count: Int
    var offset = 0
    /// Whether giflib asked for more bytes than were left.
    var ranOut = false

    init(base: UnsafePointer<UInt8>, count: Int) {
        self.base = base
        self.count = count
    }

    var remaining: Int { count - offset }
}

/// What a Graphics Control Extension says about the image that follows it.
private struct GraphicsControl {
    var disposal = Disposal.keep
    var centiseconds = 0
    var transparentIndex: Int?
}

/// What happens to a frame's rectangle before the next frame is drawn.
private enum Disposal {
    /// Methods 0 and 1, and the undefined 5 to 7, which browsers treat alike.
    case keep
    /// Method 2: browsers clear to transparent, not to the background colour, and a
    /// transparent canvas is what the first frame is drawn over anyway.
    case clear
    /// Method 3: back to the canvas as it was before the frame. Some early documents
    /// gave this as 4 (the third bit of the field) and encoders followed them;
    /// Chrome and Firefox read 4 as 3, so Imago does too.
    case restore

    init(method: Int) {
        switch method {
        case 2: self = .clear
        case 3, 4: self = .restore
        default: self = .keep
        }
    }
}

/// A frame's rectangle clipped to the canvas; empty when nothing of it is visible.
struct Rect {
    var x = 0, y = 0, width = 0, height = 0
    var isEmpty: Bool { width == 0 || height == 0 }
}

/// One pass over an open GIF, record by record, a frame at a time.
struct GIFReader {
    let file: UnsafeMutablePointer<GifFileType>
    let source: UnsafeMutablePointer<GIFByteSource>
    let options: DecodingOptions
    /// When the decode must stop: checked per frame and every few hundred thousand
    /// pixels, so a huge frame cannot hold the thread past its load's deadline.
    let deadline: DecodeDeadline
    /// The scan found that the data ends early: the frame it ends in decodes the rows
    /// that are there rather than being refused for claiming more than it holds.
    let truncated: Bool

    /// How many frames have been produced.
    var frameIndex = 0
    /// Whether the file has no more frames (the trailer, a stray byte, or the end of
    /// the data was reached).
    private(set) var isFinished = false
    /// Whether the data ended inside a frame or between frames.
    private(set) var isPartial = false
    private var started = false
    /// The NETSCAPE2.0 loop field; nil until one is seen.
    var repetitions: Int?
    /// The Graphics Control Extension waiting for the next image; it applies to that
    /// image only.
    fileprivate var control = GraphicsControl()
    /// Made at the first image, so a file without one allocates nothing.
    var canvas: Canvas?
    /// The canvas at the thumbnail's scale, instead of `canvas`, for a thumbnail of a
    /// screen over `ScaledCanvas.largestFullCanvas` or the memory budget.
    var scaledCanvas: ScaledCanvas?
    /// The disposal the last frame asked for, and the area it covers.
    fileprivate var pendingDisposal: (Disposal, Rect) = (.keep, Rect())
    /// A 256-entry palette and one row of indices, reused from frame to frame.
    var palette = [UInt32](repeating: 0, count: 256)
    var row: [UInt8] = []

    init(
        file: UnsafeMutablePointer<GifFileType>, source: UnsafeMutablePointer<GIFByteSource>, options: DecodingOptions, scan: GIFScan,
        deadline: DecodeDeadline
    ) {
        self.file = file
        self.source = source
        self.options = options
        self.deadline = deadline
        truncated = scan.truncated
        screenWidth = Int(file.pointee.SWidth)
        screenHeight = Int(file.pointee.SHeight)
    }

    /// The canvas: the logical screen, grown to hold the first frame (see
    /// `coverFirstFrame`).
    private(set) var screenWidth: Int
    private(set) var screenHeight: Int

    func failure() -> ImagoError {
        ImageDecoders.GIF.failure(code: file.pointee.Error, source: source.pointee)
    }

    /// Ends the file after the frames produced so far when the data ran out (as
    /// browsers show what arrived); rethrows anything else, and a failure before the
    /// first frame.
    private mutating func endIfTruncated(_ error: ImagoError) throws(ImagoError) {
        if case .decodingTimedOut = error { throw error }
        guard source.pointee.ranOut, frameIndex > 0 else { throw error }
        isFinished = true
        isPartial = true
    }

    /// The next frame's canvas, or nil after the last.
    mutating func nextFrame() throws(ImagoError) -> Bitmap? {
        guard !isFinished else { return nil }
        try deadline.check(.gif)
        if !started {
            // The screen alone is refused early when too large; an empty one may still
            // be grown by the first frame.
            try options.checkSize(width: max(screenWidth, 1), height: max(screenHeight, 1))
            started = true
        }

        // Every iteration consumes at least one byte (giflib reads the record type),
        // and so does every inner loop, so the loop ends within the data's length.
        while true {
            var type = UNDEFINED_RECORD_TYPE
            guard DGifGetRecordType(file, &type) == GIF_OK else {
                // Chrome and Firefox treat a byte that starts no known record as the
                // end of the file, so the frames before it still show.
                if file.pointee.Error == D_GIF_ERR_WRONG_RECORD && !source.pointee.ranOut && frameIndex > 0 {
                    isFinished = true
                    return nil
                }
                try endIfTruncated(failure())
                return nil
            }
            switch type {
            case IMAGE_DESC_RECORD_TYPE:
                do throws(ImagoError) {
                    return try readImage()
                } catch {
                    try endIfTruncated(error)
                    return nil
                }
            case EXTENSION_RECORD_TYPE:
                do throws(ImagoError) {
                    try readExtension()
                } catch {
                    try endIfTruncated(error)
                    return nil
                }
            case TERMINATE_RECORD_TYPE:
                isFinished = true
                return nil
            default:
                throw failure()
            }
        }
    }

    mutating func readExtension() throws(ImagoError) {
        var function: Int32 = 0
        var block: UnsafeMutablePointer<GifByteType>?
        guard DGifGetExtension(file, &function, &block) == GIF_OK else { throw failure() }
        var index = 0
        var isLoopApplication = false
        // giflib hands out one sub-block at a time, length byte first, until NULL.
        while let current = block {
            let bytes = UnsafeBufferPointer(start: current + 1, count: Int(current[0]))
            switch function {
            case GRAPHICS_EXT_FUNC_CODE where index == 0 && bytes.count >= 4:
                control.disposal = Disposal(method: Int(bytes[0] >> 2) & 7)
                control.centiseconds = Int(bytes[1]) | Int(bytes[2]) << 8
                control.transparentIndex = bytes[0] & 1 != 0 ? Int(bytes[3]) : nil
            case APPLICATION_EXT_FUNC_CODE where index == 0:
                // ANIMEXTS1.0 is the same block under another name, written by some
                // old tools.
                isLoopApplication = bytes.elementsEqual("NETSCAPE2.0".utf8)
                    || bytes.elementsEqual("ANIMEXTS1.0".utf8)
            case APPLICATION_EXT_FUNC_CODE where isLoopApplication && bytes.count >= 3 && bytes[0] == 1:
                // The first loop block wins; a later one is an editing leftover.
                if repetitions == nil { repetitions = Int(bytes[1]) | Int(bytes[2]) << 8 }
            default:
                break
            }
            index += 1
            var next: UnsafeMutablePointer<GifByteType>?
            guard DGifGetExtensionNext(file, &next) == GIF_OK else { throw failure() }
            block = next
        }
    }

    /// Grows the canvas to hold the first frame, before anything is allocated for it.
    ///
    /// Some files' first frame is larger than their logical screen, or their screen is
    /// 0×0: Chrome, Firefox and Pillow enlarge the image to the first frame's
    /// rectangle rather than crop it to a sliver or refuse it, so Imago does too.
    /// Later frames are clipped to the canvas, as browsers do; the grown size is what
    /// the pixel limit checks. A frame claiming more pixels than the rest of the data
    /// can hold (see `readPixels`) grows nothing: it is a lie, not a size.
    private mutating func coverFirstFrame(left: Int, top: Int, width: Int, height: Int) throws(ImagoError) {
        let (claimed, overflow) = width.multipliedReportingOverflow(by: height)
        if !overflow, claimed / 4096 <= source.pointee.remaining {
            screenWidth = max(screenWidth, left + width)
            screenHeight = max(screenHeight, top + height)
        }
        guard screenWidth > 0, screenHeight > 0 else {
            throw ImageDecoders.GIF.failure("the logical screen and the first frame are empty (\(screenWidth)×\(screenHeight))")
        }
        try options.checkSize(width: screenWidth, height: screenHeight)
    }

    mutating func readImage() throws(ImagoError) -> Bitmap {
        // giflib reads the descriptor and colour table, then refuses LZW code sizes
        // over 8; the frame is then decoded here, from the byte after the code size.
        var wide: Int?
        if DGifGetImageDesc(file) != GIF_OK {
            guard let size = wideCodeSize() else { throw failure() }
            wide = size
        }
        let number = frameIndex + 1
        let image = file.pointee.Image
        let left = Int(image.Left), top = Int(image.Top)
        let width = Int(image.Width), height = Int(image.Height)
        guard let colorMap = image.ColorMap ?? file.pointee.SColorMap else {
            throw ImageDecoders.GIF.failure("frame \(number) has no colour table, and the file has no global one")
        }
        if frameIndex == 0 { try coverFirstFrame(left: left, top: top, width: width, height: height) }
        // The full canvas, a frame saved under it, and the thumbnail made from it.
        let canvasBytes = screenWidth * screenHeight * 8
        if scaledCanvas == nil, canvas == nil, let target = options.targetSize,
           screenWidth * screenHeight > ScaledCanvas.largestFullCanvas || canvasBytes > options.effectiveMemoryBudget {
            scaledCanvas = ScaledCanvas(width: screenWidth, height: screenHeight, target: target)
        }
        if scaledCanvas == nil, canvas == nil { try options.checkMemory(canvasBytes, format: .gif) }
        let canvas: Canvas?
        if scaledCanvas == nil {
            guard let made = self.canvas ?? Canvas(width: screenWidth, height: screenHeight) else {
                throw ImageDecoders.GIF.failure("out of memory for a \(screenWidth)×\(screenHeight) canvas")
            }
            canvas = made
            self.canvas = made
        } else {
            canvas = nil
        }
        // A rectangle of the screen on the scaled canvas; an empty one stays empty.
        func scaled(_ rect: Rect) -> ScaledCanvas.Rectangle? {
            rect.isEmpty ? nil : scaledCanvas?.rectangle(x: rect.x, y: rect.y, width: rect.width, height: rect.height)
        }

        switch pendingDisposal {
        case (.clear, let rect):
            canvas?.clear(rect)
            if let area = scaled(rect) { scaledCanvas?.clear(area) }
        case (.restore, let rect):
            canvas?.restore(rect)
            if let area = scaled(rect) { scaledCanvas?.restore(area) }
        case (.keep, _): break
        }

        // Rectangles reaching past the canvas are clipped, as browsers do. Columns
        // outside it are decoded (each row's LZW data runs through them) but never
        // drawn; rows below it are skipped.
        var visible = Rect()
        if left < screenWidth, top < screenHeight {
            visible = Rect(x: left, y: top, width: min(width, screenWidth - left), height: min(height, screenHeight - top))
        }
        if visible.isEmpty { visible = Rect() }
        let area = scaled(visible)
        if control.disposal == .restore {
            canvas?.save(visible)
            if let area { scaledCanvas?.save(area) }
        }

        // On a scaled canvas the frame's rows go through the resampler to its
        // scaled rectangle, then onto the canvas.
        let target: any GIFRowTarget = canvas ?? GIFFrameRows(visible: visible, scaledTo: area, interlaced: image.Interlace)
        fillPalette(colorMap.pointee, transparentIndex: control.transparentIndex)
        do throws(ImagoError) {
            if let wide {
                try readWidePixels(codeSize: wide, width: width, height: height, interlaced: image.Interlace, visible: visible, into: target)
            } else {
                try readPixels(width: width, height: height, interlaced: image.Interlace, visible: visible, into: target)
            }
        } catch {
            // The data ended inside the frame: the rows that arrived are drawn, the
            // rest show the canvas beneath, and this is the last frame.
            guard source.pointee.ranOut else { throw error }
            if case .decodingTimedOut = error { throw error }
            isFinished = true
            isPartial = true
        }

        frameIndex += 1
        pendingDisposal = (control.disposal, visible)
        control = GraphicsControl()
        guard let canvas else {
            let scaledCanvas = scaledCanvas!
            // Transparent pixels leave the canvas as it is: the frame goes over it.
            if let area, let frame = (target as? GIFFrameRows)?.finish() { scaledCanvas.draw(frame, in: area, blending: true) }
            return scaledCanvas.output()
        }
        guard let target = options.targetSize else { return try canvas.snapshot() }
        // Fitting a large canvas is a pass over all of it; not begun once time is up.
        try deadline.check(.gif)
        // A thumbnail is scaled straight from the canvas: no full-size copy.
        let pixels = UnsafeRawPointer(canvas.pixels.baseAddress!).assumingMemoryBound(to: UInt8.self)
        return Resampler.fitted(
            Resampler.Pixels(base: pixels, width: screenWidth, height: screenHeight, bytesPerRow: screenWidth * 4), to: target)
    }
}
#endif
