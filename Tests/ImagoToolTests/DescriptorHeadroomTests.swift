import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Out of file descriptors, URLSession on Linux failed loads with a misleading
/// "Couldn't connect to server" and sometimes crashed the process inside libdispatch
/// (which aborts when it cannot open `/proc/<tid>/stat` for a new thread). The curl
/// loader sizes its connections from the descriptor limit and queues loads beyond
/// them, so a process with few descriptors loads everything, only less at once; and it
/// opens no socket that would leave the process without a few descriptors free (one,
/// for its only connection), so with almost none its loads fail as "too many open
/// files", once each.
@Suite(.serialized) struct DescriptorHeadroomTests {
    #if os(Linux)
    @Test func tinyDescriptorLimitsNeverCrashAndFailOnlyForWantOfDescriptors() async throws {
        let servers = (0..<64).map { _ in TestServer() }
        for (index, server) in servers.enumerated() {
            try server.start()
            server.route("/p.png") { _ in .ok(pngData(UInt8(index))) }
        }
        defer { servers.forEach { $0.stop() } }
        let urls = (0..<2).flatMap { round in servers.map { $0.url("/p.png?r=\(round)").absoluteString } }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-descriptors-\(UUID()).txt")
        try urls.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }

        // 12 leaves the tool about two descriptors beyond what it opens to start; the
        // crash it guards against came there in about three runs in ten. From 13 on,
        // one connection with a descriptor to spare loads everything, slowly.
        for limit in [12, 13, 16, 24, 32] {
            for run in 1...2 {
                let result = try await Tool.run(
                    ["fetch", "--concurrency", "64", "--no-disk-cache", "--json", "--input", input.path],
                    descriptorLimit: limit)
                let context = "limit \(limit), run \(run)"
                #expect(result.status == 0 || result.status == 1, "\(context): status \(result.status); \(result.stderr.suffix(2000))")
                let records = result.stdoutLines.compactMap {
                    (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
                }
                let summary = records.last?["summary"] as? [String: Any]
                #expect(summary?["items"] as? Int == urls.count, "\(context): \(result.stdout.suffix(500))")
                // Each load asked once: a load without a descriptor is not retried.
                #expect(summary?["retries"] as? Int == 0, "\(context): \(summary ?? [:])")
                let errors = records.compactMap { $0["error"] as? String }
                #expect(errors.allSatisfy { $0.contains("too many open files") }, "\(context): \(errors.prefix(3))")
                if limit >= 13 { #expect(errors.isEmpty && result.status == 0, "\(context): \(errors.count) failed") }
            }
        }
    }

    @Test func sixtyFourOriginsAtConcurrencySixtyFourUnderALimitOfSixtyFourDescriptors() async throws {
        let servers = (0..<64).map { _ in TestServer() }
        for (index, server) in servers.enumerated() {
            try server.start()
            server.route("/p.png") { _ in .ok(pngData(UInt8(index))) }
        }
        defer { servers.forEach { $0.stop() } }
        // Four URLs an origin, interleaved, so every origin is wanted at once.
        let urls = (0..<4).flatMap { round in servers.map { $0.url("/p.png?r=\(round)").absoluteString } }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-descriptors-\(UUID()).txt")
        try urls.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }

        // Three runs: the crash it guards against came in about one run in seven.
        for run in 1...3 {
            let result = try await Tool.run(
                ["fetch", "--loader", "curl", "--concurrency", "64", "--no-disk-cache", "--retries", "0", "--json",
                 "--input", input.path],
                descriptorLimit: 64)
            #expect(result.status == 0, "run \(run): status \(result.status); \(result.stderr.suffix(2000))")
            let summary = result.stdoutLines.last.flatMap {
                (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
            }?["summary"] as? [String: Any]
            #expect(summary?["items"] as? Int == urls.count, "run \(run): \(result.stdout.suffix(500))")
            #expect(summary?["failed"] as? Int == 0, "run \(run): \(result.stderr.prefix(2000))")
            if result.status != 0 { break }
        }
    }
    #endif
}
