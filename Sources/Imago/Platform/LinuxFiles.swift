#if os(Linux)
import Glibc

/// Reading the small files of /proc and /sys, which report no size up front.
enum LinuxFiles {
    /// The file at `path`, at most `limit` bytes of it.
    static func contents(of path: String, limit: Int = 1 << 16) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: limit)
    }

    /// An open file read again from the start, as pressure files are between events.
    static func reread(_ fd: Int32, limit: Int = 1 << 14) -> String? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        return readAll(fd, limit: limit)
    }

    private static func readAll(_ fd: Int32, limit: Int) -> String? {
        var bytes = [UInt8](repeating: 0, count: limit)
        var total = 0
        while total < limit {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, limit - total) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            total += count
        }
        return String(decoding: bytes[..<total], as: UTF8.self)
    }
}

#endif
