import Foundation
import Testing
import Imago
import _ImagoTestSupport

/// `imago fetch --json --events`: the loader's event stream printed by the real
/// tool, against the test server on 127.0.0.1.
@Suite struct FetchEventsTests {
    @Test func eachLoadsEventsArePrintedInOrder() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let calls = Locked(0)
        server.route("/flaky.png") { _ in calls.withLock { $0 += 1; return $0 } == 1 ? .text("busy", status: 503) : .ok(pngData(4)) }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let result = try await Tool.run([
            "fetch", "--json", "--events", "--no-disk-cache", "--retries", "1",
            server.url("/flaky.png").absoluteString, server.url("/missing.png").absoluteString,
        ])
        let records = result.stdoutLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        let events = records.filter { $0["event"] != nil }
        func kinds(_ path: String) -> [String] {
            events.filter { ($0["url"] as? String) == server.url(path).absoluteString }.compactMap { $0["event"] as? String }
                .filter { $0 != "progress" }
        }
        #expect(kinds("/flaky.png") == ["started", "retrying", "finished"], "\(result.stdout)")
        #expect(kinds("/missing.png") == ["started", "failed"], "\(result.stdout)")
        #expect(records.last?["summary"] != nil)
    }
}
