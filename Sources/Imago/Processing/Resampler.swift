import Foundation

/// High-quality resampling of premultiplied RGBA bitmaps.
///
/// Two stages, as the best peers do: an exact area average by a whole factor for
/// large reductions (cheap, and nothing aliases), then a separable Catmull-Rom filter
/// for the last step of at most about 4× (sharp, no blur). Work happens on
/// premultiplied values, so transparent pixels contribute no colour and edges get no
/// dark fringe; after the filter's negative lobes each colour is clamped to its
/// alpha, so the result is valid premultiplied data.
enum Resampler {
    /// A region of the source, in pixels, fractional edges allowed.
    struct Region {
        var x: Double, y: Double, width: Double, height: Double
    }

    /// The Catmull-Rom cubic. Lanczos-3 was tried first: it is a shade sharper, but
    /// rings more, lands further from the exact area average (36–43 dB against 40–46
    /// dB on the test photos) and, with a support of 3 instead of 2, made the whole
    /// 256 px thumbnail path 12 % slower.
    static let support = 2.0

    static func kernel(_ x: Double) -> Double {
        let x = abs(x)
        if x < 1 { return 1.5 * x * x * x - 2.5 * x * x + 1 }
        if x < 2 { return -0.5 * x * x * x + 2.5 * x * x - 4 * x + 2 }
        return 0
    }

    /// Pixels in memory someone else owns (a bitmap's array, a codec's canvas), in
    /// the bitmap layout: premultiplied RGBA rows of `bytesPerRow` bytes.
    struct Pixels {
        let base: UnsafePointer<UInt8>
        let width: Int
        let height: Int
        let bytesPerRow: Int
    }

    /// Resamples `region` of `source` to `width` × `height`.
    static func resample(_ source: Bitmap, region: Region, width: Int, height: Int) -> Bitmap {
        source.pixels.withUnsafeBufferPointer { pixels in
            resample(Pixels(base: pixels.baseAddress!, width: source.width, height: source.height, bytesPerRow: source.bytesPerRow),
                     region: region, width: width, height: height)
        }
    }

    /// Resamples `region` of pixels in place (a codec's canvas), reading them
    /// without a copy, a row at a time through a `Stream`.
    static func resample(_ source: Pixels, region: Region, width: Int, height: Int) -> Bitmap {
        let stream = Stream(sourceWidth: source.width, sourceHeight: source.height, region: region, width: width, height: height)
        for y in stream.sourceRows { stream.append(row: y, source.base + y &* source.bytesPerRow) }
        return stream.finish()
    }

    /// Which source pixels, with which weights, make each output pixel along one axis.
    ///
    /// Every output pixel reads the same number of source pixels, `2 × pairs` (padded
    /// with zero weights): the loops then run a count fixed for the whole pass, which
    /// the compiler unrolls. Weights are fixed-point with `weightBits` fractional
    /// bits, in pairs as the multiply-add of two 16-bit lanes wants them:
    /// (w₀, w₁, w₀, w₁, w₀, w₁, w₀, w₁) for the four channels of two neighbours.
    struct Contributions {
        static let weightBits = 14
        /// The first source pixel of each output pixel.
        var starts: [Int] = []
        /// `pairs` weight pairs per output pixel.
        var weights: [SIMD8<Int16>] = []
        var pairs = 1
        /// One past the last source pixel any output pixel reads with a weight.
        var end = 0

        init(start: Double, length: Double, limit: Int, outputs: Int) {
            let scale = length / Double(outputs)
            // Widening the kernel when reducing makes it a low-pass at the output's
            // frequency; when enlarging it stays at the source's.
            let filterScale = max(scale, 1)
            let radius = Resampler.support * filterScale
            let inverseScale = 1 / filterScale
            let reach = Int((radius * 2).rounded(.up)) + 2
            // First the taps of every output pixel in fixed point, `reach` slots each.
            var fixed = [Int32](repeating: 0, count: reach * outputs)
            var counts = [Int](repeating: 0, count: outputs)
            starts = [Int](repeating: 0, count: outputs)
            let one = Double(1 << Self.weightBits)
            var values = [Double](repeating: 0, count: reach)
            for i in 0..<outputs {
                let center = start + (Double(i) + 0.5) * scale
                // Floor and ceiling by conversion: without SSE4.1 `rounded` is a libm call,
                // and these tables are a tenth of a small thumbnail's resampling.
                let low = center - radius, high = center + radius
                var first = low <= 0 ? 0 : Int(low)
                let hi = min(limit, Int(high) + (Double(Int(high)) < high ? 1 : 0), first + reach)
                var count = 0, sum = 0.0
                for j in first..<max(first, hi) {
                    let w = Resampler.kernel((Double(j) + 0.5 - center) * inverseScale)
                    if w == 0 && count == 0 { first += 1; continue }
                    values[count] = w
                    count += 1
                    sum += w
                }
                while count > 0 && values[count - 1] == 0 { count -= 1 }
                guard count > 0, abs(sum) > 1e-12 else {
                    // Nothing in reach (a region at the very edge): take the nearest pixel.
                    starts[i] = min(limit - 1, max(0, Int(center)))
                    counts[i] = 1
                    fixed[i * reach] = 1 << Self.weightBits
                    continue
                }
                // Rounded to fixed point, with the rounding error given to the largest
                // weight so that the weights sum to exactly one: flat colours stay exact.
                var total: Int32 = 0, largest = 0
                let normal = one / sum
                for k in 0..<count {
                    let w = Int32(values[k] * normal + (values[k] < 0 ? -0.5 : 0.5))
                    fixed[i * reach + k] = w
                    total += w
                    if abs(w) > abs(fixed[i * reach + largest]) { largest = k }
                }
                fixed[i * reach + largest] += Int32(1 << Self.weightBits) - total
                starts[i] = first
                counts[i] = count
            }
            pairs = ((counts.max() ?? 1) + 1) / 2
            weights = [SIMD8<Int16>](repeating: .zero, count: pairs * outputs)
            for i in 0..<outputs {
                end = max(end, starts[i] + counts[i])
                for pair in 0..<pairs {
                    let k = 2 * pair
                    let w0 = k < counts[i] ? Int16(clamping: fixed[i * reach + k]) : 0
                    let w1 = k + 1 < counts[i] ? Int16(clamping: fixed[i * reach + k + 1]) : 0
                    weights[i * pairs + pair] = SIMD8(w0, w1, w0, w1, w0, w1, w0, w1)
                }
            }
        }

        /// The same tables with one more output pixel that reads nothing: the passes
        /// make output pixels two at a time.
        func paddedToEven() -> Contributions {
            guard starts.count % 2 == 1 else { return self }
            var padded = self
            padded.starts.append(starts.last!)
            padded.weights.append(contentsOf: repeatElement(.zero, count: pairs))
            return padded
        }
    }
}

extension Resampler {
    /// Lanes 2i and 2i+1 of `a` times those of `b`, summed: SSE2's `pmaddwd`, which
    /// the compiler finds in this pattern.
    @inline(__always)
    static func multiplyAdd(_ a: SIMD8<Int16>, _ b: SIMD8<Int16>) -> SIMD4<Int32> {
        let products = SIMD8<Int32>(truncatingIfNeeded: a) &* SIMD8<Int32>(truncatingIfNeeded: b)
        return products.evenHalf &+ products.oddHalf
    }

    /// Σ multiplyAdd(pixels[k × step], weights[k]) for k < `pairs`, plus `rounding`.
    @inline(__always)
    static func sum(_ pixels: UnsafePointer<SIMD8<Int16>>, step: Int, _ weights: UnsafePointer<SIMD8<Int16>>, pairs: Int, rounding: Int32) -> SIMD4<Int32> {
        var total = SIMD4<Int32>(repeating: rounding)
        for pair in 0..<pairs { total &+= multiplyAdd(pixels[pair &* step], weights[pair]) }
        return total
    }

    /// Clamped to 16 bits (`packssdw`).
    @inline(__always)
    static func saturated(_ value: SIMD4<Int32>) -> SIMD4<Int16> {
        var v = value
        v.replace(with: -32768, where: v .< -32768)
        v.replace(with: 32767, where: v .> 32767)
        return SIMD4<Int16>(truncatingIfNeeded: v)
    }

    /// Two finished pixels as bytes: each colour at most its pixel's alpha (ringing can
    /// push a colour above it, and premultiplied data must never have that), all in
    /// 0…255. The sums are a few hundred at most (16-bit rows, weights summing to one),
    /// so narrowing them to 16 bits needs no saturation; then each pixel's alpha is
    /// spread over its lanes, one `pminsw` bounds the colours and `packuswb` the range.
    /// Clamping the 32-bit sums first, as SSE2 has no 32-bit minimum, took a third of
    /// the vertical pass.
    @inline(__always)
    static func finished(_ left: SIMD4<Int32>, _ right: SIMD4<Int32>) -> SIMD8<UInt8> {
        let values = SIMD8<Int16>(truncatingIfNeeded: SIMD8(lowHalf: left, highHalf: right))
        // 32-bit lanes 1 and 3 hold (blue, alpha) of the two pixels; picking lanes by
        // index from the 16-bit vector instead compiles to scalar moves.
        let words = unsafeBitCast(values, to: SIMD4<UInt32>.self)
        let alphas = SIMD4<UInt32>(words[1], words[1], words[3], words[3]) &>> 16
        var bounded = pointwiseMin(values, unsafeBitCast(alphas | alphas &<< 16, to: SIMD8<Int16>.self))
        let zero = SIMD8<Int16>(repeating: 0), top = SIMD8<Int16>(repeating: 255)
        bounded.replace(with: zero, where: bounded .< zero)
        bounded.replace(with: top, where: bounded .> top)
        return SIMD8<UInt8>(truncatingIfNeeded: bounded)
    }

    /// Calls `body` with `pairs` as a constant for the common counts, so that the
    /// compiler unrolls the loops over taps inside it.
    @inline(__always)
    static func withPairCount(_ pairs: Int, _ body: (Int) -> Void) {
        switch pairs {
        case 1: body(1)
        case 2: body(2)
        case 3: body(3)
        case 4: body(4)
        default: body(pairs)
        }
    }
}

extension Resampler.Contributions {
    private struct Geometry: Hashable {
        let start: Double, length: Double, limit: Int, outputs: Int, even: Bool
    }

    /// Tables made lately, by geometry. A page of photos from one camera, or a grid
    /// of thumbnails, asks for the same few again and again, and making them (a
    /// kernel evaluated per tap, rounded so each pixel's weights sum to one) cost
    /// a tenth as much as the filtering of a 256 px thumbnail itself.
    private static let recent = Locked<[Geometry: Self]>([:])
    /// Geometries kept: more than a screen of differently shaped images asks for.
    static let recentLimit = 32

    /// The tables for this geometry (padded to an even count of outputs when `even`),
    /// made once and kept among the recent ones.
    static func cached(start: Double, length: Double, limit: Int, outputs: Int, even: Bool = false) -> Self {
        let geometry = Geometry(start: start, length: length, limit: limit, outputs: outputs, even: even)
        if let kept = recent.withLock({ $0[geometry] }) { return kept }
        let made = Self(start: start, length: length, limit: limit, outputs: outputs)
        let tables = even ? made.paddedToEven() : made
        recent.withLock {
            if $0.count >= recentLimit { $0.removeAll(keepingCapacity: true) }
            $0[geometry] = tables
        }
        return tables
    }

    /// The tables as raw buffers, so the inner loops run without bounds checks.
    func withUnsafeBuffers<R>(
        _ body: (UnsafeBufferPointer<Int>, UnsafeBufferPointer<SIMD8<Int16>>, Int) -> R
    ) -> R {
        starts.withUnsafeBufferPointer { starts in
            weights.withUnsafeBufferPointer { weights in body(starts, weights, pairs) }
        }
    }
}

extension Bitmap {
    /// The bitmap resampled to exactly `width` × `height` (aspect ratio not kept).
    public func resized(width: Int, height: Int) -> Bitmap {
        if width == self.width && height == self.height { return self }
        return Resampler.resample(
            self, region: .init(x: 0, y: 0, width: Double(self.width), height: Double(self.height)),
            width: width, height: height)
    }

    /// The bitmap fitted to `target`: scaled with its aspect ratio kept, and for
    /// `aspectFill` cropped to the box, evenly on both sides. Only the cropped region
    /// is resampled.
    public func fitted(to target: TargetSize) -> Bitmap {
        fitted(to: target, sourceWidth: width, sourceHeight: height)
    }

    /// The bitmap, a reduced decode of a `sourceWidth` × `sourceHeight` source (a JPEG
    /// decoded at 1/8 scale), fitted to `target` at the size the source itself would
    /// get: the reduced size is rounded up, and laid out in its place it would give a
    /// pixel less (1800×2700 at 256 px: 225×338, then 170×256, against 171×256).
    func fitted(to target: TargetSize, sourceWidth: Int, sourceHeight: Int) -> Bitmap {
        let layout = target.layout(sourceWidth: sourceWidth, sourceHeight: sourceHeight)
        if layout.scaledWidth == width && layout.scaledHeight == height {
            // Already at scale: only a crop (or nothing), which must not blur by
            // resampling.
            return cropped(
                x: (width - layout.outputWidth) / 2, y: (height - layout.outputHeight) / 2,
                width: layout.outputWidth, height: layout.outputHeight)
        }
        let region = layout.sourceRegion(sourceWidth: width, sourceHeight: height)
        return Resampler.resample(self, region: region, width: layout.outputWidth, height: layout.outputHeight)
    }
}

extension Resampler {
    /// Pixels in place (a codec's canvas) fitted to `target` as `Bitmap.fitted(to:)`
    /// fits a bitmap, into a new bitmap of the output size: the one copy there is.
    static func fitted(_ source: Pixels, to target: TargetSize) -> Bitmap {
        let layout = target.layout(sourceWidth: source.width, sourceHeight: source.height)
        if layout.scaledWidth == source.width && layout.scaledHeight == source.height {
            let x = (source.width - layout.outputWidth) / 2, y = (source.height - layout.outputHeight) / 2
            return try! Bitmap.make(width: layout.outputWidth, height: layout.outputHeight) { out in
                for row in 0..<layout.outputHeight {
                    (out.baseAddress! + row * layout.outputWidth * 4).copyMemory(
                        from: source.base + (y + row) * source.bytesPerRow + x * 4, byteCount: layout.outputWidth * 4)
                }
            }
        }
        let region = layout.sourceRegion(sourceWidth: source.width, sourceHeight: source.height)
        return resample(source, region: region, width: layout.outputWidth, height: layout.outputHeight)
    }

    /// A stream that fits a source of `sourceWidth` × `sourceHeight`, given a row at
    /// a time, to `target` as `Bitmap.fitted(to:)` would; nil when fitting does not
    /// scale (the image already fits, or is only cropped).
    static func stream(fitting target: TargetSize, sourceWidth: Int, sourceHeight: Int) -> Stream? {
        stream(fitting: target, reducedWidth: sourceWidth, reducedHeight: sourceHeight, sourceWidth: sourceWidth, sourceHeight: sourceHeight)
    }

    /// A stream that fits a reduced decode (`reducedWidth` × `reducedHeight`) of a
    /// source of `sourceWidth` × `sourceHeight` to `target` as
    /// `Bitmap.fitted(to:sourceWidth:sourceHeight:)` fits the whole reduced bitmap;
    /// nil when that does not scale.
    static func stream(fitting target: TargetSize, reducedWidth: Int, reducedHeight: Int, sourceWidth: Int, sourceHeight: Int) -> Stream? {
        let layout = target.layout(sourceWidth: sourceWidth, sourceHeight: sourceHeight)
        guard layout.scaledWidth != reducedWidth || layout.scaledHeight != reducedHeight else { return nil }
        return Stream(
            sourceWidth: reducedWidth, sourceHeight: reducedHeight,
            region: layout.sourceRegion(sourceWidth: reducedWidth, sourceHeight: reducedHeight),
            width: layout.outputWidth, height: layout.outputHeight)
    }
}

extension TargetSize.Layout {
    /// The part of the source the output shows, in source pixels: all of it for a
    /// fit, the centre for a fill.
    func sourceRegion(sourceWidth: Int, sourceHeight: Int) -> Resampler.Region {
        let scaleX = Double(scaledWidth) / Double(sourceWidth)
        let scaleY = Double(scaledHeight) / Double(sourceHeight)
        let regionWidth = Double(outputWidth) / scaleX
        let regionHeight = Double(outputHeight) / scaleY
        return Resampler.Region(
            x: (Double(sourceWidth) - regionWidth) / 2, y: (Double(sourceHeight) - regionHeight) / 2,
            width: regionWidth, height: regionHeight)
    }
}

extension Bitmap {
    /// The `width` × `height` rectangle whose top left is (`x`, `y`); it must lie
    /// inside the bitmap.
    public func cropped(x: Int, y: Int, width: Int, height: Int) -> Bitmap {
        precondition(x >= 0 && y >= 0 && width > 0 && height > 0 && x + width <= self.width && y + height <= self.height,
                     "crop rectangle outside the bitmap")
        if x == 0 && y == 0 && width == self.width && height == self.height { return self }
        return try! Bitmap.make(width: width, height: height) { out in
            pixels.withUnsafeBytes { source in
                for row in 0..<height {
                    let from = (y + row) * bytesPerRow + x * 4
                    (out.baseAddress! + row * width * 4).copyMemory(from: source.baseAddress! + from, byteCount: width * 4)
                }
            }
        }
    }
}

extension DecodedImage {
    /// Every frame fitted to `target`; the image itself when it already fits. The
    /// first frame is fitted now, an animation's other frames as they are decoded.
    public func fitted(to target: TargetSize) -> DecodedImage {
        let layout = target.layout(sourceWidth: width, sourceHeight: height)
        if layout.isIdentity(sourceWidth: width, sourceHeight: height) { return self }
        let first = bitmap.fitted(to: target)
        return DecodedImage(
            firstFrame: Frame(bitmap: first, duration: firstFrame.duration),
            animation: animation?.mapped(width: first.width, height: first.height) { $0.fitted(to: target) },
            loopCount: loopCount, format: format, orientation: orientation, isPartial: isPartial)
    }
}
