/// Pixels in memory: 8-bit RGBA, alpha premultiplied, top row first.
///
/// Premultiplied because every consumer wants it that way: resampling and
/// compositing are only correct on premultiplied values, and Core Graphics, Cairo and
/// the GPU take them as they are. Encoders divide the alpha out again.
///
/// The pixels live in an array, so a `Bitmap` is a `Sendable` value that is shared,
/// not copied, when passed between tasks.
///
/// The values are in the colour space `colorSpace` names: sRGB, unless an Apple
/// platform's ImageIO decoded a wide-gamut image (an iPhone's Display P3 photo), which
/// keeps its colours there rather than clipping them to sRGB.
public struct Bitmap: Sendable, Equatable {
    /// The colour space a bitmap's values are in.
    public enum ColorSpace: String, Sendable, Hashable {
        /// sRGB: what every decoder on Linux gives, and what untagged images mean.
        case sRGB
        /// Display P3 (the P3 primaries, sRGB's transfer curve): wide-gamut images on
        /// Apple platforms, shown on their wide-colour screens as they were taken.
        case displayP3
    }

    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Bytes from the start of one row to the next; at least `width * 4`.
    public let bytesPerRow: Int
    /// `height` rows of `bytesPerRow` bytes, each pixel R, G, B, A premultiplied.
    public let pixels: [UInt8]
    /// The colour space of the values.
    public let colorSpace: ColorSpace

    /// Wraps existing pixels. The array must hold `height` rows of `bytesPerRow`
    /// bytes, and the colour values must already be premultiplied.
    public init(width: Int, height: Int, bytesPerRow: Int? = nil, pixels: [UInt8], colorSpace: ColorSpace = .sRGB) {
        let stride = bytesPerRow ?? width * 4
        precondition(width > 0 && height > 0 && stride >= width * 4, "invalid bitmap geometry")
        precondition(pixels.count >= stride * height, "pixel buffer too small for the bitmap")
        self.width = width
        self.height = height
        self.bytesPerRow = stride
        self.pixels = pixels
        self.colorSpace = colorSpace
    }

    /// The same pixels, their values taken as being in `space`: nothing is converted
    /// (or copied).
    public func tagged(_ space: ColorSpace) -> Bitmap {
        space == colorSpace ? self : Bitmap(width: width, height: height, bytesPerRow: bytesPerRow, pixels: pixels, colorSpace: space)
    }

    /// Makes a bitmap whose pixels `fill` writes in place, so a decoder writes
    /// straight into the final buffer and nothing is copied on the way out.
    ///
    /// `fill` receives uninitialised memory of `height * width * 4` bytes and must
    /// write all of it (or throw).
    static func make(
        width: Int, height: Int, colorSpace: ColorSpace = .sRGB,
        fill: (UnsafeMutableRawBufferPointer) throws(ImagoError) -> Void
    ) throws(ImagoError) -> Bitmap {
        let count = width * height * 4
        var failure: ImagoError?
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            do throws(ImagoError) {
                try fill(UnsafeMutableRawBufferPointer(buffer))
                initialized = count
            } catch {
                failure = error
                initialized = 0
            }
        }
        if let failure { throw failure }
        return Bitmap(width: width, height: height, pixels: pixels, colorSpace: colorSpace)
    }

    /// Bytes of memory the pixels take: what a memory cache should charge for them.
    public var cost: Int { pixels.count }

    /// The pixel at (`x`, `y`) as premultiplied (r, g, b, a).
    public subscript(x: Int, y: Int) -> (r: UInt8, g: UInt8, b: UInt8, a: UInt8) {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel out of bounds")
        let i = y * bytesPerRow + x * 4
        return (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }

    /// Whether any pixel is less than fully opaque.
    public var hasAlpha: Bool {
        pixels.withUnsafeBufferPointer { p in
            for y in 0..<height {
                var i = y * bytesPerRow + 3
                for _ in 0..<width {
                    if p[i] != 255 { return true }
                    i += 4
                }
            }
            return false
        }
    }

    /// The bitmap turned upright for `orientation`: one copy, none for `.up`.
    public func applying(_ orientation: ImageOrientation) -> Bitmap {
        if orientation == .up { return self }
        let (w, h) = orientation.swapsDimensions ? (height, width) : (width, height)
        let source = self
        // Each output pixel (x, y) reads the source pixel this mapping names.
        let map: (Int, Int) -> (Int, Int) = switch orientation {
        case .up: { ($0, $1) }
        case .upMirrored: { (source.width - 1 - $0, $1) }
        case .down: { (source.width - 1 - $0, source.height - 1 - $1) }
        case .downMirrored: { ($0, source.height - 1 - $1) }
        case .leftMirrored: { ($1, $0) }
        case .right: { ($1, source.height - 1 - $0) }
        case .rightMirrored: { (source.width - 1 - $1, source.height - 1 - $0) }
        case .left: { (source.width - 1 - $1, $0) }
        }
        // The mapping cannot fail, so `make` never sees an error here.
        return try! Bitmap.make(width: w, height: h, colorSpace: colorSpace) { destination in
            let out = destination.bindMemory(to: UInt32.self)
            source.pixels.withUnsafeBytes { raw in
                for y in 0..<h {
                    for x in 0..<w {
                        let (sx, sy) = map(x, y)
                        out[y * w + x] = raw.loadUnaligned(
                            fromByteOffset: sy * source.bytesPerRow + sx * 4, as: UInt32.self)
                    }
                }
            }
        }
    }
}

extension UnsafeMutableRawBufferPointer {
    /// Multiplies colour by alpha in place for `count` RGBA pixels with straight alpha,
    /// the form PNG and most codecs produce.
    func premultiplyRGBA(count: Int) {
        let p = bindMemory(to: UInt8.self)
        var i = 0
        for _ in 0..<count {
            let a = UInt32(p[i + 3])
            if a != 255 {
                // (v * a + 127) / 255, rounded, without a division.
                func mul(_ v: UInt8) -> UInt8 {
                    let t = UInt32(v) * a + 128
                    return UInt8((t + (t >> 8)) >> 8)
                }
                p[i] = mul(p[i])
                p[i + 1] = mul(p[i + 1])
                p[i + 2] = mul(p[i + 2])
            }
            i += 4
        }
    }
}

extension Bitmap {
    /// The pixels held for a consumer that reads them in place from outside Swift (a
    /// Core Graphics data provider, a GPU texture): `info` keeps the storage alive
    /// until `releasePixels(_:)` is called with it, and `base` points at its first of
    /// `count` bytes until then. No copy: an image in the memory cache and on screen is
    /// held once. (`pixels` is a constant, so its buffer never moves or changes while
    /// it is held, whatever happens to this bitmap.)
    package func holdPixels() -> (info: UnsafeMutableRawPointer, base: UnsafeRawPointer, count: Int) {
        let box = HeldPixels(pixels)
        let base = box.pixels.withUnsafeBytes { $0.baseAddress! }
        return (Unmanaged.passRetained(box).toOpaque(), base, bytesPerRow * height)
    }

    /// Lets go of pixels held by `holdPixels()`, once per hold, from any thread.
    package static func releasePixels(_ info: UnsafeMutableRawPointer) {
        Unmanaged<HeldPixels>.fromOpaque(info).release()
    }
}

/// A bitmap's pixel array kept alive while a consumer outside Swift reads it.
///
/// `@unchecked Sendable`: it only holds an immutable array, and is released on
/// whichever thread the consumer lets go on.
package final class HeldPixels: @unchecked Sendable {
    let pixels: [UInt8]
    init(_ pixels: [UInt8]) { self.pixels = pixels }
}
