import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A loader's events, against the test server on 127.0.0.1: each load's in order,
/// from its start to its end.
@Suite struct LoadEventTests {
    let server = TestServer()

    init() throws {
        try server.start()
    }

    /// The kinds of a load's events, by name.
    static func names(_ events: [ImageLoadEvent]) -> [String] {
        events.map { event in
            switch event.kind {
            case .started: "started"
            case .cacheAnswered(let source): "cache:\(source.rawValue)"
            case .progress: "progress"
            case .retrying(let attempt, _, _): "retry\(attempt)"
            case .finished(let source, _): "finished:\(source.rawValue)"
            case .failed(let error): error == .cancelled ? "cancelled" : "failed"
            }
        }
    }

    /// Records every event of `loader`'s loads.
    final class Recorder: Sendable {
        let events = Locked<[ImageLoadEvent]>([])
        let observation: ImageLoadEventObservation

        init(_ loader: ImageLoader) {
            let events = events
            observation = loader.observeEvents { event in events.withLock { $0.append(event) } }
        }

        /// The events of load `id`, once its last has arrived; progress events,
        /// whose number depends on how the bytes came, folded into one.
        func names(of id: Int) async -> [String] {
            await waitUntil { events.withLock { $0.contains { $0.loadID == id && $0.isFinal } } }
            let names = LoadEventTests.names(events.withLock { $0.filter { $0.loadID == id } })
            return names.enumerated().filter { $0.offset == 0 || !($0.element == "progress" && names[$0.offset - 1] == "progress") }.map(\.element)
        }
    }

    @Test func freshThenCachedLoadsReportTheirSources() async throws {
        defer { server.stop() }
        server.route("/a.png", data: pngData(9, width: 64, height: 64), headers: ["Cache-Control": "max-age=60"])
        let loader = ImageLoader(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1)), cache: ImageCache())
        let recorder = Recorder(loader)
        let fresh = loader.task(with: ImageRequest(url: server.url("/a.png")))
        let response = try await fresh.response
        #expect(await recorder.names(of: fresh.loadID) == ["started", "progress", "finished:network"])
        let finished = recorder.events.withLock { $0.last { $0.loadID == fresh.loadID } }
        if case .finished(_, let metrics)? = finished?.kind { #expect(metrics.bytes == response.metrics.bytes && metrics.attempts == 1) }

        let cached = loader.task(with: ImageRequest(url: server.url("/a.png")))
        _ = try await cached.response
        #expect(await recorder.names(of: cached.loadID) == ["started", "cache:memory", "finished:memory"])
        let resized = loader.task(with: ImageRequest(url: server.url("/a.png"), targetSize: TargetSize(width: 8, height: 8)))
        _ = try await resized.response
        #expect(await recorder.names(of: resized.loadID) == ["started", "cache:recent", "finished:recent"])
        #expect(server.count(for: "/a.png") == 1)
    }

    @Test func failedAndRetriedLoadsReportEachAttempt() async throws {
        defer { server.stop() }
        let calls = Locked(0)
        server.route("/flaky.png") { _ in
            calls.withLock { $0 += 1; return $0 } < 3 ? .text("busy", status: 503) : .ok(pngData(3))
        }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let loader = ImageLoader(
            configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.02)), cache: ImageCache())
        let recorder = Recorder(loader)
        let retried = loader.task(with: ImageRequest(url: server.url("/flaky.png")))
        #expect(try await retried.response.metrics.attempts == 3)
        // Each failed attempt may report the bytes of its error page first.
        let retriedNames = await recorder.names(of: retried.loadID)
        #expect(retriedNames.filter { $0 != "progress" } == ["started", "retry1", "retry2", "finished:network"], "\(retriedNames)")
        #expect(retriedNames.suffix(2) == ["progress", "finished:network"], "\(retriedNames)")

        let failed = loader.task(with: ImageRequest(url: server.url("/missing.png")))
        _ = await failed.value
        let failedNames = await recorder.names(of: failed.loadID)
        #expect(failedNames.filter { $0 != "progress" } == ["started", "failed"], "\(failedNames)")
        // Data loads report on the same stream.
        let data = try await loader.data(for: server.url("/flaky.png"))
        #expect(data.source == .recent)
        await waitUntil { recorder.events.withLock { $0.contains { $0.url == server.url("/flaky.png") && $0.loadID != retried.loadID } } }
        let dataLoad = recorder.events.withLock { $0.first { $0.url == server.url("/flaky.png") && $0.loadID != retried.loadID }?.loadID }
        #expect(await recorder.names(of: dataLoad ?? 0) == ["started", "cache:recent", "finished:recent"])
    }

    @Test func aCancelledLoadEndsWithCancelledAndNothingAfter() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        let loader = ImageLoader(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1)), cache: ImageCache())
        let recorder = Recorder(loader)
        let stream = loader.events
        let task = loader.task(with: ImageRequest(url: server.url("/stall.png")))
        await waitUntil { server.count(for: "/stall.png") == 1 }
        task.cancel()
        #expect(await recorder.names(of: task.loadID).first == "started")
        #expect(await recorder.names(of: task.loadID).last == "cancelled")
        _ = await server.waitForStalls(1)
        // The stream saw the same, in the same order.
        var seen: [String] = []
        for await event in stream where event.loadID == task.loadID {
            seen += Self.names([event])
            if event.isFinal { break }
        }
        #expect(seen.first == "started" && seen.last == "cancelled")
        #expect(await recorder.names(of: task.loadID) == seen.enumerated().filter { $0.offset == 0 || !($0.element == "progress" && seen[$0.offset - 1] == "progress") }.map(\.element))
    }
}
