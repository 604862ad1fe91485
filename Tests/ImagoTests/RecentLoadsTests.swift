import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// Repeats of a URL within a run: the file of a recent network load answers them
/// (a decode, not a transfer) and a failure asking again would not mend is
/// remembered, so a list naming one image many times asks the server once.
@Suite struct RecentLoadsTests {
    /// A loader whose memory tier keeps no pixels, so that only the files of recent
    /// loads can answer repeats.
    private func loader(_ configuration: ImageLoader.Configuration = .init()) -> ImageLoader {
        var configuration = configuration
        configuration.retryPolicy = .none
        return ImageLoader(configuration: configuration, cache: ImageCache(costLimit: 0, memoryPressure: nil))
    }

    @Test func aFileTheServerForbadeStoringIsAskedForAgain() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = pngData(9)
        server.route("/kept.png", data: png)
        server.route("/no-store.png", data: png, headers: ["Cache-Control": "no-store"])
        let loader = loader()
        for _ in 0..<3 {
            #expect(try await loader.image(for: server.url("/kept.png")).image.width == 2)
            #expect(try await loader.image(for: server.url("/no-store.png")).image.width == 2)
        }
        #expect(server.count(for: "/kept.png") == 1)
        #expect(server.count(for: "/no-store.png") == 3)
        let repeated = try await loader.image(for: server.url("/kept.png"))
        #expect(repeated.source == .recent && repeated.metrics.attempts == 0)
    }

    @Test func nothingIsRememberedWithoutAMemoryCacheOrWhenTurnedOff() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/a.png", data: pngData(1))
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let uncached = ImageLoader(configuration: .init(retryPolicy: .none), cache: nil)
        let off = loader(.init(recentOriginals: nil, recentFailures: nil))
        for images in [uncached, off] {
            for _ in 0..<2 {
                _ = try await images.image(for: server.url("/a.png"))
                await #expect(throws: ImagoError.httpStatus(404, url: server.url("/missing.png").absoluteString)) {
                    try await images.image(for: server.url("/missing.png"))
                }
            }
        }
        #expect(server.count(for: "/a.png") == 4)
        #expect(server.count(for: "/missing.png") == 4)
    }

    /// A failure that may pass (a 5xx, a 408, a refused connection) is remembered
    /// for a short while once its load has waited out its retries: a thousand
    /// repeats cost that one load's attempts, and the server is asked again once the
    /// window has passed.
    @Test func aFailureThatMayPassIsRememberedForAShortWhile() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/busy.png") { _ in .text("later", status: 500) }
        server.route("/slow.png") { _ in .text("timeout", status: 408) }
        let now = Locked(0.0)
        let failures = ImageLoader.RecentFailures(transientTimeToLive: 10, clock: { now.withLock { $0 } })
        let retries = RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.02)
        let images = ImageLoader(configuration: .init(retryPolicy: retries, recentFailures: failures), cache: ImageCache())
        await withTaskGroup(of: Void.self) { group in
            for n in 0..<1_000 {
                group.addTask { _ = try? await images.image(for: server.url(n.isMultiple(of: 2) ? "/busy.png" : "/slow.png")) }
            }
        }
        // One load each: three attempts of the 500, one of the 408 (not retried).
        #expect(server.count(for: "/busy.png") == 3 && server.count(for: "/slow.png") == 1)
        now.withLock { $0 = 10 }
        await #expect(throws: ImagoError.httpStatus(500, url: server.url("/busy.png").absoluteString)) {
            try await images.image(for: server.url("/busy.png"))
        }
        #expect(server.count(for: "/busy.png") == 6)

        // A refused connection and a load out of time are kept as long.
        let refused = ImagoError.network(url: "u", reason: "refused", code: .cannotConnectToHost, errno: ECONNREFUSED)
        #expect(failures.lifetime(of: refused, retryAfter: nil) == 10)
        #expect(failures.lifetime(of: .timedOut(url: "u", seconds: 60), retryAfter: nil) == 10)
    }

    /// A `Retry-After` sets how long a failure that may pass is remembered.
    @Test func retryAfterSetsHowLongAFailureIsRemembered() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/later.png") { _ in .text("later", status: 503, headers: ["Retry-After": "60"]) }
        let now = Locked(0.0)
        let failures = ImageLoader.RecentFailures(transientTimeToLive: 10, clock: { now.withLock { $0 } })
        let images = ImageLoader(configuration: .init(retryPolicy: .none, recentFailures: failures), cache: ImageCache())
        let url = server.url("/later.png")
        _ = try? await images.image(for: url)
        now.withLock { $0 = 30 }
        _ = try? await images.image(for: url)
        #expect(server.count(for: "/later.png") == 1, "asked again within the minute the server asked for")
        now.withLock { $0 = 61 }
        _ = try? await images.image(for: url)
        #expect(server.count(for: "/later.png") == 2)
        // A Retry-After beyond the memory's time to live is cut to it.
        #expect(failures.lifetime(of: .httpStatus(503, url: "u"), retryAfter: 86_400) == failures.timeToLive)
        #expect(failures.lifetime(of: .cancelled, retryAfter: nil) == nil)
    }

    @Test func failuresAreForgottenAfterTheirTimeToLive() {
        let now = Locked(0.0)
        let failures = ImageLoader.RecentFailures(countLimit: 2, timeToLive: 10, clock: { now.withLock { $0 } })
        let missing = ImagoError.httpStatus(404, url: "http://a/1")
        failures.record(missing, forKey: "1")
        failures.record(.httpStatus(503, url: "http://a/2"), retryAfter: 0, forKey: "2")
        failures.record(.decodingFailed(format: .png, reason: "bad", codec: nil), forKey: "3")
        #expect(failures.failure(forKey: "1") == missing)
        #expect(failures.failure(forKey: "2") == nil)  // the server said to ask again at once
        #expect(failures.failure(forKey: "3") != nil)
        failures.record(.httpStatus(410, url: "http://a/4"), forKey: "4")
        #expect(failures.count == 2)  // the least recently used, "1", made room
        #expect(failures.failure(forKey: "1") == nil)
        now.withLock { $0 = 10 }
        #expect(failures.failure(forKey: "4") == nil)
        #expect(failures.count == 1)
    }

    /// A file larger than a memory entry may be is spilled to a temporary file: its
    /// repeats are answered from it (no transfer, `.recent`), nothing of it is left in
    /// the temporary directory, and it goes with its entry.
    @Test func aLargeFileIsSpilledAndAnswersItsRepeats() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/large.jpg", data: Self.largePhoto)
        #expect(Self.largePhoto.count > 64 << 10)
        let originals = RecentOriginalFiles(byteLimit: 4 << 20, entryByteLimit: 64 << 10)
        let loader = ImageLoader(
            configuration: .init(retryPolicy: .none, diskCache: nil, recentOriginals: originals), cache: ImageCache(countLimit: 0))
        let temporary = FileManager.default.temporaryDirectory.path
        func spills() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []).filter { $0.hasPrefix("imago-original-") }.count
        }
        let first = try await loader.image(for: server.url("/large.jpg"))
        #expect(first.source == .network && originals.spilledCount == 1 && originals.count == 0)
        for _ in 0..<5 {
            let repeated = try await loader.image(for: server.url("/large.jpg"))
            #expect(repeated.source == .recent && repeated.image.bitmap == first.image.bitmap)
        }
        #expect(server.count(for: "/large.jpg") == 1)
        #expect(spills() == 0, "a spilled file was left in the temporary directory")
        originals.removeAll()
        #expect(originals.spilledCount == 0 && originals.spilledBytes == 0)
        _ = try await loader.image(for: server.url("/large.jpg"))
        #expect(server.count(for: "/large.jpg") == 2)
    }

    @Test func originalsStayWithinTheirBudget() {
        #expect(ImageLoader.RecentOriginals(byteLimit: 100).entryByteLimit == 25)
        let originals = ImageLoader.RecentOriginals(byteLimit: 100, countLimit: 10, entryByteLimit: 40, spillByteLimit: 0)
        let metadata = HTTPCacheMetadata(url: URL(string: "http://a/")!, statusCode: 200, headers: [:], storedAt: Date())
        originals.store(Data(count: 40), metadata: metadata, forKey: "a")
        originals.store(Data(count: 40), metadata: metadata, forKey: "b")
        _ = originals.data(forKey: "a")
        originals.store(Data(count: 40), metadata: metadata, forKey: "c")
        #expect(originals.totalBytes == 80)
        #expect(originals.data(forKey: "b") == nil)  // the least recently used went
        #expect(originals.data(forKey: "a")?.count == 40)
        originals.store(Data(count: 41), metadata: metadata, forKey: "d")  // over the entry's limit, no spilling: not kept
        #expect(originals.data(forKey: "d") == nil)
        originals.store(Data(count: 10), metadata: nil, forKey: "a")  // no HTTP answer to go by: not kept
        #expect(originals.data(forKey: "a") == nil)
    }
}
