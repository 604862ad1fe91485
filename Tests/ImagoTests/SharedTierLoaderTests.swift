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
        let key = firstShared.valueKey(ImageCacheKey.originalDiskKey(server.url("/photo.png").absoluteString), imageKey: server.url("/photo.png").absoluteString)
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
}
#endif
