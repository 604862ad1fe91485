extension Resampler {
    /// The resampler's two stages fed one source row at a time, top to bottom: what
    /// every resampling runs through, and what lets a decoder that produces rows
    /// (libpng) make a thumbnail without the whole image in memory.
    ///
    /// It holds the area average's running sums for one of its rows, a window of the
    /// horizontally filtered rows that the output rows still to be made read, and the
    /// output: each output row is made as soon as its last source row is filtered.
    /// Memory follows the output, not the source.
    final class Stream {
        /// Source rows the output reads; others may be left out.
        let sourceRows: Range<Int>

        // The area average by whole factors, when the reduction is large: the source
        // window it averages and the size of what it makes. Factors of 1 pass rows
        // through unchanged.
        private let factorX: Int, factorY: Int
        private let x0: Int, x1: Int, y0: Int, y1: Int
        private let boxWidth: Int, boxHeight: Int
        private var sums: [UInt32]
        private var boxRow: [UInt8]
        /// The row of the average being summed; rows before it are made.
        private var boxIndex = 0
        private var lastSourceRow = -1

        // The separable filter over the average's rows (or the source's), in 16-bit
        // fixed point: each multiply-add instruction does two taps of all four
        // channels (SSE2's `pmaddwd`), which made it more than twice as fast as the
        // same filter in floats (320×213 → 256×171 in 258 µs, not 575). Horizontal
        // sums keep 6 fractional bits between the passes, so the only rounding that
        // shows is the final one (at most one level off the exact filter).
        private let width: Int, height: Int
        private let horizontal: Contributions, vertical: Contributions
        /// The width of the rows the filter reads (the average's, or the source's).
        private let filterWidth: Int
        private let rowWidth: Int, firstRow: Int, realRows: Int
        private let firstColumn: Int, lastColumn: Int
        /// Filtered rows `windowBase ..< windowBase + windowRows` (counted from
        /// `firstRow`), of which those below `filtered` are written. Holding every
        /// filtered row until the end took as much memory again as the source's
        /// canvas at a thumbnail's usual reduction (256 × 495 rows of 8 bytes a pixel
        /// for a 4000 px photo at 1/8).
        private var intermediate: [SIMD4<Int16>]
        private let windowRows: Int
        private var windowBase = 0
        /// The filtered rows the vertical pass reads in all, zero rows for its padding
        /// taps last.
        private let totalRows: Int
        /// The first filtered row any output row from y on reads: rows before it are
        /// no longer needed once output row y is next.
        private let neededFrom: [Int]
        /// The output, made row by row; rows before `nextOutput` are done.
        private var output: [UInt8]
        private var nextOutput = 0
        /// Each source pixel widened to 16 bits and interleaved with its right
        /// neighbour, channel by channel, as the multiply-add wants them; zeros past
        /// the last pixel read.
        private var paired: [SIMD8<Int16>]
        /// Filtered rows written so far.
        private var filtered = 0
        /// The sums of the average's rows for pixels given out of order (`scatter`),
        /// made at the first.
        private var grid: [UInt32] = []

        /// A stream making `width` × `height` from `region` of a source of
        /// `sourceWidth` × `sourceHeight`.
        init(sourceWidth: Int, sourceHeight: Int, region: Region, width: Int, height: Int) {
            precondition(width > 0 && height > 0, "resampling to an empty size")
            self.width = width
            self.height = height
            // Area-average by whole factors while the reduction stays above 2× after
            // it, leaving the filter a ratio between 2 and 4: the cost of the filter no
            // longer grows with the reduction, and the box average loses nothing at
            // that ratio.
            factorX = max(1, Int(region.width / Double(width) / 2))
            factorY = max(1, Int(region.height / Double(height) / 2))
            let filterHeight: Int
            let filterRegion: Region
            if factorX > 1 || factorY > 1 {
                // A region computed as centred can start a hair before the first pixel.
                x0 = max(0, Int(region.x.rounded(.down)))
                y0 = max(0, Int(region.y.rounded(.down)))
                x1 = min(sourceWidth, Int((region.x + region.width).rounded(.up)))
                y1 = min(sourceHeight, Int((region.y + region.height).rounded(.up)))
                boxWidth = (x1 - x0 + factorX - 1) / factorX
                boxHeight = (y1 - y0 + factorY - 1) / factorY
                filterWidth = boxWidth
                filterHeight = boxHeight
                filterRegion = Region(
                    x: (region.x - Double(x0)) / Double(factorX), y: (region.y - Double(y0)) / Double(factorY),
                    width: region.width / Double(factorX), height: region.height / Double(factorY))
            } else {
                (x0, x1, y0, y1, boxWidth, boxHeight) = (0, sourceWidth, 0, sourceHeight, 0, 0)
                filterWidth = sourceWidth
                filterHeight = sourceHeight
                filterRegion = region
            }
            sums = [UInt32](repeating: 0, count: boxWidth * 4)
            boxRow = [UInt8](repeating: 0, count: boxWidth * 4)

            horizontal = .cached(start: filterRegion.x, length: filterRegion.width, limit: filterWidth, outputs: width, even: true)
            vertical = .cached(start: filterRegion.y, length: filterRegion.height, limit: filterHeight, outputs: height)
            rowWidth = horizontal.starts.count  // `width` rounded up to even
            firstRow = vertical.starts.min() ?? 0
            // Rows the vertical pass reads: real ones up to the last weighted one, then
            // zero rows for the padding taps.
            totalRows = (vertical.starts.max() ?? 0) + 2 * vertical.pairs - firstRow
            realRows = min(vertical.end, filterHeight) - firstRow
            firstColumn = horizontal.starts.min() ?? 0
            lastColumn = min(horizontal.end, filterWidth)
            let starts = vertical.starts, first = firstRow, reach = 2 * vertical.pairs
            var needed = starts.map { $0 - first }
            for y in needed.indices.reversed().dropFirst() { needed[y] = min(needed[y], needed[y + 1]) }
            neededFrom = needed
            // The window holds the rows of the widest output row to be made and as
            // many again, so that it slides (moving what is still needed to its start)
            // at most once every that many rows.
            let span = starts.indices.map { starts[$0] - first + reach - needed[$0] }.max() ?? 1
            windowRows = min(totalRows, span + max(span, 16))
            // Every row is written before it is read: by the horizontal pass, or as
            // zeros for a row left out and for the padding (zeroing it all ahead was
            // a tenth of a small thumbnail's resampling).
            let elements = windowRows * rowWidth
            intermediate = [SIMD4<Int16>](unsafeUninitializedCapacity: elements) { _, count in count = elements }
            let outputBytes = width * height * 4
            output = [UInt8](unsafeUninitializedCapacity: outputBytes) { _, count in count = outputBytes }
            paired = [SIMD8<Int16>](repeating: .zero, count: filterWidth + 2 * horizontal.pairs + 1)
            if factorX > 1 || factorY > 1 {
                sourceRows = y0 + firstRow * factorY..<min(y1, y0 + (firstRow + realRows) * factorY)
                boxIndex = firstRow
            } else {
                sourceRows = firstRow..<firstRow + realRows
            }
        }

        /// Takes source row `y`, its pixels at `pixels` (premultiplied RGBA, as in a
        /// bitmap). Rows come top to bottom; rows left out count as transparent.
        func append(row y: Int, _ pixels: UnsafePointer<UInt8>) {
            precondition(y > lastSourceRow, "rows out of order")
            lastSourceRow = y
            guard sourceRows.contains(y) else { return }
            guard factorX > 1 || factorY > 1 else { return filter(row: y, UnsafeRawPointer(pixels)) }
            let index = (y - y0) / factorY
            while boxIndex < index { finishBoxRow() }
            sums.withUnsafeMutableBufferPointer { sums in
                var s = x0 * 4
                for ox in 0..<boxWidth {
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
        }

        /// Bytes the stream holds fed in order: its rows, sums and output.
        var workingBytes: Int {
            intermediate.count * 8 + paired.count * 16 + sums.count * 4 + boxRow.count + width * height * 4
        }

        /// Bytes a stream fed out of order (`scatter`) holds for its sums: one 32-bit
        /// sum a channel for every pixel of the average (of the source, without one)
        /// over the rows the output reads. The interlaced decoders compare it with the
        /// full image before they choose.
        var scatteredBytes: Int {
            let columns = factorX > 1 || factorY > 1 ? boxWidth : filterWidth
            return columns * realRows * 16
        }

        /// Adds `count` pixels of source row `y` to the sums: pixel k, at `pixels + 4k`
        /// (premultiplied RGBA), is column `first + k × step`.
        ///
        /// Each pixel of an interlaced image comes in exactly one pass, and the average
        /// is a sum, so rows and pixels may come in any order and the output is the one
        /// `append` makes from the same pixels in order. Pixels left out count as
        /// transparent. Not to be mixed with `append` on one stream.
        func scatter(row y: Int, _ pixels: UnsafePointer<UInt8>, first: Int = 0, step: Int = 1, count: Int) {
            guard sourceRows.contains(y), count > 0 else { return }
            let columns = factorX > 1 || factorY > 1 ? boxWidth : filterWidth
            if grid.isEmpty { grid = [UInt32](repeating: 0, count: columns * realRows * 4) }
            // Without the average, y0 is 0 and factorY 1: the row is the source's.
            let row = (y - y0) / factorY - firstRow
            // The pixels within the columns the average reads.
            let firstK = first >= x0 ? 0 : (x0 - first + step - 1) / step
            let endK = min(count, x1 > first ? (x1 - first + step - 1) / step : 0)
            guard firstK < endK else { return }
            let factorX = factorX, x0 = x0
            grid.withUnsafeMutableBufferPointer { grid in
                let line = grid.baseAddress! + row * columns * 4
                for k in firstK..<endK {
                    let cell = line + (first + k * step - x0) / factorX * 4
                    let p = pixels + k * 4
                    cell[0] &+= UInt32(p[0]); cell[1] &+= UInt32(p[1])
                    cell[2] &+= UInt32(p[2]); cell[3] &+= UInt32(p[3])
                }
            }
        }

        /// The resampled bitmap from the pixels `scatter` gave: each row of the average
        /// made from its sums as `append` makes it, then filtered.
        func finishScattered() -> Bitmap {
            let columns = factorX > 1 || factorY > 1 ? boxWidth : filterWidth
            if grid.isEmpty { grid = [UInt32](repeating: 0, count: columns * realRows * 4) }
            var out = [UInt8](repeating: 0, count: columns * 4 + 8)
            grid.withUnsafeBufferPointer { grid in
                out.withUnsafeMutableBufferPointer { out in
                    for r in 0..<realRows {
                        let index = firstRow + r
                        let rowStart = y0 + index * factorY
                        let blockRows = UInt32(max(1, min(y1, rowStart + factorY) - rowStart))
                        let sums = grid.baseAddress! + r * columns * 4
                        for ox in 0..<columns {
                            let n = blockRows * UInt32(max(1, min(factorX, x1 - x0 - ox * factorX)))
                            for c in 0..<4 { out[ox * 4 + c] = UInt8(min(255, (sums[ox * 4 + c] + n / 2) / n)) }
                        }
                        filter(row: index, UnsafeRawPointer(out.baseAddress!))
                    }
                }
            }
            grid = []
            return finishOutput()
        }

        /// The resampled bitmap, from the rows given.
        func finish() -> Bitmap {
            if factorX > 1 || factorY > 1 {
                while boxIndex < firstRow + realRows { finishBoxRow() }
            }
            return finishOutput()
        }

        /// The output once every row is there: the rows left out and the padding
        /// count as zeros.
        private func finishOutput() -> Bitmap {
            zeroRows(upTo: totalRows)
            precondition(nextOutput == height, "output rows left unmade")
            return Bitmap(width: width, height: height, pixels: output)
        }

        /// Makes row `boxIndex` of the average (a block cut by the edge averages what
        /// it holds) and passes it to the filter.
        private func finishBoxRow() {
            let rowStart = y0 + boxIndex * factorY
            let blockRows = UInt32(min(y1, rowStart + factorY) - rowStart)
            sums.withUnsafeMutableBufferPointer { sums in
                boxRow.withUnsafeMutableBufferPointer { out in
                    for ox in 0..<boxWidth {
                        let n = blockRows * UInt32(min(factorX, x1 - x0 - ox * factorX))
                        for c in 0..<4 { out[ox * 4 + c] = UInt8((sums[ox * 4 + c] + n / 2) / n) }
                    }
                    for i in sums.indices { sums[i] = 0 }
                    filter(row: boxIndex, UnsafeRawPointer(out.baseAddress!))
                }
            }
            boxIndex += 1
        }

        /// Writes zeros as the filtered rows not written before `row` (transparent
        /// source rows, the padding).
        private func zeroRows(upTo row: Int) {
            while filtered < row {
                let slot = slot(forRow: filtered)
                intermediate.withUnsafeMutableBufferPointer { inter in
                    (inter.baseAddress! + slot).update(repeating: .zero, count: rowWidth)
                }
                rowWritten()
            }
        }

        /// Where filtered row `row`, the next to be written, goes in the window (an
        /// index into `intermediate`), sliding the window first when it is full.
        private func slot(forRow row: Int) -> Int {
            if row - windowBase >= windowRows {
                let keep = nextOutput < height ? min(neededFrom[nextOutput], row) : row
                let count = (row - keep) * rowWidth, from = (keep - windowBase) * rowWidth
                if count > 0 {
                    intermediate.withUnsafeMutableBufferPointer { inter in
                        UnsafeMutableRawPointer(inter.baseAddress!).copyMemory(
                            from: inter.baseAddress! + from, byteCount: count * MemoryLayout<SIMD4<Int16>>.stride)
                    }
                }
                windowBase = keep
                precondition(row - windowBase < windowRows, "the resampler's window is too small")
            }
            return (row - windowBase) * rowWidth
        }

        /// Counts the row just written and makes every output row it completes.
        private func rowWritten() {
            filtered += 1
            let reach = 2 * vertical.pairs
            while nextOutput < height && vertical.starts[nextOutput] - firstRow + reach <= filtered {
                makeOutputRow(nextOutput)
                nextOutput += 1
            }
        }

        /// The horizontal pass over row `index` of what the filter reads.
        private func filter(row index: Int, _ raw: UnsafeRawPointer) {
            let row = index - firstRow
            guard row >= 0 && row < realRows else { return }
            zeroRows(upTo: row)
            let slot = slot(forRow: row)
            let firstColumn = firstColumn, lastColumn = lastColumn, rowWidth = rowWidth
            // The last pixel has no right neighbour to pair with.
            let lastPair = min(lastColumn, filterWidth - 1)
            intermediate.withUnsafeMutableBufferPointer { inter in
                paired.withUnsafeMutableBufferPointer { paired in
                    horizontal.withUnsafeBuffers { starts, weights, pairs in
                        withPairCount(pairs) { pairs in
                            for x in firstColumn..<max(firstColumn, lastPair) {
                                let two = raw.loadUnaligned(fromByteOffset: x &* 4, as: SIMD8<UInt8>.self)
                                paired[x] = SIMD8<Int16>(truncatingIfNeeded: SIMD8<UInt8>(
                                    two[0], two[4], two[1], two[5], two[2], two[6], two[3], two[7]))
                            }
                            if lastPair < lastColumn {
                                let one = SIMD4<Int16>(truncatingIfNeeded: raw.loadUnaligned(fromByteOffset: lastPair &* 4, as: SIMD4<UInt8>.self))
                                paired[lastPair] = SIMD8(one[0], 0, one[1], 0, one[2], 0, one[3], 0)
                            }
                            let out = UnsafeMutableRawPointer(inter.baseAddress! + slot)
                            var x = 0
                            while x < rowWidth {
                                let left = sum(paired.baseAddress! + starts[x], step: 2, weights.baseAddress! + x &* pairs, pairs: pairs, rounding: 1 << 7)
                                let right = sum(paired.baseAddress! + starts[x + 1], step: 2, weights.baseAddress! + (x + 1) &* pairs, pairs: pairs, rounding: 1 << 7)
                                out.storeBytes(of: SIMD8(lowHalf: saturated(left &>> 8), highHalf: saturated(right &>> 8)),
                                               toByteOffset: x &* 8, as: SIMD8<Int16>.self)
                                x &+= 2
                            }
                        }
                    }
                }
            }
            rowWritten()
        }

        /// The vertical pass for output row `y`, from the window's rows into the output.
        private func makeOutputRow(_ y: Int) {
            let width = width, rowWidth = rowWidth, top = vertical.starts[y] - firstRow - windowBase
            intermediate.withUnsafeBufferPointer { inter in
                output.withUnsafeMutableBytes { out in
                    vertical.withUnsafeBuffers { starts, weights, pairs in
                        withPairCount(pairs) { pairs in
                            let first = UnsafeRawPointer(inter.baseAddress! + top &* rowWidth)
                            let destination = out.baseAddress! + y &* width &* 4
                            let taps = weights.baseAddress! + y &* pairs
                            let rowBytes = rowWidth &* 8
                            var x = 0
                            while x < width {
                                // Two neighbouring output pixels, from the same rows and
                                // weights: each pair of rows interleaved lane by lane.
                                var left = SIMD4<Int32>(repeating: 1 << 19), right = left
                                var above = first + x &* 8
                                for pair in 0..<pairs {
                                    let a = above.loadUnaligned(as: SIMD8<Int16>.self)
                                    let b = above.loadUnaligned(fromByteOffset: rowBytes, as: SIMD8<Int16>.self)
                                    let w = taps[pair]
                                    left &+= multiplyAdd(SIMD8(a[0], b[0], a[1], b[1], a[2], b[2], a[3], b[3]), w)
                                    right &+= multiplyAdd(SIMD8(a[4], b[4], a[5], b[5], a[6], b[6], a[7], b[7]), w)
                                    above += rowBytes &* 2
                                }
                                let pixels = finished(left &>> 20, right &>> 20)
                                if x + 1 < width {
                                    (destination + x &* 4).storeBytes(of: pixels, as: SIMD8<UInt8>.self)
                                } else {
                                    (destination + x &* 4).storeBytes(of: pixels.lowHalf, as: SIMD4<UInt8>.self)
                                }
                                x &+= 2
                            }
                        }
                    }
                }
            }
        }
    }
}
