import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Files written whole or not at all.
enum AtomicFile {
    /// Writes `data` to `path` into a temporary file beside it, flushed to disk, then
    /// renamed over `path`: a reader never sees half a file, a crash or a failure
    /// leaves whatever was there before, and a failure removes the temporary file.
    /// Beside it, because a rename is atomic only within one file system.
    static func write(_ data: Data, to path: String) throws(ImagoError) {
        let url = URL(fileURLWithPath: path)
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw error(path, errno) }
        var failure: Int32 = 0
        if !FileDescriptors.writeAll(fd, data) { failure = errno == 0 ? EIO : errno }
        if failure == 0, fsync(fd) != 0 { failure = errno }
        if close(fd) != 0, failure == 0 { failure = errno }
        if failure == 0, rename(temporary, path) != 0 { failure = errno }
        if failure != 0 {
            unlink(temporary)
            throw error(path, failure)
        }
    }

    private static func error(_ path: String, _ code: Int32) -> ImagoError {
        .fileError(path: path, reason: String(cString: strerror(code)), errno: code)
    }
}
