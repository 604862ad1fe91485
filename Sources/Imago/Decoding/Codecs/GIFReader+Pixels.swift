#if os(Linux)
import CGIFLib
import Foundation

// The pixels of a GIF frame: its palette, and its rows decoded into the canvas.
extension GIFReader {
    /// Sets the 256-entry palette from a colour table; entry 0 (alpha 0) means
    /// "leave the canvas alone".
    ///
    /// Indices past the end of the table are transparent: LZW codes can carry any
    /// value below 2^code size whatever the table's size, and reading past it would
    /// read memory that is not the file's.
    mutating func fillPalette(_ map: ColorMapObject, transparentIndex: Int?) {
        let count = map.Colors == nil ? 0 : min(max(Int(map.ColorCount), 0), 256)
        palette.withUnsafeMutableBufferPointer { palette in
            palette.update(repeating: 0)
            for i in 0..<count {
                let c = map.Colors[i]
                // GIF alpha is all or nothing, so the colour is already premultiplied.
                let rgba = UInt32(c.Red) | UInt32(c.Green) << 8 | UInt32(c.Blue) << 16 | 0xFF00_0000
                palette[i] = rgba.littleEndian
            }
            if let transparentIndex, transparentIndex < 256 { palette[transparentIndex] = 0 }
        }
    }

    /// Decodes the frame's rows into the visible part of the canvas, then skips what
    /// is left of its LZW data.
    mutating func readPixels(width: Int, height: Int, interlaced: Bool, visible: Rect, into canvas: any GIFRowTarget) throws(ImagoError) {
        let rows = ImageDecoders.GIF.rowsNeeded(height: height, interlaced: interlaced, visibleRows: visible.height)
        if rows > 0 {
            // No LZW code emits more than 4096 pixels, and codes are 12 bits wide
            // long before strings grow that long, so a byte carries well under 4096
            // pixels (2731 at most). More pixels than that cannot be in the data that
            // is left: the file is truncated or lying, and refusing now saves decoding
            // to the end of the data only to fail there.
            var rows = rows
            let (claimed, overflow) = width.multipliedReportingOverflow(by: rows)
            if overflow || claimed / 4096 > source.pointee.remaining {
                guard truncated else {
                    throw ImageDecoders.GIF.failure("frame \(frameIndex + 1) claims \(width)×\(height) pixels, more than the rest of the data can hold")
                }
                // The data ends in this frame: only the rows it can hold are tried.
                rows = min(rows, (source.pointee.remaining + 1) * 4096 / max(width, 1))
            }
            if row.count < width { row = [UInt8](repeating: 0, count: width) }
            let palette = self.palette
            let file = self.file
            let deadline = self.deadline
            let rowsPerCheck = DecodeDeadline.rowsPerCheck(width: width)
            var failed = false, timedOut = false
            row.withUnsafeMutableBufferPointer { row in
                palette.withUnsafeBufferPointer { palette in
                    for index in 0..<rows {
                        if index % rowsPerCheck == 0 && deadline.hasPassed {
                            timedOut = true
                            return
                        }
                        // giflib counts the pixels it still owes and flushes the
                        // frame's remaining data after the last row on its own.
                        guard DGifGetLine(file, row.baseAddress, Int32(width)) == GIF_OK else {
                            failed = true
                            return
                        }
                        let y = interlaced ? ImageDecoders.GIF.interlacedRow(index, height: height) : index
                        if y < visible.height {
                            canvas.draw(UnsafeBufferPointer(rebasing: row[0..<visible.width]),
                                        x: visible.x, y: visible.y + y, palette: palette)
                        }
                    }
                }
            }
            if timedOut { throw .decodingTimedOut(format: .gif, seconds: deadline.seconds) }
            if failed { throw failure() }
        }
        if rows == 0 || rows < height {
            // The remaining rows are all off the canvas (or there are none); their
            // sub-blocks are skipped undecoded. Each step reads at least the block's
            // length byte. After the last row giflib skips them itself.
            var block: UnsafeMutablePointer<GifByteType>?
            repeat {
                guard DGifGetCodeNext(file, &block) == GIF_OK else { throw failure() }
            } while block != nil
        }
    }
}
#endif
