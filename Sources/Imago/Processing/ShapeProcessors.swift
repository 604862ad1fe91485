// Processors that move pixels or frame them: flips, quarter turns, borders.

extension ImageProcessors {
    /// Mirrors the image (SDWebImage's `SDImageFlippingTransformer`).
    public struct Flip: ImageProcessing {
        /// Which way the image is mirrored.
        public enum Axis: String, Sendable, Hashable, CaseIterable {
            /// Left and right swap.
            case horizontal
            /// Top and bottom swap.
            case vertical
        }

        /// The mirror's axis.
        package let axis: Axis

        /// Mirrors the image `axis`-wise.
        public init(_ axis: Axis) {
            self.axis = axis
        }

        public var identifier: String { "imago.flip(\(axis.rawValue))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            bitmap.applying(axis == .horizontal ? .upMirrored : .downMirrored)
        }
    }

    /// Turns the image by a multiple of a quarter turn, losslessly (SDWebImage's
    /// `SDImageRotationTransformer` at right angles).
    public struct Rotate: ImageProcessing {
        /// A turn by a multiple of 90°.
        public enum Angle: Int, Sendable, Hashable, CaseIterable {
            /// A quarter turn clockwise.
            case clockwise90 = 90
            /// A half turn.
            case halfTurn = 180
            /// A quarter turn counterclockwise.
            case counterclockwise90 = 270
        }

        /// The turn.
        package let angle: Angle

        /// Turns the image by `angle`.
        public init(_ angle: Angle) {
            self.angle = angle
        }

        /// Turns the image clockwise by `degrees`, which must be a multiple of 90
        /// (negative for counterclockwise); nil for any other angle. A whole number
        /// of turns is a rotation of none: nil too, as there is nothing to do.
        public init?(degrees: Int) {
            guard degrees % 90 == 0, let angle = Angle(rawValue: ((degrees % 360) + 360) % 360) else { return nil }
            self.angle = angle
        }

        /// Clockwise degrees, as in `imago.rotate(90)`.
        public var identifier: String { "imago.rotate(\(angle.rawValue))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            // An orientation names the turn that makes an image upright.
            switch angle {
            case .clockwise90: bitmap.applying(.right)
            case .halfTurn: bitmap.applying(.down)
            case .counterclockwise90: bitmap.applying(.left)
            }
        }
    }

    /// Draws a border of `width` pixels inside the image's edges, following rounded
    /// corners of `cornerRadius` (Kingfisher's `BorderImageProcessor`, SDWebImage's
    /// round-corner transformer with a border). After `RoundedCorners` of the same
    /// radius the border traces the rounded edge; with radius 0 it is a plain frame.
    /// Edges are antialiased; the border is painted over the image with its colour's
    /// alpha, and nothing outside the rounded shape is painted.
    public struct Border: ImageProcessing {
        /// The border's thickness in pixels.
        package let width: Double
        /// Its colour.
        package let color: Color
        /// The corner radius in pixels; clamped to half the shorter side, as
        /// `RoundedCorners` clamps it.
        package let cornerRadius: Double

        /// A border `width` pixels thick in `color`, with corners rounded to
        /// `cornerRadius` pixels (multiply points by the screen scale).
        public init(width: Double, color: Color, cornerRadius: Double = 0) {
            self.width = width.isFinite ? max(0, width) : 0
            self.color = color
            self.cornerRadius = cornerRadius.isFinite ? max(0, cornerRadius) : 0
        }

        public var identifier: String { "imago.border(\(width),\(color.hex),radius:\(cornerRadius))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            guard width > 0, color.alpha > 0 else { return bitmap }
            let shape = BorderShape(
                width: Double(bitmap.width), height: Double(bitmap.height), border: width,
                radius: min(cornerRadius, Double(min(bitmap.width, bitmap.height)) / 2))
            // Only pixels this close to an edge can be touched; the rest are copied.
            let span = Int(max(width, shape.radius).rounded(.up)) + 1
            let paint = color.unit
            return bitmap.mappingPixels { p, x, y in
                let nearEdge = x < span || y < span || x >= bitmap.width - span || y >= bitmap.height - span
                guard nearEdge else { return p }
                let coverage = shape.coverage(x: x, y: y)
                guard coverage > 0 else { return p }
                // Source-over of the paint at `coverage`.
                let a = paint.w * Float(coverage)
                var premultiplied = paint * a
                premultiplied.w = a
                return premultiplied + (1 - a) * p
            }
        }
    }
}

/// The ring between a rounded rectangle and the same shape inset by the border's
/// width (its corners rounded by what is left of the radius), as `Border` paints it.
struct BorderShape {
    let width: Double
    let height: Double
    let border: Double
    let radius: Double

    /// Whether the point (`px`, `py`) is inside the rounded rectangle of half sizes
    /// `hw` × `hh` and corner `r` centred in the bitmap: the test `masked(cornerRadius:)`
    /// uses.
    func inside(_ px: Double, _ py: Double, hw: Double, hh: Double, r: Double) -> Bool {
        guard hw > 0, hh > 0 else { return false }
        let dx = abs(px - width / 2), dy = abs(py - height / 2)
        guard dx <= hw, dy <= hh else { return false }
        let qx = max(0, dx - (hw - r)), qy = max(0, dy - (hh - r))
        return qx * qx + qy * qy <= r * r
    }

    /// The share of pixel (`x`, `y`) inside the ring, from 4 × 4 samples.
    func coverage(x: Int, y: Int) -> Double {
        var count = 0
        let innerRadius = max(0, radius - border)
        for sy in 0..<4 {
            for sx in 0..<4 {
                let px = Double(x) + (Double(sx) + 0.5) / 4, py = Double(y) + (Double(sy) + 0.5) / 4
                if inside(px, py, hw: width / 2, hh: height / 2, r: radius)
                    && !inside(px, py, hw: width / 2 - border, hh: height / 2 - border, r: innerRadius) {
                    count += 1
                }
            }
        }
        return Double(count) / 16
    }
}
