import Foundation
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What the two soaks of `make soak` share: the library's (ImagoUITests) and the
/// tool's (ImagoToolTests, where this file is a symbolic link). It reads the disk
/// tier's records with the library's internals, which only a test target may import.
enum Soak {
    static let enabled = ProcessInfo.processInfo.environment["IMAGO_SOAK"] != nil

    /// How the soak's server answers for image `n`: one image in ten is faulty, each
    /// in its own way, and all but the slow answer fail.
    static func answer(_ n: Int, body: Data) -> (response: @Sendable () -> TestServer.Response, fails: Bool) {
        switch n % 10 == 0 ? (n / 10) % 6 : -1 {
        case 0: ({ .text("gone", status: 404) }, true)
        case 1: ({ .text("busy", status: 503) }, true)
        case 2: ({ .resetAfter(20, of: body) }, true)
        case 3: ({ .truncate(declaredLength: body.count, actualBody: body.prefix(body.count / 2)) }, true)
        case 4: ({ .ok(Data("<html>portal</html>".utf8)) }, true)
        case 5: ({ .trickle(body, bytesPerChunk: body.count / 4 + 1, interval: 0.05) }, false)
        default: ({ .ok(body, headers: ["Cache-Control": "max-age=600"]) }, false)
        }
    }

    /// Every record file in `disk`'s directory read back whole and checked (format,
    /// checksum, and the name its key gives); returns the bad ones.
    static func verify(_ disk: DiskCache) -> (checked: Int, bad: [String]) {
        var checked = 0, bad: [String] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: disk.directory.path)) ?? [] {
            guard RecordFormat.isRecordName(name) else { continue }
            let path = disk.filePath(name)
            guard let header = RecordFile.header(at: path), let handle = FileHandle(forReadingAtPath: path) else {
                bad.append(name)
                continue
            }
            let bytes = handle.readDataToEndOfFile()
            try? handle.close()
            let keyBytes = bytes.dropFirst(RecordFormat.headerSize).prefix(header.keyCount)
            let key = String(decoding: keyBytes, as: UTF8.self)
            guard DiskCache.fileName(forKey: key) == name,
                  case .found = RecordFile.read(path, key: key, wholeBody: true, at: 0, touchInterval: .infinity, isExpired: { _ in false })
            else {
                bad.append(name)
                continue
            }
            checked += 1
        }
        return (checked, bad)
    }
}
