#if os(Linux)
/// What a GIF's records say without decoding a pixel: how many frames, how long
/// each shows, how many plays, and whether the data ends early.
///
/// The walk follows the records as giflib reads them (extensions and image data are
/// chains of sub-blocks, skipped by their length bytes), so it costs a pass over the
/// bytes and no memory per frame beyond its duration. It never fails: where the file
/// is malformed it stops, and the decoder of the first frame reports the fault in
/// giflib's words.
struct GIFScan {
    /// Frames whose image data begins in the file (the last may be cut short).
    private(set) var frameCount = 0
    /// Each frame's display time in seconds, as `ImageDecoders.GIF.frameDuration` gives it.
    private(set) var durations: [Double] = []
    /// The NETSCAPE2.0 loop field; nil without one.
    private(set) var repetitions: Int?
    /// Whether the data ended before the trailer or a stray byte ended the file.
    private(set) var truncated = false
    /// Whether any frame is interlaced (its rows stored out of order).
    private(set) var hasInterlacedFrame = false

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        var offset = 13
        guard bytes.count >= offset else {
            truncated = true
            return
        }
        let flags = bytes[10]
        if flags & 0x80 != 0 { offset += 3 << (Int(flags & 7) + 1) }
        var centiseconds = 0

        /// Skips a chain of sub-blocks from `offset`; false when the data ends first.
        func skipBlocks(_ visit: (Int, UnsafeBufferPointer<UInt8>) -> Void = { _, _ in }) -> Bool {
            var index = 0
            while offset < bytes.count {
                let length = Int(bytes[offset])
                offset += 1
                if length == 0 { return true }
                guard offset + length <= bytes.count else { return false }
                visit(index, UnsafeBufferPointer(rebasing: bytes[offset..<offset + length]))
                offset += length
                index += 1
            }
            return false
        }

        while true {
            guard offset < bytes.count else {
                truncated = true
                return
            }
            let type = bytes[offset]
            offset += 1
            switch type {
            case 0x21:  // extension
                guard offset < bytes.count else {
                    truncated = true
                    return
                }
                let label = bytes[offset]
                offset += 1
                var isLoopApplication = false
                let complete = skipBlocks { index, block in
                    switch label {
                    case 0xF9 where index == 0 && block.count >= 4:
                        centiseconds = Int(block[1]) | Int(block[2]) << 8
                    case 0xFF where index == 0:
                        isLoopApplication = block.elementsEqual("NETSCAPE2.0".utf8) || block.elementsEqual("ANIMEXTS1.0".utf8)
                    case 0xFF where isLoopApplication && block.count >= 3 && block[0] == 1:
                        if repetitions == nil { repetitions = Int(block[1]) | Int(block[2]) << 8 }
                    default:
                        break
                    }
                }
                guard complete else {
                    truncated = true
                    return
                }
            case 0x2C:  // image: descriptor, local colour table, code size, data
                guard offset + 9 <= bytes.count else {
                    truncated = true
                    return
                }
                let local = bytes[offset + 8]
                if local & 0x40 != 0 { hasInterlacedFrame = true }
                offset += 9
                if local & 0x80 != 0 { offset += 3 << (Int(local & 7) + 1) }
                // The code size byte: giflib reads it with the descriptor, so a
                // frame exists once it is there.
                guard offset < bytes.count else {
                    truncated = true
                    return
                }
                offset += 1
                frameCount += 1
                durations.append(ImageDecoders.GIF.frameDuration(centiseconds: centiseconds))
                centiseconds = 0
                guard skipBlocks() else {
                    truncated = true
                    return
                }
            default:
                // The trailer, or a stray byte that ends the file as in browsers.
                return
            }
        }
    }
}
#endif
