#if canImport(CHiredis)
import Foundation
import Testing
@_spi(Internals) @_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// The shared tier in loads: machines with disk caches of their own and one Redis,
/// against the test server on 127.0.0.1 and a real redis-server.
@Suite struct SharedTierLoaderTests {
    let server = TestServer()
    let redis: RedisServer
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("imago-shared-\(UUID())")
    static let png = pngData(77, width: 64, height: 48)

    init() throws {
        try server.start()
        redis = try RedisServer()
        server.route("/photo.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
    }

    /// A machine: its own memory and disk tiers, the fleet's Redis.
    func machine(
        _ name: String, redisURL: URL? = nil, commandTimeout: Double = 5, configure: (inout ImageLoader.Configuration) -> Void = { _ in }
    ) throws -> (ImageLoader, SharedCache) {
        var settings = SharedCache.Configuration(servers: [redisURL ?? redis.url], namespace: "loader-test")
        settings.connectTimeout = min(commandTimeout, 2)
        settings.commandTimeout = commandTimeout
        settings.warningHandler = { _ in }
        let shared = try SharedCache(configuration: settings)
        var configuration = ImageLoader.Configuration(
            retryPolicy: .none, diskCache: DiskCache(directory: root.appendingPathComponent(name)))
        configuration.sharedCache = shared
        configure(&configuration)
        return (ImageLoader(configuration: configuration, cache: ImageCache()), shared)
    }

    func load(_ loader: ImageLoader, path: String = "/photo.png", target: TargetSize? = nil) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: ImageRequest(url: server.url(path), targetSize: target))
        return await withTimeLimit(60) { await task.value } ?? .failure(.cancelled)
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    @Test func anotherMachineLoadsOriginalsAndThumbnailsFromTheSharedTier() async throws {
        defer { cleanUp() }
        let (first, firstShared) = try machine("a")
        #expect(try await load(first).get().source == .network)
        let thumbnail = try await load(first, target: TargetSize(width: 16, height: 16)).get()
        #expect(thumbnail.image.bitmap.width == 16)
        #expect(firstShared.writesEnded(within: 60))
        #expect(firstShared.counters.stored == 2)

        let (second, secondShared) = try machine("b")
        let original = try await load(second).get()
        #expect(original.source == .shared)
        #expect(original.image.bitmap.width == 64 && original.image.bitmap[0, 0].r == 77)
        let sharedThumbnail = try await load(second, target: TargetSize(width: 16, height: 16)).get()
        #expect(sharedThumbnail.source == .shared)
        #expect(sharedThumbnail.image.bitmap.difference(to: thumbnail.image.bitmap).maximum == 0)
        #expect(server.count(for: "/photo.png") == 1)
        #expect(secondShared.counters.hits == 2)
    }

    /// A response marked `private` is for the user it was sent to: each machine keeps
    /// it, and its thumbnail, on its own disk, and none of it goes into the tier
    /// other users' loads read (RFC 9111 §5.2.2.7); a private record found there
    /// (kept by another client) answers no one.
    @Test func aPrivateResponseStaysOutOfTheSharedTier() async throws {
        defer { cleanUp() }
        server.route("/private.png", data: Self.png, headers: ["Cache-Control": "private, max-age=3600"])
        let (first, firstShared) = try machine("a")
        #expect(try await load(first, path: "/private.png").get().source == .network)
        #expect(try await load(first, path: "/private.png", target: TargetSize(width: 16, height: 16)).get().image.width == 16)
        #expect(firstShared.writesEnded(within: 60))
        #expect(firstShared.counters.stored == 0)
        await first.configuration.diskCache?.flush()
        let (again, _) = try machine("a")
        #expect(try await load(again, path: "/private.png").get().source == .disk)

        let (second, _) = try machine("b")
        #expect(try await load(second, path: "/private.png").get().source == .network)
        // Made from the original this machine holds, not taken from the shared tier.
        let thumbnail = try await load(second, path: "/private.png", target: TargetSize(width: 16, height: 16)).get()
        #expect(thumbnail.source != .shared, "\(thumbnail.source)")
        #expect(server.count(for: "/private.png") == 2)

        // Put there by another client: not taken.
        let url = server.url("/private.png")
        let metadata = try #require(HTTPCacheMetadata(
            url: url, statusCode: 200, headers: ["cache-control": "private, max-age=3600"], storedAt: Date()))
        firstShared.store(
            Self.png, metadata: metadata.encoded(), named: ImageCacheKey.originalRecordName(url.absoluteString),
            imageKey: url.absoluteString, lifetime: 3600, releasing: nil)
        #expect(firstShared.writesEnded(within: 60))
        let (third, _) = try machine("c")
        #expect(try await load(third, path: "/private.png").get().source == .network)
        #expect(server.count(for: "/private.png") == 3)
    }

    /// A response to a request with credentials (a signed-in user's picture) goes
    /// into the tier other users' loads read only when the server says a shared
    /// cache may keep it: `public`, `s-maxage` or `must-revalidate` (RFC 9111 §3.5).
    /// The credentials may come from the loader's headers, the HTTP loader's own
    /// fields, or the URL; thumbnails follow their original.
    @Test func aResponseToARequestWithCredentialsStaysOutUnlessTheServerAllowsIt() async throws {
        defer { cleanUp() }
        let allowing = ["public, max-age=3600", "s-maxage=600", "max-age=3600, must-revalidate"]
        for (index, control) in (["max-age=3600"] + allowing).enumerated() {
            server.route("/user\(index).png", data: Self.png, headers: ["Cache-Control": control])
        }
        let thumbnail = TargetSize(width: 16, height: 16)
        let signedIn: [(String, (inout ImageLoader.Configuration) -> Void)] = [
            ("headers", { $0.headers = ["Authorization": "Bearer alice"] }),
            ("loader", {
                let http = CurlDataLoader(configuration: HTTPLoaderConfiguration(httpAdditionalHeaders: ["authorization": "Basic YTpi"]))
                $0.dataLoader = DefaultDataLoader(network: http)
            }),
        ]
        for (name, configure) in signedIn {
            cleanUpSharedTier()
            let (user, userShared) = try machine("user-\(name)", configure: configure)
            for index in 0...allowing.count {
                #expect(try await load(user, path: "/user\(index).png").get().source == .network, "\(name) \(index)")
                #expect(try await load(user, path: "/user\(index).png", target: thumbnail).get().image.width == 16)
            }
            #expect(userShared.writesEnded(within: 60))
            #expect(userShared.counters.stored == 2 * allowing.count, "\(name): \(userShared.counters.stored)")

            let (other, _) = try machine("other-\(name)")
            let mine = try await load(other, path: "/user0.png").get()
            #expect(mine.source == .network, "\(name)")
            for index in 1...allowing.count {
                #expect(try await load(other, path: "/user\(index).png").get().source == .shared, "\(name) \(index)")
                #expect(try await load(other, path: "/user\(index).png", target: thumbnail).get().source == .shared)
            }
        }
        // A user in the URL is sent as Basic authorization.
        cleanUpSharedTier()
        var components = try #require(URLComponents(url: server.url("/user0.png"), resolvingAgainstBaseURL: false))
        (components.user, components.password) = ("alice", "secret")
        let (user, userShared) = try machine("user-url")
        let task = user.task(with: ImageRequest(url: try #require(components.url)))
        #expect(try await withTimeLimit(60) { await task.value }?.get().source == .network)
        #expect(userShared.writesEnded(within: 60))
        #expect(userShared.counters.stored == 0)
        #expect(server.requests(for: "/user0.png").contains { $0.headers["authorization"]?.hasPrefix("Basic ") == true })
    }

    /// A response chosen by a machine's cookie (its `Vary` names `Cookie`) stays out
    /// of the shared tier: it is that user's. One that varies on fields every
    /// machine sends alike or not at all (`Accept`, `Origin`) goes in.
    @Test func aResponseVaryingOnACookieStaysOut() async throws {
        defer { cleanUp() }
        server.route("/cookie.png", data: Self.png, headers: ["Cache-Control": "public, max-age=3600", "Vary": "Cookie"])
        server.route("/accept.png", data: Self.png, headers: ["Cache-Control": "public, max-age=3600", "Vary": "Accept, Origin"])
        let (first, firstShared) = try machine("a")
        #expect(try await load(first, path: "/cookie.png").get().source == .network)
        #expect(try await load(first, path: "/accept.png").get().source == .network)
        #expect(firstShared.writesEnded(within: 60))
        #expect(firstShared.counters.stored == 1)
        let (second, _) = try machine("b")
        #expect(try await load(second, path: "/cookie.png").get().source == .network)
        #expect(try await load(second, path: "/accept.png").get().source == .shared)
    }

    /// A response chosen by a field answers the machines that send the same in it,
    /// and no other: one whose loader sends another language asks the origin.
    @Test func aResponseChosenByAFieldAnswersOnlyMachinesSendingTheSame() async throws {
        defer { cleanUp() }
        server.route("/language.png") { request in
            .ok(pngData(request.header("Accept-Language") == "de" ? 20 : 220, width: 8, height: 8),
                headers: ["Cache-Control": "public, max-age=3600", "Vary": "Accept-Language"])
        }
        func machine(_ name: String, language: String) throws -> (ImageLoader, SharedCache) {
            try self.machine(name) { $0.headers = ["Accept-Language": language] }
        }
        let (german, germanShared) = try machine("de", language: "de")
        #expect(try await load(german, path: "/language.png").get().source == .network)
        #expect(germanShared.writesEnded(within: 60))
        let (french, frenchShared) = try machine("fr", language: "fr")
        let chosen = try await load(french, path: "/language.png").get()
        #expect(chosen.source == .network && chosen.image.bitmap[0, 0].r == 220)
        #expect(frenchShared.writesEnded(within: 60))
        // The French answer replaced the German one in the tier; a second French
        // machine finds it there.
        let (another, _) = try machine("fr2", language: "fr")
        let shared = try await load(another, path: "/language.png").get()
        #expect(shared.source == .shared && shared.image.bitmap[0, 0].r == 220)
        #expect(server.count(for: "/language.png") == 2)
    }

    /// What the shared tier holds is judged as a shared cache judges it: by
    /// `s-maxage` before `max-age`. A record a hundred seconds old is fresh for a
    /// machine's own disk under `max-age=3600`, and stale in the fleet's tier under
    /// `s-maxage=60`, so the origin is asked.
    @Test func theSharedTierJudgesWhatItHoldsBySharedMaxAge() async throws {
        defer { cleanUp() }
        let (_, writerShared) = try machine("writer")
        for (path, control) in [("/long.png", "max-age=3600"), ("/short.png", "max-age=3600, s-maxage=60")] {
            server.route(path, data: Self.png, headers: ["Cache-Control": control])
            let url = server.url(path)
            let metadata = try #require(HTTPCacheMetadata(
                url: url, statusCode: 200, headers: ["cache-control": control, "age": "100"], storedAt: Date()))
            writerShared.store(
                Self.png, metadata: metadata.encoded(), named: ImageCacheKey.originalRecordName(url.absoluteString),
                imageKey: url.absoluteString, lifetime: 3600, releasing: nil)
        }
        #expect(writerShared.writesEnded(within: 60))
        let (reader, _) = try machine("reader")
        #expect(try await load(reader, path: "/long.png").get().source == .shared)
        #expect(try await load(reader, path: "/short.png").get().source == .network)
        #expect(server.count(for: "/long.png") == 0 && server.count(for: "/short.png") == 1)
    }

    /// Empties the fleet's Redis between machines of one test.
    func cleanUpSharedTier() {
        _ = try? redis.run(redisCommand("FLUSHALL"))
    }

    @Test func aDamagedValueIsRefetchedAndReplaced() async throws {
        defer { cleanUp() }
        let (first, firstShared) = try machine("a")
        _ = try await load(first).get()
        #expect(firstShared.writesEnded(within: 60))
        let key = firstShared.valueKey(ImageCacheKey.originalRecordName(server.url("/photo.png").absoluteString), imageKey: server.url("/photo.png").absoluteString)
        try redis.run(redisCommand("SETRANGE", key, "100", "damage"))

        let (second, secondShared) = try machine("b")
        let refetched = try await load(second).get()
        #expect(refetched.source == .network && refetched.image.bitmap[0, 0].r == 77)
        #expect(secondShared.counters.rejected == 1)
        #expect(secondShared.writesEnded(within: 60))
        #expect(server.count(for: "/photo.png") == 2)

        let (third, _) = try machine("c")
        #expect(try await load(third).get().source == .shared)
        #expect(server.count(for: "/photo.png") == 2)
    }

    @Test func loadsGoOnWhenRedisIsDownOrHung() async throws {
        defer { cleanUp() }
        let (first, firstShared) = try machine("a", commandTimeout: 0.3)
        redis.send(SIGSTOP)
        defer { redis.send(SIGCONT) }
        #expect(try await load(first).get().source == .network)
        #expect(firstShared.counters.failures >= 1)
        redis.killAndWait()
        let (second, _) = try machine("b", commandTimeout: 0.3)
        #expect(try await load(second).get().source == .network)
        #expect(try await load(second, target: TargetSize(width: 8, height: 8)).get().image.bitmap.width == 8)
    }
    @Test func whatTheSharedTierAnswersIsKeptOnDiskForTheNextLoad() async throws {
        defer { cleanUp() }
        let (first, firstShared) = try machine("a")
        _ = try await load(first).get()
        _ = try await load(first, target: TargetSize(width: 16, height: 16)).get()
        #expect(firstShared.writesEnded(within: 60))

        let (second, _) = try machine("b")
        #expect(try await load(second).get().source == .shared)
        #expect(try await load(second, target: TargetSize(width: 16, height: 16)).get().source == .shared)
        await second.configuration.diskCache?.flush()
        redis.killAndWait()
        // The same machine started again, with Redis gone: its disk answers both.
        let (again, _) = try machine("b", commandTimeout: 0.3)
        #expect(try await load(again).get().source == .disk)
        #expect(try await load(again, target: TargetSize(width: 16, height: 16)).get().source == .disk)
        #expect(server.count(for: "/photo.png") == 1)
    }

    @Test func aStaleRecordOfTheFleetIsRevalidatedAndAGoneImageLeavesIt() async throws {
        defer { cleanUp() }
        let gone = Locked(false)
        server.route("/stale.png") { request in
            if gone.withLock({ $0 }) { return .text("gone", status: 404) }
            return request.header("if-none-match") == "\"v1\""
                ? TestServer.Response(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=1, stale-if-error=600"])
                : .ok(Self.png, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=1, stale-if-error=600"])
        }
        let url = server.url("/stale.png")
        func load(_ loader: ImageLoader) async -> Result<ImageResponse, ImagoError> {
            await withTimeLimit(60) { await loader.task(with: ImageRequest(url: url)).value } ?? .failure(.cancelled)
        }
        let (first, firstShared) = try machine("a")
        #expect(try await load(first).get().source == .network)
        #expect(firstShared.writesEnded(within: 60))
        // Past its freshness, within its stale-if-error window: still in Redis.
        try await Task.sleep(for: .milliseconds(1200))
        let (second, secondShared) = try machine("b")
        let revalidated = try await load(second).get()
        #expect(revalidated.source == .revalidated && revalidated.image.bitmap[0, 0].r == 77)
        #expect(server.requests(for: "/stale.png").last?.header("if-none-match") == "\"v1\"")
        #expect(secondShared.writesEnded(within: 60))

        gone.withLock { $0 = true }
        try await Task.sleep(for: .milliseconds(1200))
        let (third, thirdShared) = try machine("c")
        guard case .failure(.httpStatus(404, _)) = await load(third) else {
            Issue.record("a deleted image was served")
            return
        }
        #expect(thirdShared.writesEnded(within: 60))
        let key = thirdShared.valueKey(ImageCacheKey.originalRecordName(url.absoluteString), imageKey: url.absoluteString)
        #expect(try redis.run(redisCommand("EXISTS", key)).integer == 0)
    }
}
#endif
