// A Gaussian blur as three box blurs in each direction: the approximation browsers
// and Kingfisher (vImage's box convolution, three times) use, whose cost does not
// grow with the radius. Each box is a running sum over a row, so a row of any width
// costs a few vector operations a pixel; columns are blurred as the rows of the
// transposed image, so every pass reads memory in order.

extension ImageProcessors {
    /// Blurs the image with a Gaussian of standard deviation `radius` pixels, as CSS
    /// `blur()` and Core Image's `CIGaussianBlur` measure it (Nuke's `GaussianBlur`,
    /// Kingfisher's `BlurImageProcessor`, SDWebImage's `SDImageBlurTransformer`).
    ///
    /// Approximated by three box blurs in each direction (within a few levels of a
    /// true Gaussian); pixels past the edges repeat the edge, so the borders do not
    /// darken. Works on premultiplied values, so transparent pixels lend no colour.
    public struct GaussianBlur: ImageProcessing {
        /// The standard deviation in pixels; below about 0.6 the image is unchanged.
        package let radius: Double

        /// Blurs with a Gaussian of standard deviation `radius` pixels (multiply
        /// points by the screen scale); negative radii count as 0.
        public init(radius: Double) {
            self.radius = radius.isFinite ? max(0, min(radius, Self.maximumRadius)) : 0
        }

        /// Past this radius a box would be wider than any bitmap is tall.
        static let maximumRadius = 2000.0

        public var identifier: String { "imago.gaussianBlur(\(radius))" }

        public func process(_ bitmap: Bitmap) -> Bitmap {
            let boxes = Self.boxRadii(sigma: radius)
            guard boxes.contains(where: { $0 > 0 }) else { return bitmap }
            return bitmap.boxBlurred(radii: boxes)
        }

        /// The radii of three centred boxes whose successive blurs approximate a
        /// Gaussian of `sigma` (odd widths `2r + 1`; the variances add up to
        /// σ², the widths differing by at most 2).
        static func boxRadii(sigma: Double) -> [Int] {
            let n = 3.0
            let ideal = (12 * sigma * sigma / n + 1).squareRoot()
            var lower = Int(ideal.rounded(.down))
            if lower % 2 == 0 { lower -= 1 }
            let l = Double(lower)
            let m = ((12 * sigma * sigma - n * l * l - 4 * n * l - 3 * n) / (-4 * l - 4)).rounded()
            return (0..<3).map { Double($0) < m ? (lower - 1) / 2 : (lower + 1) / 2 }
        }
    }
}

extension Bitmap {
    /// The bitmap blurred by successive box blurs of `radii`, horizontally then
    /// vertically, with values rounded to bytes once in each direction.
    func boxBlurred(radii: [Int]) -> Bitmap {
        let (w, h) = (width, height)
        var across = [UInt8](repeating: 0, count: w * h * 4)
        var transposed = [UInt8](repeating: 0, count: w * h * 4)
        pixels.withUnsafeBytes { source in
            across.withUnsafeMutableBytes { out in
                BoxBlur.blurRows(source, stride: bytesPerRow, into: out, width: w, height: h, radii: radii)
            }
        }
        BoxBlur.transpose(across, into: &transposed, width: w, height: h)
        transposed.withUnsafeBytes { source in
            across.withUnsafeMutableBytes { out in
                BoxBlur.blurRows(source, stride: h * 4, into: out, width: h, height: w, radii: radii)
            }
        }
        return try! Bitmap.make(width: w, height: h, colorSpace: colorSpace) { out in
            across.withUnsafeBytes { BoxBlur.transpose($0, into: out, width: h, height: w) }
        }
    }
}

/// The row blur and the transposition behind `GaussianBlur`.
enum BoxBlur {
    /// Blurs each of `height` rows of `width` pixels (`stride` bytes apart in
    /// `source`) by the boxes of `radii` in turn, into tightly packed rows of `out`.
    static func blurRows(
        _ source: UnsafeRawBufferPointer, stride: Int, into out: UnsafeMutableRawBufferPointer,
        width: Int, height: Int, radii: [Int]
    ) {
        var a = [SIMD4<Float>](repeating: .zero, count: width)
        var b = a
        a.withUnsafeMutableBufferPointer { a in
            b.withUnsafeMutableBufferPointer { b in
                for y in 0..<height {
                    let row = source.baseAddress! + y * stride
                    // Lane by lane: SIMD's generic conversions between element types
                    // are not specialised and cost many times more.
                    for x in 0..<width {
                        let p = row + x * 4
                        a[x] = SIMD4(Float(p.load(fromByteOffset: 0, as: UInt8.self)), Float(p.load(fromByteOffset: 1, as: UInt8.self)),
                                     Float(p.load(fromByteOffset: 2, as: UInt8.self)), Float(p.load(fromByteOffset: 3, as: UInt8.self)))
                    }
                    var (from, to) = (a, b)
                    for radius in radii where radius > 0 {
                        box(from, into: to, radius: radius)
                        swap(&from, &to)
                    }
                    let target = (out.baseAddress! + y * width * 4).assumingMemoryBound(to: UInt8.self)
                    for x in 0..<width {
                        // Rounded, and colour never above alpha, whatever the float
                        // sums' last bits did.
                        let v = from[x] + 0.5
                        let alpha = min(v.w, 255.5)
                        target[x * 4] = UInt8(min(v.x, alpha))
                        target[x * 4 + 1] = UInt8(min(v.y, alpha))
                        target[x * 4 + 2] = UInt8(min(v.z, alpha))
                        target[x * 4 + 3] = UInt8(alpha)
                    }
                }
            }
        }
    }

    /// One box blur of radius `radius` along a row, edges repeated: a running sum
    /// that gains the pixel entering the window and loses the one leaving it.
    @inline(__always)
    static func box(_ input: UnsafeMutableBufferPointer<SIMD4<Float>>, into output: UnsafeMutableBufferPointer<SIMD4<Float>>, radius: Int) {
        let n = input.count
        let last = n - 1
        let scale = 1 / Float(2 * radius + 1)
        var sum = SIMD4<Float>.zero
        for i in -radius...radius { sum += input[min(max(i, 0), last)] }
        for x in 0..<n {
            output[x] = sum * scale
            sum += input[min(x + radius + 1, last)] - input[max(x - radius, 0)]
        }
    }

    /// Writes the `width` × `height` RGBA image `source` transposed (`height` ×
    /// `width`) into `out`, in tiles so both sides stay in cache.
    static func transpose(_ source: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, width: Int, height: Int) {
        let s = source.bindMemory(to: UInt32.self)
        let d = out.bindMemory(to: UInt32.self)
        let tile = 32
        for ty in Swift.stride(from: 0, to: height, by: tile) {
            for tx in Swift.stride(from: 0, to: width, by: tile) {
                for y in ty..<min(ty + tile, height) {
                    for x in tx..<min(tx + tile, width) {
                        d[x * height + y] = s[y * width + x]
                    }
                }
            }
        }
    }

    static func transpose(_ source: [UInt8], into out: inout [UInt8], width: Int, height: Int) {
        source.withUnsafeBytes { s in out.withUnsafeMutableBytes { transpose(s, into: $0, width: width, height: height) } }
    }
}
