import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// What the disk tier's tests share: the library's (ImagoTests) and those that run
// `imago cache` (ImagoToolTests, where this file is a symbolic link).

/// A folder of its own for each test, deleted afterwards.
final class DiskTestFolder: Sendable {
    let url: URL

    init(_ label: String = "disk") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("imago-\(label)-\(UUID().uuidString)", isDirectory: true)
    }

    deinit {
        // A test may have made it read-only.
        chmod(url.path, 0o700)
        try? FileManager.default.removeItem(at: url)
    }

    /// Record files (64 hex digits) and their sizes.
    var records: [String: Int] {
        var result: [String: Int] = [:]
        for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] where RecordFormat.isRecordName(name) {
            var info = stat()
            if stat(url.appendingPathComponent(name).path, &info) == 0 { result[name] = Int(info.st_size) }
        }
        return result
    }

    var temporaryFiles: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).filter { $0.hasPrefix(RecordFormat.temporaryPrefix) }
    }
}

/// A clock the test moves.
final class DiskTestClock: Sendable {
    private let time = Locked(Date())
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: Double) { time.withLock { $0 += seconds } }
}

/// `imago cache fill`'s body for record `index` (SplitMix64 started from the index),
/// repeated here so the tests check bytes the tool wrote without trusting it.
func fillBody(index: Int, size: Int) -> Data {
    var state = UInt64(truncatingIfNeeded: index)
    var bytes = [UInt8]()
    bytes.reserveCapacity(size + 8)
    while bytes.count < size {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        withUnsafeBytes(of: z.littleEndian) { bytes += $0 }
    }
    return Data(bytes.prefix(size))
}

extension DiskCacheTests {
    func cache(sizeLimit: Int = 512 << 20, maximumAge: Double? = 30 * 86400, clock: DiskTestClock? = nil) -> DiskCache {
        guard let clock else { return DiskCache(directory: folder.url, sizeLimit: sizeLimit, maximumAge: maximumAge) }
        return DiskCache(directory: folder.url, sizeLimit: sizeLimit, maximumAge: maximumAge, now: { clock.now })
    }
}
