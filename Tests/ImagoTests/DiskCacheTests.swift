import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

@Suite struct SHA256Tests {
    @Test func knownAnswers() {
        #expect(hex(SHA256.hash(Data())) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        let million = Data(repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(hex(SHA256.hash(million)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        // The same million bytes in uneven pieces, crossing block boundaries every way.
        var hasher = SHA256()
        var offset = 0, piece = 1
        while offset < million.count {
            let end = min(million.count, offset + piece)
            hasher.update(million[offset..<end])
            offset = end
            piece = piece * 7 % 193 + 1
        }
        #expect(hex(hasher.finalize()) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Every length around the padding boundaries (55, 56, 63, 64 bytes...) against
    /// coreutils, when it is installed.
    @Test func agreesWithSha256sumAtEveryLengthUpTo200() async throws {
        let tool = "/usr/bin/sha256sum"
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            print("skipped: \(tool) is not installed")
            return
        }
        let folder = DiskTestFolder("sha")
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        var inputs: [Data] = []
        for length in 0...200 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            inputs.append(data)
            try data.write(to: folder.url.appendingPathComponent(String(format: "%03d", length)))
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.currentDirectoryURL = folder.url
        process.arguments = (0...200).map { String(format: "%03d", $0) }
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = try await offThePool { String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) }
        _ = await waitForExit(of: process)
        let expected = output.split(separator: "\n").map { String($0.prefix(64)) }
        #expect(expected.count == inputs.count)
        for (data, digest) in zip(inputs, expected) {
            #expect(hex(SHA256.hash(data)) == digest, "length \(data.count)")
        }
    }
}

@Suite struct DiskCacheTests {
    let folder = DiskTestFolder()

    static func body(_ index: Int, _ size: Int) -> Data { fillBody(index: index, size: size) }

    static func recordSize(key: String, metadata: Int = 0, body: Int) -> Int {
        RecordFormat.fileSize(key: key.utf8.count, metadata: metadata, body: body)
    }

    @Test func crc32KnownAnswers() {
        func crc(_ text: String) -> UInt32 { Array(text.utf8).withUnsafeBytes { CRC32.update(0, $0) } }
        #expect(crc("") == 0)
        #expect(crc("123456789") == 0xCBF4_3926)
        #expect(crc("The quick brown fox jumps over the lazy dog") == 0x414F_A339)
        // Pieces of every alignment give the same as the whole.
        let data = [UInt8](Self.body(1, 1000))
        let whole = data.withUnsafeBytes { CRC32.update(0, $0) }
        for split in [1, 3, 7, 8, 9, 500, 999] {
            var running = data[..<split].withUnsafeBytes { CRC32.update(0, $0) }
            running = data[split...].withUnsafeBytes { CRC32.update(running, $0) }
            #expect(running == whole)
        }
    }

    @Test func crc32OfTwoPiecesFromTheirOwnChecksums() {
        let data = [UInt8](Self.body(2, 5000))
        let whole = data.withUnsafeBytes { CRC32.update(0, $0) }
        for split in [0, 1, 7, 8, 255, 256, 2049, 4999, 5000] {
            let first = data[..<split].withUnsafeBytes { CRC32.update(0, $0) }
            let second = data[split...].withUnsafeBytes { CRC32.update(0, $0) }
            #expect(CRC32.combine(first, second, secondCount: data.count - split) == whole)
        }
        // A record's trailer made from its body's checksum is the one made by reading
        // the body, and a record decoded gives that checksum back.
        let body = Self.body(3, 3000), metadata = Data("meta".utf8)
        let prefix = RecordFormat.prefix(key: "k", metadata: metadata, bodyCount: body.count, storedAt: 12)
        let checksum = body.withUnsafeBytes { CRC32.update(0, $0) }
        #expect(RecordFormat.trailer(prefix: prefix, body: body, bodyChecksum: checksum) == RecordFormat.trailer(prefix: prefix, body: body))
        let record = RecordFormat.encode(key: "k", metadata: metadata, body: body, storedAt: 12)
        #expect(RecordFormat.decode(record, key: "k")?.bodyChecksum == checksum)
        var damaged = record
        damaged[damaged.count - 10] ^= 1
        #expect(RecordFormat.decode(damaged, key: "k") == nil)
    }

    @Test func roundTripBeforeAndAfterTheWrite() throws {
        let cache = cache()
        let metadata = Data("HTTP/1.1 200\r\nETag: \"x\"".utf8)
        cache.store(Self.body(1, 5000), metadata: metadata, forKey: "https://example.com/a.jpg")
        cache.store(Data(), forKey: "empty")
        cache.store(Data([1, 2, 3]), metadata: Data([9]), forKey: "ключ 🔑")
        // Readable at once, from memory.
        #expect(cache.record(forKey: "https://example.com/a.jpg")?.data == Self.body(1, 5000))
        #expect(cache.record(forKey: "https://example.com/a.jpg")?.metadata == metadata)
        cache.flush()
        #expect(cache.statistics.pendingWrites == 0)
        let record = try #require(cache.record(forKey: "https://example.com/a.jpg"))
        #expect(record.data == Self.body(1, 5000) && record.metadata == metadata)
        #expect(abs(record.storedAt.timeIntervalSinceNow) < 60)
        #expect(cache.record(forKey: "empty") == DiskCache.Record(data: Data(), metadata: Data(), storedAt: cache.record(forKey: "empty")!.storedAt))
        #expect(cache.record(forKey: "ключ 🔑")?.data == Data([1, 2, 3]))
        #expect(cache.record(forKey: "ключ 🔑")?.metadata == Data([9]))
        #expect(cache.record(forKey: "never stored") == nil)
        #expect(cache.statistics.hits == 7 && cache.statistics.misses == 1)

        // Files are named by the SHA-256 of the key, and laid out as documented.
        #expect(cache.fileURL(forKey: "abc").lastPathComponent == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let names = Set(["https://example.com/a.jpg", "empty", "ключ 🔑"].map { SHA256.hex($0) })
        #expect(Set(folder.records.keys) == names)
        let file = try Data(contentsOf: cache.fileURL(forKey: "https://example.com/a.jpg"))
        #expect(file.prefix(8) == Data(RecordFormat.magic))
        #expect(file.count == Self.recordSize(key: "https://example.com/a.jpg", metadata: metadata.count, body: 5000))
        #expect(file.dropFirst(40).prefix(25) == Data("https://example.com/a.jpg".utf8))
        let checksum = file.dropLast(4).withUnsafeBytes { CRC32.update(0, $0) }
        #expect(file.suffix(4).elementsEqual(RecordFormat.littleEndian(UInt64(checksum), count: 4)))
        #expect(folder.temporaryFiles.isEmpty)
        #expect(cache.statistics.totalSize == folder.records.values.reduce(0, +))
    }

    /// A record's head (its metadata and body length) is read without its body: from
    /// memory before the write, from the file after; a body damaged on disk still
    /// gives its head, and fails where the body is read.
    @Test func aHeadIsReadWithoutTheBody() throws {
        let cache = cache()
        let metadata = Data("ETag: \"h\"".utf8)
        cache.store(Self.body(2, 3000), metadata: metadata, forKey: "headed")
        #expect(cache.recordHead(forKey: "headed")?.metadata == metadata && cache.recordHead(forKey: "headed")?.bodyCount == 3000)
        cache.flush()
        let reopened = self.cache()
        let head = try #require(reopened.recordHead(forKey: "headed"))
        #expect(head.metadata == metadata && head.bodyCount == 3000)
        #expect(reopened.statistics.hits == 0)
        #expect(reopened.recordHead(forKey: "never stored") == nil)
        let file = cache.fileURL(forKey: "headed")
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 10] ^= 0xFF
        try bytes.write(to: file)
        #expect(reopened.recordHead(forKey: "headed")?.bodyCount == 3000)
        #expect(reopened.record(forKey: "headed") == nil)
        // A file cut short is refused from its header alone.
        try bytes.prefix(bytes.count - 100).write(to: file)
        #expect(reopened.recordHead(forKey: "headed") == nil)
    }

    @Test func recordsSurviveARestart() throws {
        do {
            let cache = cache()
            for n in 0..<20 { cache.store(Self.body(n, 100 * n), metadata: Data("m\(n)".utf8), forKey: "key \(n)") }
            cache.flush()
        }
        let reopened = cache()
        reopened.flush()
        #expect(reopened.statistics.count == 20)
        #expect(reopened.statistics.totalSize == folder.records.values.reduce(0, +))
        for n in 0..<20 {
            let record = try #require(reopened.record(forKey: "key \(n)"))
            #expect(record.data == Self.body(n, 100 * n) && record.metadata == Data("m\(n)".utf8))
        }
    }

    @Test func aReplacedRecordIsTheNewOne() {
        let cache = cache()
        cache.store(Data("old".utf8), forKey: "k")
        cache.flush()
        cache.store(Data("new, longer".utf8), forKey: "k")
        #expect(cache.record(forKey: "k")?.data == Data("new, longer".utf8))
        cache.flush()
        #expect(cache.record(forKey: "k")?.data == Data("new, longer".utf8))
        #expect(cache.statistics.count == 1)
        #expect(cache.statistics.totalSize == Self.recordSize(key: "k", body: 11))
        #expect(folder.records.values.reduce(0, +) == Self.recordSize(key: "k", body: 11))
    }

    @Test func theDirectoryIsCreatedWithMode0700() throws {
        let nested = folder.url.appendingPathComponent("a/b/imago", isDirectory: true)
        let cache = DiskCache(directory: nested)
        cache.store(Data("x".utf8), forKey: "k")
        cache.flush()
        for path in [folder.url.path, folder.url.appendingPathComponent("a/b").path, nested.path] {
            var info = stat()
            #expect(stat(path, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o700, "\(path)")
        }
        var info = stat()
        #expect(stat(cache.fileURL(forKey: "k").path, &info) == 0 && info.st_mode & 0o777 == 0o600)
    }

    @Test func theSizeLimitHoldsThroughABurst() {
        let limit = 200_000
        let cache = cache(sizeLimit: limit)
        var largest = 0
        var generator = SystemRandomNumberGenerator()
        for n in 0..<500 {
            let size = Int.random(in: 500...8000, using: &generator)
            cache.store(Self.body(n, size), forKey: "burst \(n)")
            largest = max(largest, Self.recordSize(key: "burst \(n)", body: size))
            #expect(cache.statistics.totalSize <= limit)
            if n % 5 == 4 {
                // A temporary file is the record in flight, already counted as pending.
                let held = folder.records.values.reduce(0, +) + cache.statistics.pendingSize
                #expect(held <= limit + largest, "after \(n + 1) writes: \(held) bytes held")
            }
        }
        cache.flush()
        let onDisk = folder.records.values.reduce(0, +)
        #expect(onDisk <= limit)
        #expect(onDisk == cache.statistics.totalSize)
        #expect(folder.records.count == cache.statistics.count)
        #expect(cache.statistics.evictions == 500 - cache.statistics.count)
        #expect(cache.statistics.droppedWrites == 0)
        // The newest survive.
        #expect(cache.record(forKey: "burst 499") != nil)
        #expect(cache.record(forKey: "burst 0") == nil)
    }

    @Test func evictionRemovesTheLeastRecentlyUsed() {
        let size = Self.recordSize(key: "key 10", body: 1000)
        let cache = cache(sizeLimit: 10 * size)
        for n in 10..<20 { cache.store(Self.body(n, 1000), forKey: "key \(n)") }
        cache.flush()
        for n in [10, 11, 12] { #expect(cache.record(forKey: "key \(n)") != nil) }
        for n in 20..<25 { cache.store(Self.body(n, 1000), forKey: "key \(n)") }
        let present = (10..<25).filter { cache.record(forKey: "key \($0)") != nil }
        #expect(present == [10, 11, 12, 18, 19, 20, 21, 22, 23, 24])
        cache.flush()
        #expect(Set(folder.records.keys) == Set(present.map { SHA256.hex("key \($0)") }))
    }

    /// Recency outlives the process: reads mark the files, so a new cache on the same
    /// directory evicts the ones not read.
    @Test func recencySurvivesARestart() {
        let clock = DiskTestClock()
        let size = Self.recordSize(key: "key 10", body: 1000)
        do {
            let cache = cache(sizeLimit: 10 * size, clock: clock)
            for n in 10..<20 {
                cache.store(Self.body(n, 1000), forKey: "key \(n)")
                clock.advance(1)
            }
            cache.flush()
            // Later than the touch interval, so the reads are written to the files.
            clock.advance(DiskCache.touchInterval + 1)
            for n in [10, 11, 12] { #expect(cache.record(forKey: "key \(n)") != nil) }
            cache.flush()
        }
        clock.advance(1)
        let reopened = cache(sizeLimit: 10 * size, clock: clock)
        for n in 20..<23 { reopened.store(Self.body(n, 1000), forKey: "key \(n)") }
        reopened.flush()
        let present = (10..<23).filter { reopened.record(forKey: "key \($0)") != nil }
        #expect(present == [10, 11, 12, 16, 17, 18, 19, 20, 21, 22])
    }

    /// A second cache on the same directory stands for another process: its files
    /// count towards the first one's limit as soon as it looks (here, at `flush`).
    @Test func anotherWritersFilesCountTowardsTheLimit() {
        let size = Self.recordSize(key: "a0", body: 1000)
        let first = cache(sizeLimit: 10 * size)
        let second = cache(sizeLimit: 100 * size)
        for n in 0..<6 { first.store(Self.body(n, 1000), forKey: "a\(n)") }
        first.flush()
        for n in 0..<8 { second.store(Self.body(n, 1000), forKey: "b\(n)") }
        second.flush()
        // Fourteen files, unless the first cache already noticed the change on its
        // own and began evicting (seen on a slow, sanitized run).
        #expect((10...14).contains(folder.records.count))
        first.flush()
        // The first cache now knows all 14, and kept ten, the newest among them: b7
        // was written last. (Which of the older ones went depends on when the first
        // cache noticed the second's files, which a loaded machine can move.)
        #expect(first.statistics.count == 10)
        #expect(folder.records.count == 10)
        #expect(folder.records.values.reduce(0, +) <= 10 * size)
        #expect(first.record(forKey: "b7") != nil)
        // Deleting a file someone else already deleted is fine.
        second.removeRecord(forKey: "a0")
        second.removeAll()
        second.flush()
        first.flush()
        #expect(first.statistics.count == 0 && first.statistics.totalSize == 0)
    }

    @Test func damagedAndForeignFilesAreMissesAndDeleted() throws {
        let cache = cache()
        for n in 0..<8 { cache.store(Self.body(n, 3000), metadata: Data("meta".utf8), forKey: "k\(n)") }
        cache.flush()
        func url(_ n: Int) -> URL { cache.fileURL(forKey: "k\(n)") }
        func modify(_ n: Int, _ change: (inout Data) -> Void) throws {
            var data = try Data(contentsOf: url(n))
            change(&data)
            try data.write(to: url(n))
        }
        try modify(0) { $0[1500] ^= 0x01 }                    // one bit of the body
        try modify(1) { $0 = $0.prefix($0.count / 2) }        // truncated
        try modify(2) { $0 = $0.prefix(20) }                  // shorter than a header
        try modify(3) { $0[2] ^= 0x40 }                       // the magic
        try modify(4) { $0[$0.count - 1] ^= 0x80 }            // the checksum
        try modify(5) { $0[41] ^= 0x01 }                      // the stored key
        // A valid record of another key under this key's name.
        try FileManager.default.removeItem(at: url(6))
        try FileManager.default.copyItem(at: url(7), to: url(6))
        // Not ours at all, under a record name.
        try Data("hello, I am a text file".utf8).write(to: cache.fileURL(forKey: "foreign"))

        for n in 0..<7 {
            #expect(cache.record(forKey: "k\(n)") == nil, "k\(n)")
            #expect(!FileManager.default.fileExists(atPath: url(n).path), "k\(n)")
        }
        #expect(cache.record(forKey: "foreign") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "foreign").path))
        #expect(cache.record(forKey: "k7")?.data == Self.body(7, 3000))
        #expect(cache.statistics.discarded == 8)
        cache.flush()
        #expect(cache.statistics.count == 1)
        #expect(cache.statistics.totalSize == folder.records.values.reduce(0, +))
    }

    @Test func pruneDeletesWhatIsNotARecordButLeavesOtherFilesAlone() throws {
        let cache = cache()
        for n in 0..<3 { cache.store(Self.body(n, 100), forKey: "k\(n)") }
        cache.flush()
        try Data("garbage".utf8).write(to: cache.fileURL(forKey: "foreign"))
        let readme = folder.url.appendingPathComponent("README")
        try Data("not a record name".utf8).write(to: readme)
        // Another process's temporary file, abandoned by its death; pid 2^22+1 is
        // above Linux's pid_max, so no process has it.
        let temporary = folder.url.appendingPathComponent(RecordFormat.temporaryPrefix + "4194305.1." + SHA256.hex("k9"))
        try Data("half a record".utf8).write(to: temporary)
        cache.prune()
        cache.flush()
        #expect(folder.records.count == 3)
        #expect(folder.temporaryFiles.isEmpty)
        #expect(FileManager.default.fileExists(atPath: readme.path))
        #expect(cache.statistics.discarded == 1 && cache.statistics.count == 3)
        cache.removeAll()
        for n in 0..<3 { #expect(cache.record(forKey: "k\(n)") == nil) }
        cache.flush()
        #expect(folder.records.isEmpty)
        #expect(FileManager.default.fileExists(atPath: readme.path))
    }

    @Test func removalsAreImmediate() {
        let cache = cache()
        for n in 0..<5 { cache.store(Self.body(n, 100), forKey: "k\(n)") }
        cache.flush()
        cache.removeRecord(forKey: "k0")
        #expect(cache.record(forKey: "k0") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "k0").path))
        cache.removeRecord(forKey: "never there")
        // Removed while still waiting to be written: never lands.
        cache.store(Data("x".utf8), forKey: "late")
        cache.removeRecord(forKey: "late")
        cache.removeAll()
        cache.store(Data("after".utf8), forKey: "after")
        for n in 1..<5 { #expect(cache.record(forKey: "k\(n)") == nil) }
        #expect(cache.record(forKey: "after")?.data == Data("after".utf8))
        cache.flush()
        #expect(Set(folder.records.keys) == [SHA256.hex("after")])
        #expect(cache.record(forKey: "after")?.data == Data("after".utf8))
        #expect(cache.statistics.count == 1)
    }

    @Test func recordsOlderThanTheMaximumAgeAreMisses() {
        let clock = DiskTestClock()
        let cache = cache(maximumAge: 3600, clock: clock)
        cache.store(Data("a".utf8), forKey: "a")
        cache.store(Data("b".utf8), forKey: "b")
        cache.flush()
        clock.advance(1800)
        cache.store(Data("c".utf8), forKey: "c")
        cache.store(Data("pending".utf8), forKey: "pending")
        #expect(cache.record(forKey: "a") != nil)
        clock.advance(1801)
        // a and b are 3601 s old, c 1801 s.
        #expect(cache.record(forKey: "a") == nil)
        #expect(!FileManager.default.fileExists(atPath: cache.fileURL(forKey: "a").path))
        #expect(cache.record(forKey: "c") != nil)
        // Expired while waiting to be written: a miss too.
        clock.advance(1800)
        #expect(cache.record(forKey: "pending") == nil)
        #expect(cache.statistics.evictions == 2)
        // b was never read: prune finds it from its header.
        cache.prune()
        cache.flush()
        #expect(Set(folder.records.keys) == [])
        #expect(cache.statistics.count == 0)
    }

    @Test func aNewCacheDeletesExpiredRecordsWhenItOpens() {
        let clock = DiskTestClock()
        do {
            let cache = cache(maximumAge: 60, clock: clock)
            cache.store(Data("old".utf8), forKey: "old")
            cache.flush()
        }
        clock.advance(61)
        let reopened = cache(maximumAge: 60, clock: clock)
        reopened.flush()
        #expect(folder.records.isEmpty)
        #expect(reopened.statistics.evictions == 1)
    }

    @Test func anUnusableDirectoryIsNamedWithItsReason() throws {
        #expect(DiskCache(directory: folder.url).directoryProblem() == nil)
        #expect(folder.temporaryFiles.isEmpty)
        let file = folder.url.appendingPathComponent("a-file")
        try Data("x".utf8).write(to: file)
        #expect(DiskCache(directory: file).directoryProblem() == "'\(file.path)' is not a directory")
        let under = DiskCache(directory: file.appendingPathComponent("sub")).directoryProblem()
        #expect(under?.contains("cannot be made: Not a directory") == true, "\(String(describing: under))")
    }

    @Test func anUnwritableDirectoryDropsWritesAndNeverCrashes() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        // Read-only stops most users; root writes anyway, but not under a regular file.
        let locked = folder.url.appendingPathComponent("locked", isDirectory: true)
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
        chmod(locked.path, 0o500)
        defer { chmod(locked.path, 0o700) }
        let probe = locked.appendingPathComponent("probe").path
        let directory: URL
        if FileManager.default.createFile(atPath: probe, contents: Data()) {
            try FileManager.default.removeItem(atPath: probe)
            let file = folder.url.appendingPathComponent("regular-file")
            try Data().write(to: file)
            directory = file.appendingPathComponent("sub", isDirectory: true)
        } else {
            directory = locked
        }
        let cache = DiskCache(directory: directory, sizeLimit: 10_000)
        for n in 0..<5 { cache.store(Self.body(n, 100), forKey: "k\(n)") }
        cache.store(Self.body(9, 20_000), forKey: "too big for the limit")
        cache.flush()
        #expect(cache.statistics.droppedWrites == 6)
        for n in 0..<5 { #expect(cache.record(forKey: "k\(n)") == nil) }
        #expect(cache.statistics.count == 0 && cache.statistics.totalSize == 0)
        cache.removeRecord(forKey: "k0")
        cache.removeAll()
        cache.prune()
        cache.flush()
        #expect(cache.statistics.count == 0)
    }

    /// A disk smaller than the configured limit: when it fills up, the cache lowers
    /// its limit and evicts, so that later writes land again and recent records stay,
    /// instead of freezing with nothing ever evicted. A real full file system: a 5 MiB
    /// tmpfs, where mounting is allowed.
    @Test func aFullDiskLowersTheLimitAndKeepsEvicting() throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=5m", "tmpfs", folder.url.path]
        mount.standardError = FileHandle.nullDevice
        guard (try? mount.run()) != nil, (mount.waitUntilExit(), mount.terminationStatus).1 == 0 else {
            print("skipped: mounting a tmpfs is not permitted here")
            return
        }
        defer {
            let unmount = Process()
            unmount.executableURL = URL(fileURLWithPath: "/bin/umount")
            unmount.arguments = [folder.url.path]
            try? unmount.run()
            unmount.waitUntilExit()
        }
        // The cache's clock stands still: a slow run (the sanitizers) must not reach the
        // free-space check, whose raised limit is another test's subject.
        let cache = cache(sizeLimit: 512 << 20, clock: DiskTestClock())
        for n in 0..<100 {
            cache.store(Self.body(n, 200_000), forKey: "k\(n)")
            cache.flush()
        }
        let statistics = cache.statistics
        #expect(statistics.sizeLimit < 5 << 20 && statistics.evictions > 0, "\(statistics)")
        // The last records landed, after the limit came down.
        for n in 95..<100 { #expect(cache.record(forKey: "k\(n)")?.data == Self.body(n, 200_000), "k\(n)") }
        #expect(statistics.droppedWrites < 10, "\(statistics)")
        #expect(folder.records.count == statistics.count && folder.temporaryFiles.isEmpty)
    }

    /// Many threads storing, reading and removing a few keys under a small limit; the
    /// books must match the disk afterwards and every read must be whole.
    @Test func concurrentUseKeepsTheBooksStraight() async {
        let cache = cache(sizeLimit: 60_000)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            var generator = SystemRandomNumberGenerator()
            for step in 0..<400 {
                let n = Int.random(in: 0..<40, using: &generator)
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: cache.removeRecord(forKey: "k\(n)")
                case 1...4: cache.store(Self.body(n, 500 + n * 50), metadata: Data("\(n)".utf8), forKey: "k\(n)")
                default:
                    if let record = cache.record(forKey: "k\(n)") {
                        #expect(record.data == Self.body(n, 500 + n * 50) && record.metadata == Data("\(n)".utf8))
                    }
                }
                if thread == 0 && step == 200 { cache.prune() }
                #expect(cache.statistics.totalSize <= 60_000)
            }
        }
        await cache.flush()
        #expect(cache.statistics.totalSize == folder.records.values.reduce(0, +))
        #expect(cache.statistics.count == folder.records.count)
        #expect(folder.temporaryFiles.isEmpty)
    }
}
