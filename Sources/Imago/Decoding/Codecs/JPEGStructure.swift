import Foundation

/// The marker structure of a JPEG file, walked without decoding: where a file that
/// ends early can be cut so that libjpeg meets its end between two markers or inside
/// scan data, never inside a marker segment (where it would read the missing bytes as
/// tables and fail, losing the scans before).
struct JPEGStructure: Equatable {
    /// The bytes worth decoding: all of them for a whole file, else up to the end of
    /// the last complete segment or the last byte of scan data.
    var usableLength: Int
    /// Scans whose header (SOS) is complete.
    var scans: Int
    /// Whether any scan data (after an SOS header) is there: without it there are no
    /// pixels to show.
    var hasScanData: Bool
    /// Whether the EOI marker is there.
    var isComplete: Bool

    /// Walks `bytes`, which start with SOI.
    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        let n = bytes.count
        usableLength = n
        scans = 0
        hasScanData = false
        isComplete = false
        var i = 2
        while i < n {
            guard bytes[i] == 0xFF else {
                // Stray bytes between segments, which libjpeg skips with a warning.
                i += 1
                continue
            }
            while i + 1 < n, bytes[i + 1] == 0xFF { i += 1 }  // fill bytes
            guard i + 1 < n else { usableLength = i; return }
            let marker = bytes[i + 1]
            if marker == 0xD9 {
                isComplete = true
                usableLength = n
                return
            }
            if marker == 0x01 || (0xD0...0xD8).contains(marker) {
                i += 2
                continue
            }
            guard i + 4 <= n else { usableLength = i; return }
            let end = i + 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
            guard end <= n else { usableLength = i; return }
            guard marker == 0xDA else {
                i = end
                continue
            }
            scans += 1
            // Scan data runs to the next marker that is not a stuffed 0xFF00 or a
            // restart marker.
            var j = end
            while j < n {
                if bytes[j] != 0xFF { j += 1; continue }
                guard j + 1 < n else { break }
                let next = bytes[j + 1]
                if next == 0x00 || (0xD0...0xD7).contains(next) { j += 2; continue }
                break
            }
            if j > end { hasScanData = true }
            if j + 1 >= n {
                // The data ends inside the scan (a lone 0xFF at the very end is half a
                // marker, dropped).
                usableLength = j < n && bytes[j] == 0xFF ? j : n
                return
            }
            i = j
        }
        usableLength = n
    }

    /// Counts the scan headers (SOS, `FF DA`) in a whole file, at memory speed. It
    /// can count more scans than libjpeg would decode (an EXIF thumbnail's, the pair
    /// by chance inside a marker segment), never fewer: each scan starts with one.
    static func scanHeaderCount(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let start = bytes.baseAddress else { return 0 }
        let end = start + bytes.count
        var p = start, count = 0
        while p < end, let found = memchr(p, 0xFF, end - p) {
            let byte = UnsafePointer(found.assumingMemoryBound(to: UInt8.self))
            if byte + 1 < end && byte[1] == 0xDA { count += 1 }
            p = byte + 1
        }
        return count
    }

    /// Counts the SOS markers (`FF DA`) in `bytes`; `previous` is the byte before
    /// them, so a marker split between two pieces of a download is counted once.
    /// In scan data a 0xFF byte is always stuffed (`FF 00`), so the pair appears only
    /// as the marker.
    static func countScanStarts(in bytes: some Sequence<UInt8>, previous: UInt8?) -> Int {
        var count = 0
        var last = previous ?? 0
        for byte in bytes {
            if last == 0xFF && byte == 0xDA { count += 1 }
            last = byte
        }
        return count
    }
}
