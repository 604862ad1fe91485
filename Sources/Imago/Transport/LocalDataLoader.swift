#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loads `file:` and `data:` URLs, which need no network.
///
/// Files are read with POSIX calls on a dispatch queue, not on the awaiting task's
/// thread: a slow disk must not hold one of Swift concurrency's few cooperative
/// threads. Only regular files are read: a FIFO or a device (`/dev/zero`) would block
/// or never end. `data:` URLs are parsed here (base64 and percent-encoded forms)
/// rather than through URLSession, whose support on Linux is unreliable.
public struct LocalDataLoader: DataLoading {
    /// The largest file or `data:` payload accepted, in bytes; larger ones fail with
    /// `ImagoError.responseTooLarge` before anything is read, so a huge file costs no
    /// memory. The same default as the network's, for the same reason.
    package var maximumSize: Int

    /// Makes a loader.
    public init(maximumSize: Int = HTTPLoaderConfiguration.defaultMaximumResponseSize) {
        self.maximumSize = maximumSize
    }

    /// Whether this loader takes `url`: a `file:` or `data:` URL.
    public func canLoad(_ url: URL) -> Bool {
        Self.takes(url)
    }

    /// Whether `url` names bytes at hand, a `file:` or `data:` URL: what this loader
    /// takes, and what a data loader counts as local by default.
    static func takes(_ url: URL) -> Bool {
        guard let scheme = url.scheme else { return false }
        // Every request is asked as it is made; most schemes are in lower case
        // already: no new string for them.
        let lowered = scheme.hasASCIIUppercase ? scheme.lowercased() : scheme
        return lowered == "file" || lowered == "data"
    }

    /// Reads the file or decodes the `data:` URL. Progress is reported once, when the
    /// bytes are in hand.
    public func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        guard let url = request.url else { throw .invalidURL("") }
        switch url.scheme?.lowercased() {
        case "file":
            if Task.isCancelled { throw .cancelled }
            let data = try await readFile(url)
            progress(DataLoadingProgress(received: Int64(data.count), expected: Int64(data.count)))
            return DataResponse(data: data, url: url)
        case "data":
            let data = try Self.decodeDataURL(url.absoluteString, limit: maximumSize)
            progress(DataLoadingProgress(received: Int64(data.count), expected: Int64(data.count)))
            return DataResponse(data: data, url: url)
        default:
            throw .invalidURL(url.absoluteString)
        }
    }

    // MARK: - Files

    private func readFile(_ url: URL) async throws(ImagoError) -> Data {
        // file://host/path names a file on another machine; Imago does not go there.
        if let host = url.host, !host.isEmpty, host.lowercased() != "localhost" {
            throw .invalidURL(url.absoluteString)
        }
        let path = url.path
        guard !path.isEmpty else { throw .invalidURL(url.absoluteString) }
        let limit = maximumSize
        let cancelled = CancellationFlag()
        let result = await withTaskCancellationHandler {
            await DispatchQueue.global(qos: .utility).value { Self.read(path: path, limit: limit, cancelled: cancelled) }
        } onCancel: {
            cancelled.set()
        }
        return try result.get()
    }

    /// The bytes of the regular file at `path`, read as `file:` URLs are: a
    /// directory, a device (`/dev/zero`), a FIFO or a file over `limit` bytes is
    /// refused with a typed error that says which, before anything is read.
    public static func contentsOfFile(
        atPath path: String, limit: Int = HTTPLoaderConfiguration.defaultMaximumResponseSize
    ) throws(ImagoError) -> Data {
        try read(path: path, limit: limit, cancelled: CancellationFlag()).get()
    }

    /// Reads the regular file at `path` whole, in pieces so a cancel is noticed.
    private static func read(path: String, limit: Int, cancelled: CancellationFlag) -> Result<Data, ImagoError> {
        // O_NONBLOCK so that opening a FIFO returns at once (to be refused below)
        // instead of waiting for a writer; it changes nothing for regular files.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return .failure(fileError(path, errno)) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(fileError(path, errno)) }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: return .failure(fileError(path, EISDIR))
        default: return .failure(.fileError(path: path, reason: "is not a regular file", errno: nil))
        }
        let size = Int(info.st_size)
        guard size <= limit else {
            return .failure(.responseTooLarge(url: URL(fileURLWithPath: path).absoluteString, limit: limit))
        }
        var data = Data(count: size)
        var offset = 0
        let piece = 1 << 20
        while offset < size {
            if cancelled.isSet { return .failure(.cancelled) }
            let count = data.withUnsafeMutableBytes { buffer in
                posixRead(fd, buffer.baseAddress! + offset, min(piece, size - offset))
            }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(fileError(path, errno))
            }
            if count == 0 { break }  // the file shrank while being read: keep what is there
            offset += count
        }
        if offset < size { data.removeSubrange(offset...) }
        return .success(data)
    }

    /// The error for a call on `path` that failed with `code`: the errno itself, and a
    /// reason in words for the usual ones.
    private static func fileError(_ path: String, _ code: Int32) -> ImagoError {
        let reason = switch code {
        case ENOENT: "no such file"
        case EACCES, EPERM: "permission denied"
        case EISDIR: "is a directory, not a file"
        case ENOTDIR: "a part of the path is not a directory"
        default: String(cString: strerror(code)).lowercased()
        }
        return .fileError(path: path, reason: reason, errno: code)
    }

    // MARK: - data: URLs

    /// The bytes of a `data:` URL (RFC 2397): `data:[<media type>][;base64],<data>`.
    ///
    /// The payload is percent-decoded as bytes (it may be binary); a base64 payload is
    /// then decoded, ignoring whitespace and missing padding, as browsers do.
    static func decodeDataURL(_ string: String, limit: Int) throws(ImagoError) -> Data {
        let bytes = Array(string.utf8)
        guard bytes.count >= 5, String(decoding: bytes[0..<5], as: UTF8.self).lowercased() == "data:",
              let comma = bytes[5...].firstIndex(of: UInt8(ascii: ",")) else {
            throw .invalidURL(string)
        }
        let header = String(decoding: bytes[5..<comma], as: UTF8.self).lowercased()
        let isBase64 = header.split(separator: ";").last.map { $0.trimmingHTTPWhitespace == "base64" } ?? false
        // A fragment is not part of the data.
        let payloadEnd = bytes[(comma + 1)...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let payload = percentDecode(bytes[(comma + 1)..<payloadEnd])
        guard isBase64 else {
            guard payload.count <= limit else { throw .responseTooLarge(url: String(string.prefix(64)) + "…", limit: limit) }
            return Data(payload)
        }
        var text = payload.filter { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D || $0 == 0x0C) }
        guard text.count / 4 * 3 <= limit else { throw .responseTooLarge(url: String(string.prefix(64)) + "…", limit: limit) }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(text)) else { throw .invalidURL(String(string.prefix(200))) }
        return data
    }

    /// `%XX` escapes to bytes; a `%` not followed by two hex digits stays as it is.
    static func percentDecode(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var result: [UInt8] = []
        result.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.endIndex,
               let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(byte)
                index += 1
            }
        }
        return result
    }
}

/// `read(2)`, named apart from anything called `read` in scope.
private func posixRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(fd, buffer, count)
}

/// Set by a cancellation handler, read by work running outside Swift concurrency.
private final class CancellationFlag: Sendable {
    private let flag = Locked(false)
    var isSet: Bool { flag.withLock { $0 } }
    func set() { flag.withLock { $0 = true } }
}
