import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system calls the disk tier makes on its files, with the retries and
/// conversions they need. Plain POSIX: no Foundation file APIs, whose errors and
/// buffering the tier has no use for.
enum DiskFiles {
    /// Fills `data` from `fd`; false at end of file or on an error.
    static func readAll(_ fd: Int32, into data: inout Data) -> Bool {
        data.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = read(fd, buffer.baseAddress! + done, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }


    static func isRegularFile(_ info: stat) -> Bool {
        (info.st_mode & S_IFMT) == S_IFREG
    }

    /// Seconds since 1970.
    static func modificationTime(_ info: stat) -> Double {
        #if canImport(Darwin)
        Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
        Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
    }

    /// Seconds since 1970 of the last change to the file itself (a rename into place,
    /// a new time set): the system's own clock, whatever time a record claims.
    static func statusChangeTime(_ info: stat) -> Double {
        #if canImport(Darwin)
        Double(info.st_ctimespec.tv_sec) + Double(info.st_ctimespec.tv_nsec) / 1e9
        #else
        Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
        #endif
    }

    /// Sets the access and modification times of `fd` to `seconds` since 1970: the
    /// modification time is a record's last use.
    static func setTimes(_ fd: Int32, to seconds: Double) {
        var times = [fileTime(seconds), fileTime(seconds)]
        _ = futimens(fd, &times)
    }

    private static func fileTime(_ seconds: Double) -> timespec {
        let whole = seconds.rounded(.down)
        var value = timespec()
        value.tv_sec = .init(whole)
        value.tv_nsec = .init(((seconds - whole) * 1e9).rounded(.down))
        return value
    }

    /// Makes `path` and each missing level above it with mode 0700, as the XDG
    /// base-directory specification asks of ~/.cache itself.
    /// Makes `path` and the folders above it (mode 0700); nil when it exists as a
    /// directory after, else what stopped it.
    @discardableResult
    static func createDirectory(_ path: String) -> String? {
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                return "'\(prefix)' cannot be made: \(String(cString: strerror(errno)))"
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return "'\(path)' cannot be read: \(String(cString: strerror(errno)))" }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return "'\(path)' is not a directory" }
        return nil
    }

    /// Bytes free for an unprivileged user on the file system holding `path`; nil
    /// when it cannot be measured.
    static func availableSpace(_ path: String) -> Int? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        return Int(clamping: UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize)).partialValue)
    }

    /// Why `path` cannot hold records, found by making it and a file in it (the only
    /// test that also holds for root, whom permissions do not stop); nil when it can.
    static func problem(with path: String) -> String? {
        if let problem = createDirectory(path) { return problem }
        let probe = path + "/" + RecordFormat.temporaryPrefix + "probe.\(getpid())"
        let fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return "'\(path)' cannot hold files: \(String(cString: strerror(errno)))" }
        close(fd)
        unlink(probe)
        return nil
    }
}

/// A file's device and inode: tells the file read from one that replaced it under
/// the same name since.
struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64

    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }

    /// The identity of the file at `path`; nil if there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        self.init(info)
    }
}

/// A directory's identity and modification time, which every process's file
/// creation, rename or deletion in it moves.
struct DirectoryStamp: Equatable {
    let identity: FileIdentity
    let seconds: Int64
    let nanoseconds: Int64

    /// The stamp of the directory at `path` now; nil if there is none.
    init?(path: String) {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        identity = FileIdentity(info)
        seconds = Int64(time.tv_sec)
        nanoseconds = Int64(time.tv_nsec)
    }
}
