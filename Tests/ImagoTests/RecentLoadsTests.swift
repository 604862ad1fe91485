import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// Repeats of a URL within a run: the file of a recent network load answers them
/// (a decode, not a transfer) and a failure asking again would not mend is
/// remembered, so a list naming one image many times asks the server once.
@Suite struct RecentLoadsTests {
    /// A photo whose pixels (2400×1800, 17 MB) are over the per-entry cap of the
    /// tool's memory tier (16 MB), so only its file can answer repeats.
    static let largePhoto: Data = {
        let width = 2400, height = 1800
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(truncatingIfNeeded: x * 7 ^ y * 3)
                pixels[offset + 1] = UInt8(truncatingIfNeeded: (x + y) / 5)
                pixels[offset + 2] = UInt8(truncatingIfNeeded: x &* y)
            }
        }
        return try! ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
    }()

    /// A 1400×1000 photo of a shade of its own: ten of them (5.6 MB of pixels each)
    /// are well over the tool's 32 MB memory tier, which listed in turn keeps none.
    static func photo(_ shade: Int) -> Data {
        let width = 1400, height = 1000
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) {
            pixels[index] = UInt8(truncatingIfNeeded: index / 4 % width + shade * 20)
            pixels[index + 1] = UInt8(truncatingIfNeeded: index / 4 / width + shade * 7)
            pixels[index + 2] = UInt8(truncatingIfNeeded: shade * 25)
        }
        return try! ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
    }

    private func fetch(_ lines: [String], _ extra: [String] = []) async throws -> (Tool.Result, [String: Any]) {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-repeats-\(UUID()).txt")
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--input", input.path] + extra, timeout: 600)
        let summary = result.stdoutLines.last.flatMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }?["summary"] as? [String: Any]
        return (result, summary ?? [:])
    }

    @Test func oneLargePhotoListedManyTimesIsTransferredOnce() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/large.jpg", data: Self.largePhoto)
        let (result, summary) = try await fetch(Array(repeating: server.url("/large.jpg").absoluteString, count: 300))
        #expect(result.status == 0, "\(result.stderr.prefix(1000))")
        #expect(summary["items"] as? Int == 300 && summary["failed"] as? Int == 0, "\(summary)")
        #expect(server.count(for: "/large.jpg") == 1)
    }

    @Test func tenPhotosListedAHundredTimesEachAreTransferredOnceEach() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        for n in 0..<10 { server.route("/\(n).jpg", data: Self.photo(n)) }
        let lines = (0..<100).flatMap { _ in (0..<10).map { server.url("/\($0).jpg").absoluteString } }
        let (result, summary) = try await fetch(lines)
        #expect(result.status == 0, "\(result.stderr.prefix(1000))")
        #expect(summary["items"] as? Int == 1_000 && summary["failed"] as? Int == 0, "\(summary)")
        #expect((0..<10).map { server.count(for: "/\($0).jpg") } == Array(repeating: 1, count: 10))
    }

    @Test func aMissingOrUndecodableImageListedManyTimesIsAskedForOnce() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.logsRequests = false
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/page.png") { _ in .text("<html>not an image</html>") }
        let lines = (0..<5_000).flatMap { _ in [server.url("/missing.png").absoluteString, server.url("/page.png").absoluteString] }
        let (result, summary) = try await fetch(lines)
        #expect(result.status == 1)
        #expect(summary["items"] as? Int == 10_000 && summary["failed"] as? Int == 10_000, "\(summary)")
        #expect(server.count(for: "/missing.png") == 1)
        #expect(server.count(for: "/page.png") == 1)
        // Every repeat fails as the first did.
        let errors = result.stdoutLines.filter { $0.contains("/missing.png\"") }.map { $0.contains("HTTP 404") }
        #expect(errors.count == 5_000 && !errors.contains(false), "\(result.stdoutLines.first ?? "")")
    }

    // MARK: - The library

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
