/// An animation's canvas kept at a thumbnail's scale, for canvases too large to
/// hold: each frame is scaled to its rectangle as it is decoded and composited here,
/// so memory follows the thumbnail, not the canvas (an 11000² canvas is 484 MB at
/// full size; libwebp kept two). The frames come out as the full-size composite
/// fitted would, but along frame edges, where a frame's scaled edge pixels are
/// blended rather than resampled with the canvas beneath.
final class ScaledCanvas {
    /// The largest canvas, in pixels, composited at full size for a thumbnail (4
    /// megapixels, 16 MB): below it every pixel is exactly the full composite fitted.
    static let largestFullCanvas = 1 << 22

    /// A rectangle on the scaled canvas.
    struct Rectangle: Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    /// Where the canvas lands in the target.
    let layout: TargetSize.Layout
    private let scaleX: Double, scaleY: Double
    /// Premultiplied RGBA at the scaled size, transparent at first.
    private var pixels: [UInt8]
    /// The pixels under a rectangle, saved to be put back.
    private var saved: [UInt8] = []

    /// A transparent canvas of `width` × `height` kept at `target`'s scale.
    init(width: Int, height: Int, target: TargetSize) {
        layout = target.layout(sourceWidth: width, sourceHeight: height)
        scaleX = Double(layout.scaledWidth) / Double(width)
        scaleY = Double(layout.scaledHeight) / Double(height)
        pixels = [UInt8](repeating: 0, count: layout.scaledWidth * layout.scaledHeight * 4)
    }

    /// The scaled rectangle of a full-size one (which must lie on the canvas): edges
    /// scaled and rounded, so that frames which meet at full size meet here too; at
    /// least a pixel each way.
    func rectangle(x: Int, y: Int, width: Int, height: Int) -> Rectangle {
        let left = min(Int((Double(x) * scaleX).rounded()), layout.scaledWidth - 1)
        let top = min(Int((Double(y) * scaleY).rounded()), layout.scaledHeight - 1)
        let right = min(Int((Double(x + width) * scaleX).rounded()), layout.scaledWidth)
        let bottom = min(Int((Double(y + height) * scaleY).rounded()), layout.scaledHeight)
        return Rectangle(x: left, y: top, width: max(1, right - left), height: max(1, bottom - top))
    }

    /// Makes `rectangle` transparent.
    func clear(_ rectangle: Rectangle) {
        forEachPixel(of: rectangle) { pixel, _ in pixel.update(repeating: 0, count: 4) }
    }

    /// Keeps the pixels under `rectangle` for `restore`.
    func save(_ rectangle: Rectangle) {
        saved = [UInt8](repeating: 0, count: rectangle.width * rectangle.height * 4)
        saved.withUnsafeMutableBufferPointer { saved in
            forEachPixel(of: rectangle) { pixel, offset in (saved.baseAddress! + offset).update(from: pixel, count: 4) }
        }
    }

    /// Puts back the pixels `save` kept for `rectangle`.
    func restore(_ rectangle: Rectangle) {
        guard saved.count == rectangle.width * rectangle.height * 4 else { return }
        saved.withUnsafeBufferPointer { saved in
            forEachPixel(of: rectangle) { pixel, offset in pixel.update(from: saved.baseAddress! + offset, count: 4) }
        }
    }

    /// Draws `frame`, already of `rectangle`'s size, over the canvas (premultiplied
    /// source over destination), or in place of it when `blending` is false.
    func draw(_ frame: Bitmap, in rectangle: Rectangle, blending: Bool) {
        frame.pixels.withUnsafeBufferPointer { source in
            forEachPixel(of: rectangle) { destination, offset in
                let s = source.baseAddress! + offset
                guard blending else { return destination.update(from: s, count: 4) }
                let keep = UInt32(255 - s[3])
                for c in 0..<4 { destination[c] = s[c] &+ UInt8((UInt32(destination[c]) * keep + 127) / 255) }
            }
        }
    }

    /// The canvas as a frame of the target's size: a fill shows its middle, as
    /// `Bitmap.fitted` crops it.
    func output() -> Bitmap {
        let x = (layout.scaledWidth - layout.outputWidth) / 2, y = (layout.scaledHeight - layout.outputHeight) / 2
        let (width, height, stride) = (layout.outputWidth, layout.outputHeight, layout.scaledWidth)
        return try! Bitmap.make(width: width, height: height) { out in
            pixels.withUnsafeBytes { canvas in
                for row in 0..<height {
                    (out.baseAddress! + row * width * 4).copyMemory(
                        from: canvas.baseAddress! + ((y + row) * stride + x) * 4, byteCount: width * 4)
                }
            }
        }
    }

    /// Calls `body` for each pixel of `rectangle`, with its offset in a bitmap of the
    /// rectangle's size.
    private func forEachPixel(of rectangle: Rectangle, _ body: (UnsafeMutablePointer<UInt8>, Int) -> Void) {
        let stride = layout.scaledWidth
        pixels.withUnsafeMutableBufferPointer { canvas in
            for row in 0..<rectangle.height {
                let line = canvas.baseAddress! + ((rectangle.y + row) * stride + rectangle.x) * 4
                for column in 0..<rectangle.width { body(line + column * 4, (row * rectangle.width + column) * 4) }
            }
        }
    }
}
