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
    /// without a copy.
    static func resample(_ source: Pixels, region: Region, width: Int, height: Int) -> Bitmap {
        precondition(width > 0 && height > 0, "resampling to an empty size")
        // Area-average by whole factors while the reduction stays above 2× after it,
        // leaving the filter a ratio between 2 and 4: the cost of the filter no longer
        // grows with the reduction, and the box average loses nothing at that ratio.
        let factorX = max(1, Int(region.width / Double(width) / 2))
        let factorY = max(1, Int(region.height / Double(height) / 2))
        guard factorX > 1 || factorY > 1 else { return filtered(source, region: region, width: width, height: height) }
        let x0 = Int(region.x.rounded(.down)), y0 = Int(region.y.rounded(.down))
        let x1 = min(source.width, Int((region.x + region.width).rounded(.up)))
        let y1 = min(source.height, Int((region.y + region.height).rounded(.up)))
        let reduced = boxReduced(source, x0: x0, y0: y0, x1: x1, y1: y1, factorX: factorX, factorY: factorY)
        let reducedRegion = Region(
            x: (region.x - Double(x0)) / Double(factorX), y: (region.y - Double(y0)) / Double(factorY),
            width: region.width / Double(factorX), height: region.height / Double(factorY))
        return reduced.pixels.withUnsafeBufferPointer { pixels in
            filtered(Pixels(base: pixels.baseAddress!, width: reduced.width, height: reduced.height, bytesPerRow: reduced.bytesPerRow),
                     region: reducedRegion, width: width, height: height)
        }
    }

    /// The exact average of each `factorX` × `factorY` block of the pixels in
    /// [x0, x1) × [y0, y1); blocks cut by the edge average what they hold.
    static func boxReduced(_ source: Pixels, x0: Int, y0: Int, x1: Int, y1: Int, factorX: Int, factorY: Int) -> Bitmap {
        let width = (x1 - x0 + factorX - 1) / factorX
        let height = (y1 - y0 + factorY - 1) / factorY
        return try! Bitmap.make(width: width, height: height) { out in
            let destination = out.bindMemory(to: UInt8.self)
            var sums = [UInt32](repeating: 0, count: width * 4)
            do {
                let pixels = source.base
                for oy in 0..<height {
                    for i in sums.indices { sums[i] = 0 }
                    let rowStart = y0 + oy * factorY, rowEnd = min(y1, rowStart + factorY)
                    for y in rowStart..<rowEnd {
                        var s = y * source.bytesPerRow + x0 * 4
                        for ox in 0..<width {
                            let count = min(factorX, x1 - x0 - ox * factorX)
                            var r: UInt32 = 0, g: UInt32 = 0, b: UInt32 = 0, a: UInt32 = 0
                            for _ in 0..<count {
                                r &+= UInt32(pixels[s]); g &+= UInt32(pixels[s + 1])
                                b &+= UInt32(pixels[s + 2]); a &+= UInt32(pixels[s + 3])
                                s += 4
                            }
                            sums[ox * 4] &+= r; sums[ox * 4 + 1] &+= g
                            sums[ox * 4 + 2] &+= b; sums[ox * 4 + 3] &+= a
                        }
                    }
                    let rows = UInt32(rowEnd - rowStart)
                    for ox in 0..<width {
                        let n = rows * UInt32(min(factorX, x1 - x0 - ox * factorX))
                        let d = (oy * width + ox) * 4
                        for c in 0..<4 { destination[d + c] = UInt8((sums[ox * 4 + c] + n / 2) / n) }
                    }
                }
            }
        }
    }

    /// Which source pixels, with which weights, make each output pixel along one axis.
    struct Contributions {
        var starts: [Int] = []
        var counts: [Int] = []
        /// `stride` weights per output pixel, the first `counts[i]` of them used.
        var weights: [Float] = []
        var stride = 0

        init(start: Double, length: Double, limit: Int, outputs: Int) {
            let scale = length / Double(outputs)
            // Widening the kernel when reducing makes it a low-pass at the output's
            // frequency; when enlarging it stays at the source's.
            let filterScale = max(scale, 1)
            let radius = Resampler.support * filterScale
            stride = Int((radius * 2).rounded(.up)) + 2
            weights = [Float](repeating: 0, count: stride * outputs)
            for i in 0..<outputs {
                let center = start + (Double(i) + 0.5) * scale
                let lo = max(0, Int((center - radius).rounded(.down)))
                let hi = min(limit, Int((center + radius).rounded(.up)), lo + stride)
                var sum = 0.0
                var taps: [Double] = []
                for j in lo..<max(lo, hi) {
                    let w = Resampler.kernel((Double(j) + 0.5 - center) / filterScale)
                    taps.append(w)
                    sum += w
                }
                if taps.isEmpty || abs(sum) < 1e-12 {
                    // Nothing in reach (a region at the very edge): take the nearest pixel.
                    starts.append(min(limit - 1, max(0, Int(center))))
                    counts.append(1)
                    weights[i * stride] = 1
                    continue
                }
                starts.append(lo)
                counts.append(taps.count)
                for (k, w) in taps.enumerated() { weights[i * stride + k] = Float(w / sum) }
            }
        }
    }

    static func filtered(_ source: Pixels, region: Region, width: Int, height: Int) -> Bitmap {
        let horizontal = Contributions(start: region.x, length: region.width, limit: source.width, outputs: width)
        let vertical = Contributions(start: region.y, length: region.height, limit: source.height, outputs: height)
        let firstRow = vertical.starts.min() ?? 0
        let lastRow = zip(vertical.starts, vertical.counts).map { $0 + $1 }.max() ?? 0
        let firstColumn = horizontal.starts.min() ?? 0
        let lastColumn = zip(horizontal.starts, horizontal.counts).map { $0 + $1 }.max() ?? 0

        // Horizontal pass over only the rows the vertical pass will read.
        // Left uninitialised: the pass below writes every element, and zeroing it
        // first was a tenth of a small thumbnail's resampling.
        var intermediate = [SIMD4<Float>](unsafeUninitializedCapacity: (lastRow - firstRow) * width) { _, count in
            count = (lastRow - firstRow) * width
        }
        var row = [SIMD4<Float>](repeating: .zero, count: source.width)
        do {
            let pixels = source.base
            intermediate.withUnsafeMutableBufferPointer { inter in
                row.withUnsafeMutableBufferPointer { row in
                    horizontal.withUnsafeBuffers { starts, counts, weights, stride in
                        for y in firstRow..<lastRow {
                            let base = y * source.bytesPerRow
                            // One 4-byte load and a vector widening per pixel; lane by
                            // lane, this loop took an eighth of a thumbnail's time.
                            let raw = UnsafeRawPointer(pixels + base)
                            for x in firstColumn..<lastColumn {
                                row[x] = SIMD4<Float>(raw.loadUnaligned(fromByteOffset: x &* 4, as: SIMD4<UInt8>.self))
                            }
                            // Pointer walks with wrapping arithmetic: this loop is the
                            // resampler's hot spot, and overflow checks cost a third.
                            var out = inter.baseAddress! + (y - firstRow) &* width
                            var weight = weights.baseAddress!
                            for x in 0..<width {
                                out.pointee = Self.dot(row.baseAddress! + starts[x], step: 1, weight, count: counts[x])
                                out += 1
                                weight += stride
                            }
                        }
                    }
                }
            }
        }

        // Vertical pass.
        return try! Bitmap.make(width: width, height: height) { out in
            let destination = out.bindMemory(to: UInt8.self)
            intermediate.withUnsafeBufferPointer { inter in
                vertical.withUnsafeBuffers { starts, counts, weights, stride in
                    for y in 0..<height {
                        // Each output pixel sums its taps in registers, reading down
                        // the few intermediate rows it needs (they stay in L1).
                        let first = inter.baseAddress! + (starts[y] - firstRow) &* width
                        let taps = weights.baseAddress! + y &* stride
                        let count = counts[y]
                        var d = y &* width &* 4
                        for x in 0..<width {
                            var sum = Self.dot(first + x, step: width, taps, count: count)
                            // Clamped by masked replacement, which stays in vector
                            // registers (`clamped` and `pointwiseMin` on floats go lane by
                            // lane to honour NaN, and cost a third of the pass). Ringing
                            // can push a colour above its alpha; premultiplied data must
                            // never have that, hence the alpha bound.
                            sum.replace(with: 0, where: sum .< 0)
                            sum.replace(with: 255, where: sum .> 255)
                            sum.replace(with: SIMD4(repeating: sum[3]), where: sum .> sum[3])
                            // Rounding by the 2²³ trick: adding it to a value in
                            // [0, 255] leaves the rounded integer in the low mantissa bits.
                            let rounded = unsafeBitCast(sum + 8_388_608, to: SIMD4<UInt32>.self)
                            UnsafeMutableRawPointer(destination.baseAddress! + d).storeBytes(
                                of: SIMD4<UInt8>(truncatingIfNeeded: rounded), as: SIMD4<UInt8>.self)
                            d &+= 4
                        }
                    }
                }
            }
        }
    }
}

extension Resampler {
    /// Σ `pixels[i × step] × weights[i]` for i < `count`, in two interleaved sums: one
    /// sum makes every tap wait for the previous addition, and the filter loops spent
    /// most of their time waiting.
    @inline(__always)
    static func dot(_ pixels: UnsafePointer<SIMD4<Float>>, step: Int, _ weights: UnsafePointer<Float>, count: Int) -> SIMD4<Float> {
        var even = SIMD4<Float>.zero, odd = SIMD4<Float>.zero
        var pixel = pixels, weight = weights, left = count
        while left >= 2 {
            even += pixel.pointee * weight.pointee
            odd += (pixel + step).pointee * (weight + 1).pointee
            pixel += step &* 2
            weight += 2
            left &-= 2
        }
        if left == 1 { even += pixel.pointee * weight.pointee }
        return even + odd
    }
}

extension Resampler.Contributions {
    /// The tables as raw buffers, so the inner loops run without bounds checks.
    func withUnsafeBuffers<R>(
        _ body: (UnsafeBufferPointer<Int>, UnsafeBufferPointer<Int>, UnsafeBufferPointer<Float>, Int) -> R
    ) -> R {
        starts.withUnsafeBufferPointer { starts in
            counts.withUnsafeBufferPointer { counts in
                weights.withUnsafeBufferPointer { weights in body(starts, counts, weights, stride) }
            }
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
        let layout = target.layout(sourceWidth: width, sourceHeight: height)
        if layout.isIdentity(sourceWidth: width, sourceHeight: height) { return self }
        if layout.scaledWidth == width && layout.scaledHeight == height {
            // Already at scale: only a crop, which must not blur by resampling.
            return cropped(
                x: (width - layout.outputWidth) / 2, y: (height - layout.outputHeight) / 2,
                width: layout.outputWidth, height: layout.outputHeight)
        }
        let scaleX = Double(layout.scaledWidth) / Double(width)
        let scaleY = Double(layout.scaledHeight) / Double(height)
        let regionWidth = Double(layout.outputWidth) / scaleX
        let regionHeight = Double(layout.outputHeight) / scaleY
        let region = Resampler.Region(
            x: (Double(width) - regionWidth) / 2, y: (Double(height) - regionHeight) / 2,
            width: regionWidth, height: regionHeight)
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
        let scaleX = Double(layout.scaledWidth) / Double(source.width)
        let scaleY = Double(layout.scaledHeight) / Double(source.height)
        let regionWidth = Double(layout.outputWidth) / scaleX
        let regionHeight = Double(layout.outputHeight) / scaleY
        let region = Region(
            x: (Double(source.width) - regionWidth) / 2, y: (Double(source.height) - regionHeight) / 2,
            width: regionWidth, height: regionHeight)
        return resample(source, region: region, width: layout.outputWidth, height: layout.outputHeight)
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
