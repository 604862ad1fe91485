import Dispatch
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// One deadline per load, from the call that starts it: the wait for a slot, the
/// transfer and the decode share it, against the real server; loads joining one
/// transfer each keep their own.
@Suite(.serialized) struct LoadDeadlineTests {
    let server = TestServer()

    init() throws {
        try server.start()
    }

    /// A PNG decoder that notes the time each decode was given (`options.timeout`):
    /// what is left of the load's deadline when its decode starts.
    final class TimedDecoder: ImageDecoding {
        let given = Locked<[Double?]>([])

        func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .png }

        func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            given.withLock { $0.append(options.timeout) }
            var builtIn = options
            builtIn.timeout = options.timeout
            return try ImageDecoders.Registry(decoders: ImageDecoders.Registry.builtIn).decode(data, options: builtIn)
        }
    }

    func makeLoader(timeout: Double, concurrentLoads: Int = 2, decoders: ImageDecoders.Registry = .shared) -> ImageLoader {
        let loader = ImageLoader(
            configuration: .init(decoders: decoders, retryPolicy: .none, diskCache: nil, recentOriginals: nil, recentFailures: nil),
            cache: ImageCache())
        loader.loadingTimeout = timeout
        loader.concurrentLoads = concurrentLoads
        return loader
    }

    /// A load waiting for a slot behind a stalled one runs out of time in the queue:
    /// it fails with `timedOut` and is never transferred.
    @Test func theWaitForASlotCountsAgainstTheDeadline() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        server.route("/queued.png", data: pngData(10))
        let loader = makeLoader(timeout: 30, concurrentLoads: 1)
        let first = loader.task(with: ImageRequest(url: server.url("/stall.png")))
        await waitUntil { server.count(for: "/stall.png") == 1 }
        // Loads started from now on have a second each; the first keeps its slot.
        loader.loadingTimeout = 1
        let queued = loader.task(with: ImageRequest(url: server.url("/queued.png")))
        let result = await withTimeLimit(30) { await queued.value }
        guard case .failure(.timedOut(_, let seconds))? = result else { Issue.record("\(String(describing: result))"); return }
        #expect(seconds == 1)
        #expect(server.count(for: "/queued.png") == 0, "a load out of time was still transferred")
        first.cancel()
    }

    /// The decode has what the transfer left of the deadline, not a whole timeout
    /// of its own.
    @Test func theDecodeHasWhatTheTransferLeft() async throws {
        defer { server.stop() }
        let body = pngData(20)
        server.route("/slow.png") { _ in
            usleep(800_000)
            return .ok(body)
        }
        let decoder = TimedDecoder()
        let loader = makeLoader(timeout: 30, decoders: ImageDecoders.Registry(decoders: [decoder]))
        _ = try await loader.image(for: server.url("/slow.png"))
        let given = try #require(decoder.given.withLock { $0.first } ?? nil)
        #expect(given > 0 && given <= 29.3, "the decode was given \(given) s of a 30 s load whose transfer took 0.8 s")
    }

    /// A decode that ran out of time says nothing of the bytes: they stay in the disk
    /// tier, nothing is fetched again, and the next load decodes them.
    @Test func aDecodeOutOfTimeKeepsItsBytes() async throws {
        defer { server.stop() }
        server.route("/kept.png") { _ in .ok(pngData(40), headers: ["Cache-Control": "max-age=600"]) }
        /// Runs out of time once, then decodes.
        final class SlowOnce: ImageDecoding {
            let first = Locked(true)
            func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .png }
            func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
                let isFirst = first.withLock { value -> Bool in
                    defer { value = false }
                    return value
                }
                if isFirst { throw .decodingTimedOut(format: .png, seconds: 1) }
                return try ImageDecoders.Registry(decoders: ImageDecoders.Registry.builtIn).decode(data, options: options)
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-deadline-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(
                decoders: ImageDecoders.Registry(decoders: [SlowOnce()]), retryPolicy: .none, diskCache: disk, recentOriginals: nil),
            cache: ImageCache())
        guard case .failure(.decodingTimedOut) = await loader.task(with: ImageRequest(url: server.url("/kept.png"))).value else {
            Issue.record("the first decode did not run out of time")
            return
        }
        let second = try await loader.image(for: server.url("/kept.png"))
        #expect(second.image.bitmap[0, 0].r == 40 && second.source == .disk)
        #expect(server.count(for: "/kept.png") == 1)
    }

    /// Two loads of one URL, the second joining the transfer later: the first fails
    /// at its own deadline, and the transfer goes on for the second, which gets the
    /// image within its own.
    @Test func loadsJoiningATransferKeepTheirOwnDeadlines() async throws {
        defer { server.stop() }
        let body = pngData(30)
        // The server answers once the first load has failed. The second load's deadline
        // comes 6 s after the first's, and the first load has 4 s to reach the server
        // before the second joins it: margins a loaded machine still meets (the full
        // suite on two cores once missed the 3 s and 1 s they were).
        let answer = DispatchSemaphore(value: 0)
        server.route("/joined.png") { _ in
            _ = answer.wait(timeout: .now() + 60)
            return .ok(body)
        }
        let loader = makeLoader(timeout: 10)
        let early = loader.task(with: ImageRequest(url: server.url("/joined.png")))
        await waitUntil { server.count(for: "/joined.png") == 1 }
        try await Task.sleep(for: .seconds(6))
        let late = loader.task(with: ImageRequest(url: server.url("/joined.png")))
        let earlyResult = await early.value
        answer.signal()
        guard case .failure(.timedOut) = earlyResult else { Issue.record("the first load did not time out"); return }
        let image = try await late.response.image
        #expect(image.bitmap[0, 0].r == 30 && server.count(for: "/joined.png") == 1)
    }

    /// A load's deadline holds its task only while the load runs: a task that
    /// finished, failed, was cancelled in the queue or in its transfer, and one whose
    /// deadline came first, are all gone once nothing else holds them.
    @Test func aDeadlineDoesNotKeepItsTaskOnceTheLoadEnded() async throws {
        defer { server.stop() }
        server.route("/done.png", data: pngData(50))
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/stall.png") { _ in .stall() }
        let loader = makeLoader(timeout: 60, concurrentLoads: 1)
        weak var finished: ImageTask?, failed: ImageTask?, inTransfer: ImageTask?, queued: ImageTask?, timedOut: ImageTask?
        do {
            let task = loader.task(with: ImageRequest(url: server.url("/done.png")))
            _ = try await task.response
            finished = task
        }
        do {
            let task = loader.task(with: ImageRequest(url: server.url("/missing.png")))
            _ = await task.value
            failed = task
        }
        do {
            let stalled = loader.task(with: ImageRequest(url: server.url("/stall.png")))
            await waitUntil { server.count(for: "/stall.png") == 1 }
            let waiting = loader.task(with: ImageRequest(url: server.url("/done.png?queued")))
            waiting.cancel()
            stalled.cancel()
            _ = await (stalled.value, waiting.value)
            inTransfer = stalled
            queued = waiting
        }
        loader.loadingTimeout = 1
        do {
            let task = loader.task(with: ImageRequest(url: server.url("/stall.png?late")))
            guard case .failure(.timedOut) = await task.value else { Issue.record("the load did not time out"); return }
            timedOut = task
        }
        // The tasks that ended in a transfer are let go when it has wound down.
        await waitUntil(seconds: 10) { finished == nil && failed == nil && inTransfer == nil && queued == nil && timedOut == nil }
        #expect(finished == nil && failed == nil && queued == nil, "a task that ended was kept")
        #expect(inTransfer == nil && timedOut == nil, "a task that ended in its transfer was kept")
    }
}
