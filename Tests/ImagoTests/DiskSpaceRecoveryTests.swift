import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A disk that filled up and then got room again: the disk tier lowered its limit to
/// what fitted, and returns to its configured limit, storing records again, within
/// seconds and in the same process. A real full file system: a 4 MiB tmpfs.
@Suite struct DiskSpaceRecoveryTests {
    @Test func aDiskFreedAfterFillingUpStoresRecordsAgain() async throws {
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("imago-full-disk-\(UUID())")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        guard mount("tmpfs", mountPoint.path, "tmpfs", 0, "size=4m") == 0 else {
            let reason = String(cString: strerror(errno))
            if ProcessInfo.processInfo.environment["CI"] != nil {
                Issue.record("mounting a tmpfs is required under CI: \(reason)")
            } else {
                print("skipped: mounting a tmpfs is not permitted here (\(reason))")
            }
            return
        }
        defer { umount2(mountPoint.path, Int32(MNT_DETACH)) }

        // Another program fills the disk.
        let filler = mountPoint.appendingPathComponent("filler").path
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fd >= 0)
        let block = [UInt8](repeating: 7, count: 64 << 10)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)

        let cache = DiskCache(directory: mountPoint.appendingPathComponent("cache"), sizeLimit: 64 << 20)
        let body = Data(repeating: 1, count: 100_000)
        cache.store(body, forKey: "while-full")
        await cache.flush()
        let lowered = cache.statistics
        #expect(lowered.sizeLimit < 64 << 20 && lowered.count == 0, "\(lowered)")

        // The disk has room again: within seconds, stores land again.
        unlink(filler)
        let start = ContinuousClock.now
        var stored = 0
        for attempt in 0..<600 where stored == 0 {  // a minute at most
            cache.store(body, forKey: "after-\(attempt)")
            await cache.flush()
            stored = cache.statistics.count
            if stored == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        print("records stored again \(ContinuousClock.now - start) after the disk was freed")
        let recovered = cache.statistics
        // The limit is what the 4 MiB disk allows, leaving a tenth of it free.
        #expect(recovered.count == 1 && recovered.sizeLimit > 3 << 20 && recovered.sizeLimit < 4 << 20, "\(recovered)")
        for n in 0..<20 { cache.store(body, forKey: "more-\(n)") }
        await cache.flush()
        #expect(cache.statistics.count == 21 && cache.statistics.droppedWrites == recovered.droppedWrites, "\(cache.statistics)")
        #expect(cache.record(forKey: "more-19")?.data == body)
    }

    /// The books alone: the limit comes down on a full disk, is measured again only
    /// when due, rises as room allows and, back at the configured limit, is no longer
    /// watched.
    @Test func theLimitReturnsToTheConfiguredOneAsRoomAllows() {
        var state = DiskCacheState(sizeLimit: 1_000_000, maximumAge: nil)
        _ = state.shrinkAfterRunningOutOfSpace(writing: 100, at: 10)
        #expect(state.sizeLimit == 0)
        let interval = DiskCache.spaceCheckInterval
        var claims = [state.claimSpaceCheck(at: 10 + interval / 2), state.claimSpaceCheck(at: 10 + interval)]
        // Claimed: one thread measures, the next waits its interval.
        claims.append(state.claimSpaceCheck(at: 10 + interval))
        #expect(claims == [false, true, false])
        state.noteFreeSpace(500_000)
        #expect(state.sizeLimit == 450_000)
        state.noteFreeSpace(100_000)  // someone else filled the disk meanwhile: never down here
        #expect(state.sizeLimit == 450_000)
        claims = [state.claimSpaceCheck(at: 10 + 2 * interval)]
        state.noteFreeSpace(50_000_000)
        #expect(state.sizeLimit == 1_000_000)
        claims.append(state.claimSpaceCheck(at: 1_000))
        #expect(claims == [true, false])
    }
}
