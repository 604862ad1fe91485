import Foundation

extension DecodedImage {
    /// The image with `processors` applied in order to every frame: to the first
    /// now, to an animation's other frames as they are decoded.
    public func processed(by processors: [any ImageProcessing]) -> DecodedImage {
        guard !processors.isEmpty else { return self }
        let apply: @Sendable (Bitmap) -> Bitmap = { bitmap in processors.reduce(bitmap) { $1.applied(to: $0) } }
        let first = apply(bitmap)
        return DecodedImage(
            firstFrame: Frame(bitmap: first, duration: firstFrame.duration),
            animation: animation?.mapped(width: first.width, height: first.height, apply),
            loopCount: loopCount, format: format, orientation: orientation, isPartial: isPartial)
    }
}

/// The identifier of a list of processors, as cache keys use it; empty for none.
func processingIdentifier(_ processors: [any ImageProcessing]) -> String {
    processors.map(\.identifier).joined(separator: "|")
}

/// The built-in processors.
public enum ImageProcessors {
    /// Scales to a target size: fit inside it or fill it (cropping evenly), with the
    /// same resampler as decoding.
    public struct Resize: ImageProcessing {
        /// The size and how to fill it.
        package let size: TargetSize

        /// Resizes to `size`.
        public init(_ size: TargetSize) {
            self.size = size
        }

        public var identifier: String { "imago.resize(\(size))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            bitmap.fitted(to: size)
        }
    }

    /// Keeps a rectangle of the image, in pixels; the part of it inside the image if
    /// it sticks out, and the whole image if it misses it entirely.
    public struct Crop: ImageProcessing {
        /// Left edge in pixels.
        package let x: Int
        /// Top edge in pixels.
        package let y: Int
        /// Width in pixels.
        package let width: Int
        /// Height in pixels.
        package let height: Int

        /// Keeps the `width` × `height` rectangle at (`x`, `y`).
        public init(x: Int, y: Int, width: Int, height: Int) {
            self.x = x
            self.y = y
            self.width = width
            self.height = height
        }

        public var identifier: String { "imago.crop(\(x),\(y),\(width),\(height))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let left = max(0, x), top = max(0, y)
            let right = min(bitmap.width, x + width), bottom = min(bitmap.height, y + height)
            guard right > left, bottom > top else { return bitmap }
            return bitmap.cropped(x: left, y: top, width: right - left, height: bottom - top)
        }
    }

    /// Rounds the corners to a radius in pixels, with antialiased edges; what lies
    /// outside becomes transparent.
    public struct RoundedCorners: ImageProcessing {
        /// The corner radius in pixels; clamped to half the shorter side.
        package let radius: Double

        /// Rounds corners to `radius` pixels (multiply points by the screen scale).
        public init(radius: Double) {
            self.radius = max(0, radius)
        }

        public var identifier: String { "imago.roundedCorners(\(radius))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            bitmap.masked(cornerRadius: min(radius, Double(min(bitmap.width, bitmap.height)) / 2))
        }
    }

    /// Crops the largest centred square and makes it a circle: avatars.
    public struct Circle: ImageProcessing {
        /// Makes the processor; it has no parameters.
        public init() {}

        public var identifier: String { "imago.circle" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let side = min(bitmap.width, bitmap.height)
            let square = bitmap.cropped(x: (bitmap.width - side) / 2, y: (bitmap.height - side) / 2, width: side, height: side)
            return square.masked(cornerRadius: Double(side) / 2)
        }
    }

    /// Several processors applied in order, as one.
    public struct Composition: ImageProcessing {
        /// The processors, first applied first.
        package let processors: [any ImageProcessing]

        /// Applies `processors` in order.
        public init(_ processors: [any ImageProcessing]) {
            self.processors = processors
        }

        public var identifier: String { "imago.composition(\(processingIdentifier(processors)))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            processors.reduce(bitmap) { $1.applied(to: $0) }
        }
    }

    /// A processor from a closure, for one-off work; `identifier` must name what the
    /// closure does, parameters included.
    public struct Custom: ImageProcessing {
        /// What the closure does, parameters included: part of cache keys.
        public let identifier: String
        private let body: @Sendable (Bitmap) -> Bitmap

        /// Wraps `body` under `identifier`.
        public init(identifier: String, _ body: @escaping @Sendable (Bitmap) -> Bitmap) {
            self.identifier = identifier
            self.body = body
        }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            body(bitmap)
        }
    }
}

extension Bitmap {
    /// The bitmap with everything outside a rounded rectangle of corner `radius`
    /// pixels made transparent. Edge pixels are scaled by the fraction of them inside
    /// (4 × 4 samples), which in premultiplied form is exactly an antialiased mask.
    func masked(cornerRadius radius: Double) -> Bitmap {
        guard radius > 0 else { return self }
        let span = Int(radius.rounded(.up))
        let source = self
        return try! Bitmap.make(width: width, height: height) { out in
            let p = out.bindMemory(to: UInt8.self)
            source.pixels.withUnsafeBufferPointer { pixels in
                for y in 0..<height {
                    let d = y * width * 4
                    for i in 0..<width * 4 { p[d + i] = pixels[y * source.bytesPerRow + i] }
                }
            }
            // Only pixels within `span` of two edges at once can be cut. A sample is
            // inside when its distance past the inner rectangle (shrunk by the
            // radius) is at most the radius: the rounded rectangle's usual test.
            let halfWidth = Double(width) / 2, halfHeight = Double(height) / 2
            func band(_ length: Int) -> [Int] {
                Array(Set(Array(0..<min(span, length)) + Array(max(0, length - span)..<length))).sorted()
            }
            let columns = band(width)
            for y in band(height) {
                for x in columns {
                    var inside = 0
                    for sy in 0..<4 {
                        for sx in 0..<4 {
                            let qx = max(0, abs(Double(x) + (Double(sx) + 0.5) / 4 - halfWidth) - (halfWidth - radius))
                            let qy = max(0, abs(Double(y) + (Double(sy) + 0.5) / 4 - halfHeight) - (halfHeight - radius))
                            if qx * qx + qy * qy <= radius * radius { inside += 1 }
                        }
                    }
                    guard inside < 16 else { continue }
                    let i = (y * width + x) * 4
                    for c in 0..<4 { p[i + c] = UInt8((Int(p[i + c]) * inside + 8) / 16) }
                }
            }
        }
    }
}
