import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The loader's behaviours that touch the network, against a real HTTP server on
/// 127.0.0.1 and the real URLSession-backed data loader.
@Suite struct ImageLoaderNetworkTests {
    let server = TestServer()
    let loader = Self.makeLoader()

    /// A loader on the URLSession-backed data loader with quick retries, decoding
    /// with `decoders`.
    static func makeLoader(decoders: ImageDecoders.Registry = .shared) -> ImageLoader {
        ImageLoader(
            configuration: .init(
                dataLoader: DefaultDataLoader(network: URLSessionDataLoader(configuration: .init(maximumResponseSize: 1 << 20))),
                decoders: decoders, retryPolicy: RetryPolicy(maximumAttempts: 3, baseDelay: 0.05, maximumDelay: 1.5)),
            cache: ImageCache())
    }

    init() throws {
        try server.start()
    }

    static let png = pngData(77)

    /// Loads `path`, bounded so a hang fails the test instead of stalling the suite.
    func load(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: ImageRequest(url: server.url(path)))
        return await withTimeLimit(120, sourceLocation: sourceLocation) { await task.value } ?? .failure(.cancelled)
    }

    @Test func loadsAndDecodes() async throws {
        defer { server.stop() }
        server.route("/a.png", data: Self.png, headers: ["Content-Type": "image/png"])
        let response = try await load("/a.png").get()
        #expect(response.image.bitmap[0, 0].r == 77 && response.source == .network && response.metrics.bytes == Self.png.count)
        #expect(try await load("/a.png").get().source == .memory)
        #expect(server.count(for: "/a.png") == 1)
    }

    @Test func theCompletionHasRunWhenTheAwaitedResponseArrives() async throws {
        defer { server.stop() }
        server.route("/a.png", data: Self.png)
        let done = Locked<[Int]>([])
        // A completion that takes its time, as one that writes a file would: the
        // caller awaiting the response must still find what it did.
        let task = loader.task(with: ImageRequest(url: server.url("/a.png"))) { result in
            usleep(50_000)
            done.withLock { $0.append((try? result.get())?.metrics.bytes ?? -1) }
        }
        _ = try await task.response
        #expect(done.withLock { $0 } == [Self.png.count])
    }

    @Test func errorsCarryTheirStatusAndAreNotRetriedFor4xx() async throws {
        defer { server.stop() }
        server.route("/missing") { _ in .text("no", status: 404) }
        guard case .failure(.httpStatus(404, _)) = await load("/missing") else { Issue.record("404 not reported"); return }
        #expect(server.count(for: "/missing") == 1)
        server.route("/text") { _ in .text("not an image") }
        guard case .failure(.unsupportedFormat(nil, _)) = await load("/text") else { Issue.record("text decoded"); return }
    }

    @Test func a500ThenSuccessIsRetried() async throws {
        defer { server.stop() }
        let calls = Atomic<Int>(0)
        server.route("/flaky") { _ in
            calls.add(1, ordering: .relaxed).newValue == 1 ? .text("busy", status: 500) : .ok(Self.png)
        }
        let response = try await load("/flaky").get()
        #expect(response.metrics.attempts == 2)
        #expect(server.count(for: "/flaky") == 2)
        // Nothing of the failed attempt was cached; the success was.
        #expect(loader.cachedImage(for: ImageRequest(url: server.url("/flaky"))) != nil)
    }

    @Test func a429WaitsForRetryAfter() async throws {
        defer { server.stop() }
        let calls = Atomic<Int>(0)
        server.route("/limited") { _ in
            calls.add(1, ordering: .relaxed).newValue == 1 ? .text("slow down", status: 429, headers: ["Retry-After": "1"]) : .ok(Self.png)
        }
        let start = ContinuousClock.now
        _ = try await load("/limited").get()
        #expect(ContinuousClock.now - start >= .milliseconds(950))
        #expect(server.count(for: "/limited") == 2)
    }

    /// A server asking for longer than the policy ever waits is not asked again
    /// within the load, which fails at once with its status: a retry at the policy's
    /// cap, sooner than the server said, would be refused again.
    @Test func aRetryAfterBeyondThePolicysLongestWaitEndsTheLoad() async throws {
        defer { server.stop() }
        server.route("/closed") { _ in .text("come back in an hour", status: 503, headers: ["Retry-After": "3600"]) }
        guard case .failure(.httpStatus(503, _)) = await load("/closed") else { Issue.record("not a 503"); return }
        #expect(server.count(for: "/closed") == 1)
    }

    /// A 2xx that says it has no body fails with its status, not as an image that
    /// did not decode.
    @Test func noContentFailsWithItsStatus() async throws {
        defer { server.stop() }
        for status in [204, 205] {
            server.route("/empty\(status)") { _ in .init(status: status) }
            guard case .failure(.httpStatus(status, _)) = await load("/empty\(status)") else {
                Issue.record("\(status) not reported as its status")
                continue
            }
        }
    }

    @Test func aStalledResponseFailsAtTheLoadingTimeout() async throws {
        defer { server.stop() }
        loader.loadingTimeout = 1
        server.route("/stall") { _ in .stall() }
        let start = ContinuousClock.now
        guard case .failure(.timedOut) = await load("/stall") else { Issue.record("stall not timed out"); return }
        let elapsed = ContinuousClock.now - start
        // The upper bound only says "did not hang" (the stall never ends): the
        // deadline answers from the concurrency pool, which the rest of the suite on
        // two cores can hold for most of its run (about 90 s).
        #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(300))
    }

    @Test func aTricklingResponseFailsAtTheWholeLoadDeadlineNotAnIdleTimer() async throws {
        defer { server.stop() }
        loader.loadingTimeout = 1
        // A byte every 0.1 s is never idle long enough for an idle timer to fire.
        server.route("/trickle") { _ in .trickle(Self.png, bytesPerChunk: 1, interval: 0.1) }
        guard case .failure(.timedOut) = await load("/trickle") else { Issue.record("trickle not timed out"); return }
    }

    @Test func progressFollowsATricklingBody() async throws {
        defer { server.stop() }
        server.route("/slow") { _ in .trickle(Self.png, bytesPerChunk: 20, interval: 0.02) }
        let task = loader.task(with: ImageRequest(url: server.url("/slow")))
        var updates: [ImageTask.Progress] = []
        for await update in task.progress { updates.append(update) }
        #expect(updates.count >= 2)
        #expect(updates.last?.received == Int64(Self.png.count) && updates.last?.expected == Int64(Self.png.count))
        _ = try await task.response
    }

    @Test func brokenBodiesFailAndNothingIsCached() async throws {
        defer { server.stop() }
        loader.loadingTimeout = 20
        server.route("/reset") { _ in .resetAfter(10, of: Self.png) }
        server.route("/short") { _ in .truncate(declaredLength: Self.png.count + 100, actualBody: Self.png) }
        for path in ["/reset", "/short"] {
            let result = await load(path)
            guard case .failure(.network) = result else { Issue.record("\(path) did not fail as a network error: \(result)"); continue }
            // Retried per policy, then given up.
            #expect(server.count(for: path) == 3, "\(path)")
            #expect(loader.cachedImage(for: ImageRequest(url: server.url(path))) == nil)
        }
    }

    @Test func badRedirectsAndOversizedBodiesAreRefused() async throws {
        defer { server.stop() }
        server.route("/loop") { _ in .redirect(to: "/loop") }
        server.route("/to-file") { _ in .redirect(to: "file:///etc/passwd") }
        server.route("/big") { _ in .ok(Data(count: 2 << 20)) }
        for path in ["/loop", "/to-file"] {
            guard case .failure(.redirectRefused) = await load(path) else { Issue.record("\(path) followed"); continue }
        }
        guard case .failure(.responseTooLarge) = await load("/big") else { Issue.record("oversized body accepted"); return }
        #expect(throws: ImagoError.self) { try RedirectPolicy().check(from: URL(string: "https://a.example/x")!, to: URL(string: "http://a.example/x")!, seen: []) }
    }

    @Test func headersAndTheRequestModifierReachTheServer() async throws {
        defer { server.stop() }
        server.route("/private.png", data: Self.png)
        let loader = ImageLoader(
            configuration: .init(
                headers: ["Authorization": "Bearer secret"],
                requestModifier: { request in
                    var request = request
                    request.setValue("abc", forHTTPHeaderField: "X-Trace")
                    return request
                }),
            cache: nil)
        var request = URLRequest(url: server.url("/private.png"))
        request.setValue("imago-tests", forHTTPHeaderField: "User-Agent")
        _ = try await loader.image(for: ImageRequest(urlRequest: request))
        let seen = try #require(server.requests(for: "/private.png").first)
        #expect(seen.header("Authorization") == "Bearer secret")
        #expect(seen.header("X-Trace") == "abc")
        #expect(seen.header("User-Agent") == "imago-tests")
    }

    /// Counts the PNGs it decodes, decoding them as the built-in decoder does.
    struct CountingPNG: ImageDecoding {
        let count = Locked(0)
        func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .png }
        func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            count.withLock { $0 += 1 }
            return try ImageDecoders.PNG().decode(data, options: options)
        }
    }

    @Test func aThousandRequestsForTenURLsReachTheServerTenTimesAndDecodeTenTimes() async throws {
        defer { server.stop() }
        let decoder = CountingPNG()
        let decoders = ImageDecoders.Registry()
        decoders.register(decoder)
        let loader = Self.makeLoader(decoders: decoders)
        loader.concurrentLoads = 8
        for n in 0..<10 {
            server.route("/\(n).png") { _ in .trickle(pngData(UInt8(n)), bytesPerChunk: 64, interval: 0.01) }
        }
        let tasks = (0..<1000).map { loader.task(with: ImageRequest(url: server.url("/\($0 % 10).png"))) }
        let results = await withTimeLimit(60) {
            var shades: [UInt8] = []
            for task in tasks { shades.append((try? await task.response)?.image.bitmap[0, 0].r ?? 255) }
            return shades
        }
        #expect(results == (0..<1000).map { UInt8($0 % 10) })
        #expect((0..<10).map { server.count(for: "/\($0).png") } == Array(repeating: 1, count: 10))
        #expect(decoder.count.withLock { $0 } == 10)
    }
}
