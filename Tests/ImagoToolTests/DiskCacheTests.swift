import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk tier used by `imago` processes: the default directory, two writers at
/// once on one directory, and a writer killed at any moment.
@Suite struct DiskCacheTests {
    let folder = DiskTestFolder()

    #if os(Linux)
    /// The default directory, seen by the tool run with a chosen environment:
    /// `$XDG_CACHE_HOME/imago`, else `$HOME/.cache/imago`.
    @Test func theDefaultDirectoryFollowsXDG() async throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        func fill(_ environment: [String: String]) async throws -> Int32 {
            let process = Process()
            process.executableURL = Tool.url
            process.arguments = ["cache", "fill", "--count", "1", "--size", "10"]
            process.environment = environment
            process.standardOutput = FileHandle.nullDevice
            try process.run()
            return await waitForExit(of: process)
        }
        let xdg = folder.url.appendingPathComponent("xdg")
        #expect(try await fill(["XDG_CACHE_HOME": xdg.path, "HOME": folder.url.path]) == 0)
        #expect(FileManager.default.fileExists(atPath: xdg.appendingPathComponent("imago/\(SHA256.hex("fill-0"))").path))
        let home = folder.url.appendingPathComponent("home")
        #expect(try await fill(["HOME": home.path]) == 0)
        let folderPath = home.appendingPathComponent(".cache/imago").path
        #expect(FileManager.default.fileExists(atPath: folderPath + "/" + SHA256.hex("fill-0")))
        var info = stat()
        #expect(stat(folderPath, &info) == 0 && info.st_mode & 0o777 == 0o700)
        // A relative XDG_CACHE_HOME is ignored, as the XDG base-directory specification says.
        #expect(try await fill(["XDG_CACHE_HOME": "relative", "HOME": home.path]) == 0)
    }
    #endif

    /// Two `imago cache fill` processes at once on one directory, then a third reader:
    /// every record whole, the size limit held.
    @Test func twoProcessesShareADirectory() async throws {
        let limit = 3_000_000
        func fill(from start: Int) async -> Int32 {
            let result = try? await Tool.run(["cache", "fill", "--cache-dir", folder.url.path, "--count", "300", "--size", "10000",
                                              "--start", "\(start)", "--size-limit", "\(limit)"], timeout: 60)
            return result?.status ?? -1
        }
        async let first = fill(from: 0)
        async let second = fill(from: 300)
        let results = await [first, second]
        #expect(results == [0, 0])
        #expect(folder.records.values.reduce(0, +) <= limit)
        #expect(folder.temporaryFiles.isEmpty)

        let reader = cache(sizeLimit: limit)
        await reader.flush()
        var present = 0
        for n in 0..<600 {
            guard let record = reader.record(forKey: "fill-\(n)") else { continue }
            present += 1
            #expect(record.data == fillBody(index: n, size: 10000), "fill-\(n)")
            #expect(record.metadata == Data("fill-\(n)".utf8))
        }
        // The limit holds about 298 records of 10,058 bytes.
        #expect(present > 250 && present <= 298, "\(present) present")
        #expect(reader.statistics.discarded == 0)
    }

    /// 50 times: kill `imago cache fill` at a random moment, then open the directory
    /// again. Every record is whole or missing, and no temporary file is left.
    @Test func aKilledWriterNeverLeavesATornRecord() async throws {
        let start = ContinuousClock.now
        var leftovers = 0, presentCounts: [Int] = []
        var generator = SystemRandomNumberGenerator()
        let expected = (0..<200).map { fillBody(index: $0, size: 20000) }
        for round in 0..<50 {
            let process = Process()
            process.executableURL = Tool.url
            process.arguments = ["cache", "fill", "--cache-dir", folder.url.path, "--count", "200", "--size", "20000"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            try await Task.sleep(for: .microseconds(Int.random(in: 5_000...100_000, using: &generator)))
            kill(process.processIdentifier, SIGKILL)
            _ = await waitForExit(of: process)
            leftovers += folder.temporaryFiles.count

            let cache = cache()
            await cache.flush()
            #expect(folder.temporaryFiles.isEmpty, "round \(round)")
            var present = 0
            for n in 0..<200 {
                guard let record = cache.record(forKey: "fill-\(n)") else { continue }
                present += 1
                #expect(record.data == expected[n] && record.metadata == Data("fill-\(n)".utf8), "round \(round): fill-\(n)")
            }
            #expect(cache.statistics.discarded == 0, "round \(round)")
            presentCounts.append(present)
            // Half the rounds start from an empty directory, half overwrite.
            if round % 2 == 1 {
                cache.removeAll()
                await cache.flush()
            }
        }
        let elapsed = ContinuousClock.now - start
        // Reported, not asserted: the loop's time is mostly process start-up, which a
        // loaded machine stretches; a hang is caught by each round's exit wait.
        print("SIGKILL loop: 50 rounds in \(elapsed); temporary files left by the killed writer: \(leftovers); records present per round: \(presentCounts)")
    }
}

/// `imago cache` end to end.
@Suite struct CacheCommandTests {
    private let folder = DiskTestFolder("cache-cli")

    func json(_ result: Tool.Result) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func fillStatsPruneClear() async throws {
        let dir = folder.url.path
        let fill = try await Tool.run(["cache", "fill", "--cache-dir", dir, "--count", "50", "--size", "1K", "--json"])
        #expect(fill.status == 0, "\(fill.stderr)")
        let filled = try json(fill)
        #expect(filled["written"] as? Int == 50 && filled["droppedWrites"] as? Int == 0)
        let recordSize = RecordFormat.fileSize(key: "fill-10".utf8.count, metadata: "fill-10".utf8.count, body: 1024)

        let stats = try json(await Tool.run(["cache", "stats", "--cache-dir", dir, "--json"]))
        #expect(stats["records"] as? Int == 50)
        #expect(stats["bytes"] as? Int == folder.records.values.reduce(0, +))

        let prune = try json(await Tool.run(["cache", "prune", "--cache-dir", dir, "--size-limit", "\(20 * recordSize)", "--json"]))
        #expect(prune["records"] as? Int == 20 && prune["removed"] as? Int == 30)
        #expect(folder.records.count == 20)

        try Data("keep me".utf8).write(to: folder.url.appendingPathComponent("notes.txt"))
        let clear = try await Tool.run(["cache", "clear", "--cache-dir", dir])
        #expect(clear.status == 0)
        #expect(clear.stdout.contains("0 records") && clear.stdout.contains("20 removed"), "\(clear.stdout)")
        #expect(folder.records.isEmpty)
        #expect(FileManager.default.fileExists(atPath: folder.url.appendingPathComponent("notes.txt").path))
    }

    /// Damage anywhere in a record's bytes, not only its header, is what prune deletes;
    /// the intact records stay.
    @Test func pruneDeletesARecordWhoseBodyIsDamaged() async throws {
        let dir = folder.url.path
        let fill = try await Tool.run(["cache", "fill", "--cache-dir", dir, "--count", "5", "--size", "64K"])
        #expect(fill.status == 0, "\(fill.stderr)")
        let damaged = try #require(folder.records.keys.sorted().first)
        let handle = try FileHandle(forUpdating: folder.url.appendingPathComponent(damaged))
        try handle.seek(toOffset: 40_000)
        let byte = try #require(handle.readData(ofLength: 1).first)
        try handle.seek(toOffset: 40_000)
        handle.write(Data([byte ^ 0x20]))
        try handle.close()

        let prune = try json(await Tool.run(["cache", "prune", "--cache-dir", dir, "--json"]))
        #expect(prune["records"] as? Int == 4 && prune["removed"] as? Int == 1, "\(prune)")
        #expect(folder.records.count == 4 && folder.records[damaged] == nil)
    }

    @Test func aMissingDirectoryIsEmptyAndNotCreated() async throws {
        let missing = folder.url.appendingPathComponent("nowhere").path
        let stats = try await Tool.run(["cache", "stats", "--cache-dir", missing])
        #expect(stats.status == 0 && stats.stdout.contains("0 records"))
        #expect(!FileManager.default.fileExists(atPath: missing))
    }

    @Test func badUsageExitsTwo() async throws {
        for arguments in [["cache"], ["cache", "bogus"], ["cache", "fill", "--size", "10"], ["cache", "fill", "--count", "1"],
                          ["cache", "stats", "--count", "3"], ["cache", "fill", "--count", "1", "--size", "ten"],
                          ["cache", "stats", "prune"], ["cache", "stats", "extra"]] {
            let result = try await Tool.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.hasPrefix("imago: "), "\(arguments)")
        }
        #expect(try await Tool.run(["cache", "--help"]).stdout.contains("usage: imago cache"))
    }

    @Test func anUnwritableCacheExitsOne() async throws {
        try FileManager.default.createDirectory(at: folder.url, withIntermediateDirectories: true)
        let file = folder.url.appendingPathComponent("file")
        try Data().write(to: file)
        let fill = try await Tool.run(["cache", "fill", "--cache-dir", file.appendingPathComponent("sub").path, "--count", "3", "--size", "10"])
        #expect(fill.status == 1)
        #expect(fill.stderr.contains("3 of 3 writes"), "\(fill.stderr)")
        let stats = try await Tool.run(["cache", "stats", "--cache-dir", file.path])
        #expect(stats.status == 1 && stats.stderr.contains("not a directory"))
    }
}
