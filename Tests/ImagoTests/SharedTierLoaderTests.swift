#if canImport(CHiredis)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
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
    func machine(_ name: String, redisURL: URL? = nil, commandTimeout: Double = 5) throws -> (ImageLoader, SharedCache) {
        var settings = SharedCache.Configuration(servers: [redisURL ?? redis.url], namespace: "loader-test")
        settings.connectTimeout = min(commandTimeout, 2)
        settings.commandTimeout = commandTimeout
        settings.warningHandler = { _ in }
        let shared = try SharedCache(configuration: settings)
        var configuration = ImageLoader.Configuration(
            retryPolicy: .none, diskCache: DiskCache(directory: root.appendingPathComponent(name)))
        configuration.sharedCache = shared
        return (ImageLoader(configuration: configuration, cache: ImageCache()), shared)
    }

    func load(_ loader: ImageLoader, target: TargetSize? = nil) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: ImageRequest(url: server.url("/photo.png"), targetSize: target))
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
