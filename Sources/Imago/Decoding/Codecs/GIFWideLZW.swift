// Frames whose LZW minimum code size is 9 to 12 bits: giflib refuses them, browsers
// show them. Apart from the giflib-driven reader because it is a decoder of its own.

#if os(Linux)
import CGIFLib

extension GIFReader {
    /// The LZW minimum code size when giflib refused it for being over 8 bits and it
    /// is one browsers decode (up to 12); nil for any other failure.
    func wideCodeSize() -> Int? {
        let offset = source.pointee.offset
        guard file.pointee.Error == D_GIF_ERR_READ_FAILED, !source.pointee.ranOut, offset >= 1 else { return nil }
        let size = Int(source.pointee.base[offset - 1])
        return (9...12).contains(size) ? size : nil
    }

    /// Decodes a frame whose LZW minimum code size is 9 to 12 bits, which giflib
    /// refuses and browsers show: the same LZW, with the first code width and the
    /// clear code set by the larger size. As in Chrome and Firefox, a literal code's
    /// pixel is its low 8 bits (palettes have at most 256 entries).
    mutating func readWidePixels(
        codeSize: Int, width: Int, height: Int, interlaced: Bool, visible: Rect, into canvas: any GIFRowTarget
    ) throws(ImagoError) {
        let number = frameIndex + 1
        func corrupt(_ reason: String) -> ImagoError { ImageDecoders.GIF.failure("frame \(number): \(reason)") }
        let (claimed, overflow) = width.multipliedReportingOverflow(by: height)
        if overflow || claimed / 4096 > source.pointee.remaining {
            throw ImageDecoders.GIF.failure("frame \(number) claims \(width)×\(height) pixels, more than the rest of the data can hold")
        }
        let clear = 1 << codeSize, end = clear + 1
        var prefix = [Int](repeating: 0, count: 4096)
        var suffix = [UInt8](repeating: 0, count: 4096)
        for code in 0..<min(clear, 4096) { suffix[code] = UInt8(truncatingIfNeeded: code) }
        var stack: [UInt8] = []
        var codeWidth = codeSize + 1, available = clear + 2, old = -1, first: UInt8 = 0
        var bits: UInt64 = 0, bitCount = 0
        var row = [UInt8](repeating: 0, count: max(width, 1)), x = 0, rowIndex = 0
        var finished = width == 0 || height == 0
        let palette = self.palette

        func emit(_ index: UInt8) {
            guard !finished else { return }
            row[x] = index
            x += 1
            if x == width {
                let y = interlaced ? ImageDecoders.GIF.interlacedRow(rowIndex, height: height) : rowIndex
                if y < visible.height {
                    row.withUnsafeBufferPointer { row in
                        palette.withUnsafeBufferPointer { palette in
                            canvas.draw(UnsafeBufferPointer(rebasing: row[0..<visible.width]),
                                        x: visible.x, y: visible.y + y, palette: palette)
                        }
                    }
                }
                x = 0
                rowIndex += 1
                if rowIndex == height { finished = true }
            }
        }

        // Sub-blocks until the empty one; each step reads at least the length byte.
        // A block of 255 bytes can expand to 700,000 pixels, so the clock is read at
        // each one (tens of nanoseconds against microseconds of decoding).
        while true {
            try deadline.check(.gif)
            guard source.pointee.remaining >= 1 else { source.pointee.ranOut = true; throw ImageDecoders.GIF.failure("the data ends before the image does") }
            let length = Int(source.pointee.base[source.pointee.offset])
            source.pointee.offset += 1
            if length == 0 { break }
            guard source.pointee.remaining >= length else {
                source.pointee.ranOut = true
                throw ImageDecoders.GIF.failure("the data ends before the image does")
            }
            let block = source.pointee.base + source.pointee.offset
            source.pointee.offset += length
            if finished { continue }
            for i in 0..<length {
                bits |= UInt64(block[i]) << UInt64(bitCount)
                bitCount += 8
                while bitCount >= codeWidth && !finished {
                    var code = Int(bits & ((1 << UInt64(codeWidth)) - 1))
                    bits >>= UInt64(codeWidth)
                    bitCount -= codeWidth
                    if code == clear {
                        codeWidth = codeSize + 1
                        available = clear + 2
                        old = -1
                        continue
                    }
                    if code == end {
                        finished = true
                        break
                    }
                    if old == -1 {
                        guard code < clear, code < 4096 else { throw corrupt("the LZW data starts with an undefined code") }
                        first = suffix[code]
                        emit(first)
                        old = code
                        continue
                    }
                    let incoming = code
                    stack.removeAll(keepingCapacity: true)
                    if code >= available {
                        guard code == available else { throw corrupt("the LZW data holds an undefined code") }
                        stack.append(first)
                        code = old
                    }
                    while code >= clear {
                        guard code < 4096, stack.count < 4096 else { throw corrupt("the LZW data is corrupt") }
                        stack.append(suffix[code])
                        code = prefix[code]
                    }
                    first = suffix[code]
                    stack.append(first)
                    if available < 4096 {
                        prefix[available] = old
                        suffix[available] = first
                        available += 1
                        if available & ((1 << codeWidth) - 1) == 0 && available < 4096 { codeWidth += 1 }
                    }
                    old = incoming
                    for index in stack.reversed() { emit(index) }
                }
            }
        }
        // giflib's word for the same fault in narrower frames.
        guard finished && (rowIndex == height || width == 0 || height == 0) else {
            throw .decodingFailed(format: .gif, reason: "Image EOF detected before image complete",
                                  codec: .init(library: "giflib", message: "Image EOF detected before image complete"))
        }
    }
}
#endif
