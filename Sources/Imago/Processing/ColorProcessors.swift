// Processors that change colours pixel by pixel: tint, colour controls, grayscale,
// overlays with a blend mode. They work on the premultiplied values the bitmap holds:
// the adjustments that are linear in colour (saturation, grayscale) are exact there
// as they are; the others are written in premultiplied form (a pixel of alpha `a`
// scales everything the straight formula adds by `a`), so no value is divided by its
// alpha and rounded on the way, and transparent pixels stay transparent.

extension ImageProcessors {
    /// A colour with straight (not premultiplied) alpha, 8 bits a channel: what
    /// processors paint with. Its components are stored as bytes, so two colours that
    /// draw the same pixels have the same identifier.
    public struct Color: Sendable, Hashable {
        /// Red, 0 to 255.
        public let red: UInt8
        /// Green, 0 to 255.
        public let green: UInt8
        /// Blue, 0 to 255.
        public let blue: UInt8
        /// Opacity, 0 (transparent) to 255 (opaque).
        public let alpha: UInt8

        /// A colour from components between 0 and 1 (clamped), rounded to bytes.
        public init(red: Double, green: Double, blue: Double, alpha: Double = 1) {
            func byte(_ v: Double) -> UInt8 { v.isNaN ? 0 : UInt8((min(1, max(0, v)) * 255).rounded()) }
            self.init(red: byte(red), green: byte(green), blue: byte(blue), alpha: byte(alpha))
        }

        /// A colour from its bytes written `0xRRGGBBAA`, as CSS's `#RRGGBBAA`.
        public init(rgba: UInt32) {
            self.init(red: UInt8(rgba >> 24), green: UInt8((rgba >> 16) & 255), blue: UInt8((rgba >> 8) & 255), alpha: UInt8(rgba & 255))
        }

        private init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
            self.alpha = alpha
        }

        /// Opaque black.
        public static let black = Color(rgba: 0x0000_00ff)
        /// Opaque white.
        public static let white = Color(rgba: 0xffff_ffff)

        /// `#RRGGBBAA`, as identifiers spell it.
        public var hex: String {
            let digits = Array("0123456789abcdef")
            return "#" + String([red, green, blue, alpha].flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
        }

        /// Straight components between 0 and 1, with alpha last.
        var unit: SIMD4<Float> { SIMD4(Float(red), Float(green), Float(blue), Float(alpha)) / 255 }
    }

    /// How an overlay's colours combine with the image's, as the W3C compositing
    /// specification (and Core Graphics' blend modes of the same names) define them.
    public enum BlendMode: String, Sendable, Hashable, CaseIterable {
        /// The overlay's colour, as it is.
        case normal
        /// The product of both: never lighter, white leaves the image as it is.
        case multiply
        /// The inverse of the product of the inverses: never darker, black leaves the
        /// image as it is.
        case screen
        /// Multiply where the image is dark, screen where it is light: contrast that
        /// keeps the image's highlights and shadows.
        case overlay

        /// The blended colour of straight components `backdrop` and `source`.
        @inline(__always)
        func blend(_ backdrop: SIMD4<Float>, _ source: SIMD4<Float>) -> SIMD4<Float> {
            switch self {
            case .normal: return source
            case .multiply: return backdrop * source
            case .screen: return backdrop + source - backdrop * source
            case .overlay:
                let low = 2 * backdrop * source
                let high = 1 - 2 * (1 - backdrop) * (1 - source)
                return low.replacing(with: high, where: backdrop .> 0.5)
            }
        }
    }

    /// Paints a colour over the image where the image is, keeping its alpha: the
    /// colour's own alpha says how much (SDWebImage's `SDImageTintTransformer`, which
    /// draws with Core Graphics' source-atop; Kingfisher's `TintImageProcessor`).
    public struct Tint: ImageProcessing {
        /// The colour and its strength.
        package let color: Color

        /// Tints with `color`; its alpha is the strength (1: a silhouette in the colour).
        public init(color: Color) {
            self.color = color
        }

        public var identifier: String { "imago.tint(\(color.hex))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            Overlay(color: color, blendMode: .normal).process(bitmap)
        }
    }

    /// Saturation, brightness and contrast, as Core Image's `CIColorControls` takes
    /// them (Kingfisher's `ColorControlsProcessor`): saturation mixes with the pixel's
    /// luma by CSS `saturate()`'s matrix, then brightness is added, then contrast
    /// stretches around mid-grey; the result is clamped once, at the end.
    public struct ColorControls: ImageProcessing {
        /// 1 leaves colours as they are, 0 is grayscale, above 1 more vivid.
        package let saturation: Double
        /// Added to every component: 0 leaves them, 1 makes white, -1 black.
        package let brightness: Double
        /// 1 leaves the image as it is, 0 is flat mid-grey, above 1 stronger.
        package let contrast: Double

        /// Adjusts by `saturation` (1 = none), `brightness` (0 = none) and `contrast`
        /// (1 = none). Non-finite values count as no change.
        public init(saturation: Double = 1, brightness: Double = 0, contrast: Double = 1) {
            self.saturation = saturation.isFinite ? saturation : 1
            self.brightness = brightness.isFinite ? brightness : 0
            self.contrast = contrast.isFinite ? contrast : 1
        }

        public var identifier: String {
            "imago.colorControls(saturation:\(saturation),brightness:\(brightness),contrast:\(contrast))"
        }

        /// CSS `saturate(s)`: each row mixes the pixel with its luma.
        static func saturationMatrix(_ s: Float) -> (SIMD4<Float>, SIMD4<Float>, SIMD4<Float>) {
            (SIMD4(0.213 + 0.787 * s, 0.715 - 0.715 * s, 0.072 - 0.072 * s, 0),
             SIMD4(0.213 - 0.213 * s, 0.715 + 0.285 * s, 0.072 - 0.072 * s, 0),
             SIMD4(0.213 - 0.213 * s, 0.715 - 0.715 * s, 0.072 + 0.928 * s, 0))
        }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let (r, g, b) = Self.saturationMatrix(Float(saturation))
            let brightness = Float(brightness), contrast = Float(contrast)
            return bitmap.mappingPixels { p in
                let a = p.w
                var c = SIMD4((r * p).sum(), (g * p).sum(), (b * p).sum(), a)
                c += brightness * a
                c = contrast * (c - 0.5 * a) + 0.5 * a
                c.w = a
                return c
            }
        }
    }

    /// Grays the image by its luma (Rec. 709 weights, as CSS `grayscale()`), keeping
    /// alpha (Kingfisher's `BlackWhiteProcessor`, SDWebImage's grayscale filter).
    public struct Grayscale: ImageProcessing {
        /// Makes the processor; it has no parameters.
        public init() {}

        public var identifier: String { "imago.grayscale" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let weights = SIMD4<Float>(0.2126, 0.7152, 0.0722, 0)
            return bitmap.mappingPixels { p in
                let y = (weights * p).sum()
                return SIMD4(y, y, y, p.w)
            }
        }
    }

    /// Paints a colour or an image over the image with a blend mode, where the image
    /// is (its alpha kept: Core Graphics' source-atop, as Kingfisher's
    /// `OverlayImageProcessor` draws), following the W3C compositing formulas.
    public struct Overlay: ImageProcessing {
        /// What is painted.
        package enum Source: Sendable {
            case color(Color)
            case image(Bitmap, x: Int, y: Int, digest: String)
        }

        package let source: Source
        /// How its colours combine with the image's.
        package let blendMode: BlendMode

        /// Paints `color` over the whole image; its alpha is how much.
        public init(color: Color, blendMode: BlendMode = .normal) {
            self.source = .color(color)
            self.blendMode = blendMode
        }

        /// Paints `image` at its own size with its top left at (`x`, `y`) of the image
        /// (a watermark, a frame); what falls outside is dropped. The identifier names
        /// the overlay by a digest of its pixels, so it is worked out once, here.
        public init(image: Bitmap, x: Int = 0, y: Int = 0, blendMode: BlendMode = .normal) {
            var digest = SHA256()
            image.pixels.withUnsafeBytes { raw in
                for row in 0..<image.height {
                    digest.update(UnsafeRawBufferPointer(rebasing: raw[row * image.bytesPerRow ..< row * image.bytesPerRow + image.width * 4]))
                }
            }
            let digits = Array("0123456789abcdef")
            let hex = String(digest.finalize().prefix(12).flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
            self.source = .image(image, x: x, y: y, digest: "\(image.width)x\(image.height):\(hex)")
            self.blendMode = blendMode
        }

        public var identifier: String {
            switch source {
            case .color(let color): "imago.overlay(\(color.hex),\(blendMode.rawValue))"
            case .image(_, let x, let y, let digest): "imago.overlay(image:\(digest)@\(x),\(y),\(blendMode.rawValue))"
            }
        }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let mode = blendMode
            switch source {
            case .color(let color):
                let straight = color.unit
                return bitmap.mappingPixels { Self.composite($0, source: straight, mode: mode) }
            case .image(let image, let ox, let oy, _):
                return bitmap.mappingPixels { p, x, y in
                    let sx = x - ox, sy = y - oy
                    guard sx >= 0, sy >= 0, sx < image.width, sy < image.height else { return p }
                    let s = image[sx, sy]
                    let premultiplied = SIMD4(Float(s.r), Float(s.g), Float(s.b), Float(s.a)) / 255
                    return Self.composite(p, source: premultiplied.unpremultiplied, mode: mode)
                }
            }
        }

        /// Source-atop with blending, on the premultiplied backdrop `p` and the straight
        /// source colour: cs·αb + cb·(1 − αs), where cs is the source premultiplied
        /// after mixing in the blend, (1 − αb)·Cs + αb·B(Cb, Cs).
        @inline(__always)
        static func composite(_ p: SIMD4<Float>, source: SIMD4<Float>, mode: BlendMode) -> SIMD4<Float> {
            let ab = p.w, as_ = source.w
            guard ab > 0 else { return p }
            let cb = p.unpremultiplied
            var mixed = (1 - ab) * source + ab * mode.blend(cb, source)
            mixed.w = 1
            var out = (as_ * ab) * mixed + (1 - as_) * p
            out.w = ab
            return out
        }
    }
}

extension SIMD4<Float> {
    /// The colour with its alpha divided out (alpha itself kept); zero for a
    /// transparent pixel.
    var unpremultiplied: SIMD4<Float> {
        guard w > 0 else { return .zero }
        var v = self / w
        v.w = w
        return v
    }
}

extension Bitmap {
    /// A new bitmap of the same size and colour space whose every pixel is
    /// `transform` of the old one, both premultiplied with components between 0 and
    /// 1; the result is clamped to [0, alpha] and rounded to bytes.
    func mappingPixels(_ transform: (SIMD4<Float>) -> SIMD4<Float>) -> Bitmap {
        mappingPixels { p, _, _ in transform(p) }
    }

    /// `mappingPixels(_:)` with each pixel's position.
    func mappingPixels(_ transform: (SIMD4<Float>, Int, Int) -> SIMD4<Float>) -> Bitmap {
        let source = self
        return try! Bitmap.make(width: width, height: height, colorSpace: colorSpace) { out in
            source.pixels.withUnsafeBytes { raw in
                for y in 0..<source.height {
                    let row = raw.baseAddress! + y * source.bytesPerRow
                    let target = out.baseAddress! + y * source.width * 4
                    for x in 0..<source.width {
                        let p = SIMD4<Float>(row.loadUnaligned(fromByteOffset: x * 4, as: SIMD4<UInt8>.self)) / 255
                        var v = transform(p, x, y)
                        let a = Swift.min(1, Swift.max(0, v.w))
                        v = v.clamped(lowerBound: .zero, upperBound: SIMD4(repeating: a))
                        v.w = a
                        let byte = SIMD4<UInt8>(truncatingIfNeeded: SIMD4<Int32>((v * 255 + 0.5).rounded(.down)))
                        target.storeBytes(of: byte, toByteOffset: x * 4, as: SIMD4<UInt8>.self)
                    }
                }
            }
        }
    }
}
