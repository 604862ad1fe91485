import Foundation

/// Watches the bytes of a download as they arrive and says when they are worth a
/// progressive preview: at most once per new scan of a progressive JPEG (a new SOS
/// marker, `FF DA`, means the scan before it is complete) and about once per Adam7
/// pass of an interlaced PNG (each pass holds as many pixels as all the passes
/// before it together, so a pass is in when the image data has doubled since the
/// last preview), and for JPEG XL, whose groups and passes it does not parse, when
/// an eighth of the body has come, then each time what came has doubled (a lossy
/// file's low frequencies, which libjxl shows as the whole image blurred, are in
/// its first part). Anything else (a baseline JPEG, a plain PNG, another format)
/// gets none.
///
/// Keeps its own copy of the body so far, only while previews are wanted. A value:
/// the loader's progress closure holds it in a `Locked`, whose lock is never
/// contended (the loader reports one chunk at a time).
struct PreviewScanner: Sendable {
    private enum Kind {
        case unknown, jpeg, interlacedPNG, jxl, none
    }

    /// The most previews a PNG gets: the passes before the last, which is the image.
    static let maximumPNGPreviews = 6
    /// The most previews a JPEG XL gets: each is a decode of all that came, in a
    /// codec slower than the others, so an eighth, a quarter and a half of the body.
    static let maximumJXLPreviews = 3

    private var buffer = Data()
    private var kind = Kind.unknown
    private var expected: Int64?
    /// JPEG: scans begun so far.
    private var scans = 0
    /// PNG: the walk over the chunks, the image data bytes in complete chunks, and
    /// the image data bytes at the last preview.
    private var chunkStart = 8
    private var completeIDAT = 0
    private var firstIDAT: Int?
    private var idatAtLastPreview = 0
    /// JPEG XL: the bytes at the last preview.
    private var bytesAtLastPreview = 0
    private(set) var previews = 0

    /// Takes one progress report; returns the bytes so far when they are worth a
    /// preview.
    mutating func receive(_ progress: DataLoadingProgress) -> Data? {
        guard let chunk = progress.chunk else { return nil }
        if progress.received == Int64(chunk.count) {
            // A new body (the first, or a retry's): start again.
            buffer = Data()
            kind = .unknown
            scans = 0
            chunkStart = 8
            completeIDAT = 0
            firstIDAT = nil
            idatAtLastPreview = 0
            bytesAtLastPreview = 0
            previews = 0
        }
        expected = progress.expected
        guard kind != .none, !chunk.isEmpty else { return nil }
        let previous = buffer.last
        buffer.append(chunk)
        if kind == .unknown { classify() }
        switch kind {
        case .jpeg:
            let found = JPEGStructure.countScanStarts(in: chunk, previous: previous)
            guard found > 0 else { return nil }
            scans += found
            // The first SOS starts the first scan; from the second on, one before it
            // is complete.
            guard scans >= 2 else { return nil }
            previews += 1
            return buffer
        case .interlacedPNG:
            return pngPreview()
        case .jxl:
            // Without a length, from 16 KB on: most of a web-size lossy image.
            let first = expected.map { max(4096, Int($0) / 8) } ?? 16384
            guard previews < Self.maximumJXLPreviews, buffer.count >= max(first, 2 * bytesAtLastPreview),
                  expected.map({ Int64(buffer.count) < $0 }) ?? true
            else { return nil }
            bytesAtLastPreview = buffer.count
            previews += 1
            return buffer
        case .unknown, .none:
            return nil
        }
    }

    private mutating func classify() {
        let bytes = [UInt8](buffer.prefix(29))
        if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0xD8 {
            kind = .jpeg
        } else if bytes.count >= 8, bytes[0..<8].elementsEqual([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            // IHDR's interlace method is the 29th byte of the file.
            if bytes.count >= 29 { kind = bytes[28] == 1 ? .interlacedPNG : .none }
        } else if bytes.count >= 2, bytes[0] == 0xFF, bytes[1] == 0x0A {
            kind = .jxl
        } else if bytes.count >= 12, bytes[0..<12].elementsEqual([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) {
            kind = .jxl
        } else if bytes.count >= 12 || (bytes.count >= 8 && !bytes.starts(with: [0, 0, 0, 0x0C])) {
            kind = .none
        }
    }

    private mutating func pngPreview() -> Data? {
        // Walks the chunks that are complete; the one in progress counts the image
        // data it has so far.
        var inProgress = 0
        while chunkStart + 8 <= buffer.count {
            // `buffer` is built by appending to an empty Data, so it is indexed from 0.
            let length = (0..<4).reduce(0) { $0 << 8 | Int(buffer[chunkStart + $1]) }
            let isIDAT = buffer[chunkStart + 4] == 0x49 && buffer[chunkStart + 5] == 0x44
                && buffer[chunkStart + 6] == 0x41 && buffer[chunkStart + 7] == 0x54
            if isIDAT && firstIDAT == nil { firstIDAT = chunkStart }
            let end = chunkStart + 12 + length
            guard end <= buffer.count else {
                if isIDAT { inProgress = min(length, buffer.count - chunkStart - 8) }
                break
            }
            if isIDAT { completeIDAT += length }
            chunkStart = end
        }
        guard let firstIDAT, previews < Self.maximumPNGPreviews else { return nil }
        let received = completeIDAT + inProgress
        // The first pass is about a 64th of the image data; without a length, a
        // kilobyte.
        let firstPass = expected.map { max(256, (Int($0) - firstIDAT) / 64) } ?? 1024
        guard received >= max(firstPass, 2 * idatAtLastPreview) else { return nil }
        idatAtLastPreview = received
        previews += 1
        return buffer
    }
}
