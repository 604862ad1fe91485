// The parts of GIF decoding that hold state between frames: the cursor that keeps
// giflib open across an animation's frames, and the canvas they are composited on.

#if os(Linux)
import CGIFLib
import Foundation

/// giflib open on data, producing composited frames in order: the first frame of a
/// decode, and each play of an animation.
final class GIFFrameCursor: FrameProducing {
    private let source: UnsafeMutablePointer<GIFByteSource>
    private let file: UnsafeMutablePointer<GifFileType>
    private var reader: GIFReader
    /// The bytes `source` points into, kept alive as long as the cursor.
    private let storage: PinnedBytes?

    /// Opens `bytes`, which must stay valid for the cursor's life (they are `keeping`'s
    /// when given). `scan` says whether the data ends early and whether rows come in
    /// order. `deadline` stops the frames' decoding; none for an animation played after
    /// the decode returned.
    init(
        _ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions, scan: GIFScan, keeping storage: PinnedBytes? = nil,
        deadline: DecodeDeadline = .none
    ) throws(ImagoError) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { throw ImageDecoders.GIF.failure("no data") }
        self.storage = storage
        // giflib pulls bytes through a callback; its cursor lives here, reached from
        // the callback through `UserData`, so the data is read in place, never copied.
        let source = UnsafeMutablePointer<GIFByteSource>.allocate(capacity: 1)
        source.initialize(to: GIFByteSource(base: base, count: bytes.count))
        var openError: Int32 = 0
        let file = DGifOpen(source, { gif, buffer, wanted in
            guard let gif, let buffer, wanted > 0,
                  let source = gif.pointee.UserData?.assumingMemoryBound(to: GIFByteSource.self) else { return 0 }
            let count = min(Int(wanted), source.pointee.count - source.pointee.offset)
            // A short read is the only way the callback fails, so it is remembered:
            // whatever giflib then reports, the real cause is that the data ended.
            if count < Int(wanted) { source.pointee.ranOut = true }
            buffer.update(from: source.pointee.base + source.pointee.offset, count: count)
            source.pointee.offset += count
            return Int32(count)
        }, &openError)
        guard let file else {
            let error = ImageDecoders.GIF.failure(code: openError, source: source.pointee)
            source.deinitialize(count: 1)
            source.deallocate()
            throw error
        }
        self.source = source
        self.file = file
        reader = GIFReader(file: file, source: source, options: options, scan: scan, deadline: deadline)
    }

    deinit {
        DGifCloseFile(file, nil)
        source.deinitialize(count: 1)
        source.deallocate()
    }

    /// Whether the data ended inside the frames produced so far.
    var isPartial: Bool { reader.isPartial }
    /// Whether the file has no more frames.
    var isFinished: Bool { reader.isFinished }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        try reader.nextFrame()
    }
}

/// Where a frame's rows of palette indices are drawn.
protocol GIFRowTarget: AnyObject {
    /// Draws one row of palette indices at screen row `y` from column `x`; a palette
    /// entry of 0 (transparent or undefined) draws nothing.
    func draw(_ indices: UnsafeBufferPointer<UInt8>, x: Int, y: Int, palette: UnsafeBufferPointer<UInt32>)
}

/// A frame's rows resampled to its rectangle on a `ScaledCanvas`: one row of pixels
/// at a time, never the frame. An interlaced frame's rows, out of order, are summed
/// into the resampler's average as they come (`Resampler.Stream.scatter`).
final class GIFFrameRows: GIFRowTarget {
    private let visible: Rect
    private let interlaced: Bool
    private let stream: Resampler.Stream?
    private var row: [UInt32]

    /// Rows of the `visible` part of a frame, made `area`'s size (nil for a frame
    /// with nothing visible), in order unless `interlaced`.
    init(visible: Rect, scaledTo area: ScaledCanvas.Rectangle?, interlaced: Bool) {
        self.visible = visible
        self.interlaced = interlaced
        stream = area.map {
            Resampler.Stream(
                sourceWidth: visible.width, sourceHeight: visible.height,
                region: .init(x: 0, y: 0, width: Double(visible.width), height: Double(visible.height)),
                width: $0.width, height: $0.height)
        }
        row = [UInt32](repeating: 0, count: visible.width)
    }

    func draw(_ indices: UnsafeBufferPointer<UInt8>, x: Int, y: Int, palette: UnsafeBufferPointer<UInt32>) {
        guard let stream else { return }
        row.withUnsafeMutableBufferPointer { row in
            for i in 0..<indices.count { row[i] = palette[Int(indices[i])] }
            let pixels = UnsafeRawPointer(row.baseAddress!).assumingMemoryBound(to: UInt8.self)
            if interlaced {
                stream.scatter(row: y - visible.y, pixels, count: indices.count)
            } else {
                stream.append(row: y - visible.y, pixels)
            }
        }
    }

    /// The frame at its scaled size, rows that never came transparent.
    func finish() -> Bitmap? { interlaced ? stream?.finishScattered() : stream?.finish() }
}

/// The RGBA canvas frames are composited on, kept between frames.
///
/// Pixels are held as `UInt32` so that a palette entry is copied in one store; each
/// holds the bytes R, G, B, A in memory order.
final class Canvas: GIFRowTarget {
    let width: Int
    let height: Int
    let pixels: UnsafeMutableBufferPointer<UInt32>
    /// The pixels under a "restore to previous" frame, saved before it was drawn.
    private var saved: [UInt32] = []

    /// Makes a transparent canvas (browsers start from transparent, not from the
    /// background colour); nil when the memory is not to be had.
    init?(width: Int, height: Int) {
        // calloc, not allocate-and-fill: large blocks come zeroed from the kernel and
        // cost nothing until touched, so a corrupt file with a huge logical screen
        // fails on its truncated data without first writing gigabytes of zeros.
        guard let memory = calloc(width * height, MemoryLayout<UInt32>.stride) else { return nil }
        self.width = width
        self.height = height
        pixels = UnsafeMutableBufferPointer(start: memory.bindMemory(to: UInt32.self, capacity: width * height),
                                            count: width * height)
    }

    deinit { free(pixels.baseAddress) }

    func clear(_ rect: Rect) {
        for y in rect.y..<rect.y + rect.height {
            let start = y * width + rect.x
            UnsafeMutableBufferPointer(rebasing: pixels[start..<start + rect.width]).update(repeating: 0)
        }
    }

    func save(_ rect: Rect) {
        saved.removeAll(keepingCapacity: true)
        saved.reserveCapacity(rect.width * rect.height)
        for y in rect.y..<rect.y + rect.height {
            let start = y * width + rect.x
            saved.append(contentsOf: pixels[start..<start + rect.width])
        }
    }

    func restore(_ rect: Rect) {
        guard saved.count == rect.width * rect.height else { return }
        saved.withUnsafeBufferPointer { saved in
            for row in 0..<rect.height {
                let start = (rect.y + row) * width + rect.x
                let from = UnsafeBufferPointer(rebasing: saved[row * rect.width..<(row + 1) * rect.width])
                _ = UnsafeMutableBufferPointer(rebasing: pixels[start..<start + rect.width]).update(fromContentsOf: from)
            }
        }
    }

    /// Draws one row of palette indices at canvas row `y` from column `x`, leaving
    /// the canvas as it is where the palette entry is 0 (transparent or undefined).
    func draw(_ indices: UnsafeBufferPointer<UInt8>, x: Int, y: Int, palette: UnsafeBufferPointer<UInt32>) {
        let row = pixels.baseAddress! + y * width + x
        for i in 0..<indices.count {
            let colour = palette[Int(indices[i])]
            if colour != 0 { row[i] = colour }
        }
    }

    /// A copy of the canvas as a frame's bitmap.
    func snapshot() throws(ImagoError) -> Bitmap {
        try Bitmap.make(width: width, height: height) { destination in
            destination.copyMemory(from: UnsafeRawBufferPointer(pixels))
        }
    }
}
#endif
