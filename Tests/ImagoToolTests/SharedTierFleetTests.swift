#if canImport(CHiredis)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A fleet: `imago fetch` processes started together, each with a disk cache of its
/// own, sharing one Redis (or a 3-master cluster), against the test server, which
/// counts what the origin is asked.
@Suite(.serialized) struct SharedTierFleetTests {
    static let count = 300
    let server = TestServer()
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fleet-\(UUID())")
    let input: URL

    init() throws {
        try server.start()
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        // Each image has a width of its own, so a record tells whose image it got.
        var lines: [String] = []
        for index in 0..<Self.count {
            server.route("/fleet/\(index).png", data: pngData(UInt8(index % 251), width: 20 + index, height: 12),
                         headers: ["Cache-Control": "max-age=3600"])
            lines.append(server.url("/fleet/\(index).png").absoluteString)
        }
        input = root.appendingPathComponent("urls.txt")
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// What one process reported: its records' sources by URL index, its summary.
    struct Run: Sendable {
        var sources: [Int: String] = [:]
        var wrong: [String] = []
        /// The summary's counts of the shared tier.
        var shared: [String: Int] = [:]
    }

    /// Starts `processes` fetches at once over every URL, each with a new disk cache.
    func wave(_ name: String, processes: Int = 4, redis: String, extra: [String] = []) async throws -> [Run] {
        try await withThrowingTaskGroup(of: Run.self) { group in
            for process in 0..<processes {
                let arguments = [
                    "fetch", "--json", "--input", input.path, "--cache-dir", root.appendingPathComponent("\(name)-\(process)").path,
                    "--redis", redis, "--redis-timeout", "5", "--concurrency", "8",
                ] + extra
                group.addTask { try await parse(Tool.run(arguments, timeout: 300)) }
            }
            var runs: [Run] = []
            for try await run in group { runs.append(run) }
            return runs
        }
    }

    func parse(_ result: Tool.Result) -> Run {
        var run = Run()
        if result.status != 0 { run.wrong.append("exit \(result.status): \(result.stderr)") }
        for line in result.stdoutLines {
            guard let record = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            if let summary = record["summary"] as? [String: Any] {
                run.shared = summary["shared"] as? [String: Int] ?? [:]
                continue
            }
            guard let url = record["url"] as? String, let index = Int(url.split(separator: "/").last?.split(separator: ".").first ?? "") else {
                continue
            }
            if record["ok"] as? Bool != true || record["width"] as? Int != 20 + index {
                run.wrong.append("\(url): \(record)")
            }
            run.sources[index] = record["source"] as? String
        }
        if run.sources.count != Self.count { run.wrong.append("\(run.sources.count) records of \(Self.count)") }
        return run
    }

    var originRequests: Int { (0..<Self.count).reduce(0) { $0 + server.count(for: "/fleet/\($1).png") } }

    /// Runs the two waves and checks them: the origin asked once per URL (beyond
    /// that only where a wait for a lease ran out, a lease expired under its holder or
    /// a holder's write was dropped, each counted and printed: a loaded machine can
    /// stall a holder past its lease, or its writes past the queue's bound), then not
    /// at all.
    func checkWaves(redis: String, during secondWave: (@Sendable () async throws -> Void)? = nil) async throws {
        let first = try await wave("first", redis: redis)
        for run in first { #expect(run.wrong.isEmpty, "\(run.wrong.prefix(3))") }
        func total(_ counter: String) -> Int { first.reduce(0) { $0 + ($1.shared[counter] ?? 0) } }
        let expired = total("leaseWaitsExpired"), lost = total("leasesLost"), dropped = total("writesDropped")
        let requests = originRequests
        let failures = total("failures")
        print("fleet over \(redis): \(requests) origin requests for \(Self.count) URLs from 4 processes; \(expired) lease waits expired, \(lost) leases lost, \(dropped) writes dropped, \(failures) Redis commands failed; \(first.map(\.shared))")
        #expect(requests >= Self.count)
        #expect(requests - Self.count <= expired + lost + dropped)
        // Every URL loaded by all four, each from the network once across the fleet.
        let fromNetwork = first.reduce(0) { $0 + $1.sources.values.filter { $0 == "network" }.count }
        #expect(fromNetwork == requests)

        let mover = Task { try await secondWave?() }
        let second = try await wave("second", redis: redis)
        try await mover.value
        for run in second {
            #expect(run.wrong.isEmpty, "\(run.wrong.prefix(3))")
            #expect(run.sources.values.allSatisfy { $0 == "shared" })
        }
        #expect(originRequests == requests)
    }

    @Test func fourProcessesAskTheOriginOncePerImageAndANewWaveNotAtAll() async throws {
        defer { cleanUp() }
        let redis = try RedisServer()
        try await checkWaves(redis: redis.url.absoluteString)
    }

    @Test func theSameOverAClusterWhileItsSlotsMove() async throws {
        defer { cleanUp() }
        let cluster = try RedisCluster()
        try await checkWaves(redis: cluster.urls.map(\.absoluteString).joined(separator: ",")) {
            let result = try await Task.detached {
                try cluster.reshard(slots: 2000, from: cluster.masters[0], to: cluster.masters[2])
            }.value
            #expect(result.status == 0, "\(result.output)")
        }
        for master in cluster.masters {
            #expect((try master.run(redisCommand("DBSIZE")).integer ?? 0) > 0)
        }
    }

    @Test func redisKilledMidRunFailsNoLoad() async throws {
        defer { cleanUp() }
        let redis = try RedisServer()
        let running = Task {
            try await parse(Tool.run([
                "fetch", "--json", "--input", input.path, "--cache-dir", root.appendingPathComponent("killed").path,
                "--redis", redis.url.absoluteString, "--redis-timeout", "0.2", "--concurrency", "4",
            ], timeout: 300))
        }
        // Killed once the run is under way: some images have gone through Redis.
        await waitUntil { originRequests >= 20 }
        redis.killAndWait()
        let run = try await running.value
        #expect(run.wrong.isEmpty, "\(run.wrong.prefix(3))")
        #expect((run.shared["stored"] ?? 0) + (run.shared["writesDropped"] ?? 0) > 0)
    }
}
#endif
