import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing to a file descriptor, for the disk tier's records and the files the
/// encoders write.
enum FileDescriptors {
    /// Writes all of `data` to `fd`; false on an error.
    static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }
}
