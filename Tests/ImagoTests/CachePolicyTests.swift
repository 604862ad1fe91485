import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// One request's cache policy, against the test server on 127.0.0.1 and a real disk
/// tier: reloads, cache-only loads, failures asked again, and clearing everything.
@Suite struct CachePolicyTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-policy-\(UUID())")

    init() throws {
        try server.start()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loader with every tier a single process has: memory, recent originals,
    /// failures remembered, disk.
    func makeLoader(disk: DiskCache? = nil) -> (ImageLoader, DiskCache) {
        let disk = disk ?? DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1), diskCache: disk, storagePolicy: .both),
            cache: ImageCache())
        return (loader, disk)
    }

    func load(_ loader: ImageLoader, _ request: ImageRequest) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: request)
        return await withTimeLimit(30) { await task.value } ?? .failure(.cancelled)
    }

    /// A route whose image changes shade with every request: 10, 20, 30, …
    func routeChanging(_ path: String, headers: [String: String] = ["Cache-Control": "max-age=3600"]) {
        let served = Locked(0)
        server.route(path) { _ in
            let n = served.withLock { $0 += 1; return $0 }
            return .ok(pngData(UInt8(10 * n)), headers: headers)
        }
    }

    @Test func aReloadMakesExactlyOneRequestWithEveryTierWarmAndIsStillStored() async throws {
        defer { cleanUp() }
        routeChanging("/photo.png")
        let (loader, disk) = makeLoader()
        let sized = ImageRequest(url: server.url("/photo.png"), targetSize: TargetSize(width: 1, height: 1))
        let plain = ImageRequest(url: server.url("/photo.png"))
        // Warm: the memory tier (both sizes), the recent originals, the disk tier's
        // original and variant.
        #expect(try await load(loader, sized).get().source == .network)
        #expect(try await load(loader, plain).get().source == .recent)
        await disk.flush()
        #expect(try await load(loader, plain).get().source == .memory)
        #expect(server.count(for: "/photo.png") == 1)

        var reload = plain
        reload.cachePolicy = .reloadIgnoringCachedData
        let fresh = try await load(loader, reload).get()
        #expect(fresh.source == .network && fresh.image.bitmap[0, 0].r == 20)
        #expect(server.count(for: "/photo.png") == 2)
        #expect(server.requests(for: "/photo.png").last?.header("If-None-Match") == nil)

        // What it fetched is kept everywhere: memory answers next, and a loader with
        // empty memories finds the new image on disk.
        let again = try await load(loader, plain).get()
        #expect(again.source == .memory && again.image.bitmap[0, 0].r == 20)
        await disk.flush()
        let (restarted, _) = makeLoader(disk: disk)
        let stored = try await load(restarted, plain).get()
        #expect(stored.source == .disk && stored.image.bitmap[0, 0].r == 20)
        #expect(server.count(for: "/photo.png") == 2)
    }

    @Test func aCacheOnlyLoadMakesNoRequestAndAMissIsATypedError() async throws {
        defer { cleanUp() }
        // Stale at once: a cache-only load uses it whatever its freshness.
        routeChanging("/kept.png", headers: ["Cache-Control": "no-cache", "ETag": "\"v\""])
        let (loader, disk) = makeLoader()
        let offline = ImageRequest(url: server.url("/kept.png"), cachePolicy: .returnCacheDataDontLoad)
        let miss = await load(loader, offline)
        #expect(miss.failure == .notCached(url: server.url("/kept.png").absoluteString))
        #expect(server.count(for: "/kept.png") == 0)

        #expect(try await load(loader, ImageRequest(url: server.url("/kept.png"))).get().source == .network)
        await disk.flush()
        let (restarted, _) = makeLoader(disk: disk)
        let hit = try await load(restarted, offline).get()
        #expect(hit.source == .disk && hit.image.bitmap[0, 0].r == 10)
        #expect(server.count(for: "/kept.png") == 1)
        // An earlier miss is no failure remembered: a normal load still asks.
        #expect(restarted.configuration.recentFailures?.failure(forKey: server.url("/kept.png").absoluteString) == nil)
    }

    @Test func clearingEverythingMakesTheNextLoadAskTheOrigin() async throws {
        defer { cleanUp() }
        routeChanging("/clear.png")
        server.route("/broken.png") { _ in .text("<html>no image</html>") }
        let (loader, disk) = makeLoader()
        let request = ImageRequest(url: server.url("/clear.png"))
        #expect(try await load(loader, request).get().source == .network)
        #expect(await load(loader, ImageRequest(url: server.url("/broken.png"))).failure != nil)
        await disk.flush()
        #expect(try await load(loader, request).get().source == .memory)
        #expect(await load(loader, ImageRequest(url: server.url("/broken.png"))).failure != nil)
        #expect(server.count(for: "/broken.png") == 1)

        try await loader.removeAllCachedData()
        #expect(loader.cachedImage(for: request) == nil)
        #expect(disk.record(forKey: ImageCacheKey.originalRecordName(request.imageKey)) == nil)
        let next = try await load(loader, request).get()
        #expect(next.source == .network && next.image.bitmap[0, 0].r == 20)
        #expect(server.count(for: "/clear.png") == 2)
        _ = await load(loader, ImageRequest(url: server.url("/broken.png")))
        #expect(server.count(for: "/broken.png") == 2)
    }

    @Test func aURLRememberedAsFailedIsAskedAgainWhenTheRequestSaysSo() async throws {
        defer { cleanUp() }
        let mended = Locked(false)
        server.route("/mended.png") { _ in
            mended.withLock { $0 } ? .ok(pngData(77), headers: ["Cache-Control": "max-age=60"]) : .text("<html>oops</html>")
        }
        let (loader, _) = makeLoader()
        let request = ImageRequest(url: server.url("/mended.png"))
        #expect(await load(loader, request).failure != nil)
        mended.withLock { $0 = true }
        // Remembered: answered at once, the server not asked.
        #expect(await load(loader, request).failure != nil)
        #expect(server.count(for: "/mended.png") == 1)

        var retry = request
        retry.cachePolicy = .retryingFailures
        let response = try await load(loader, retry).get()
        #expect(response.source == .network && response.image.bitmap[0, 0].r == 77)
        #expect(server.count(for: "/mended.png") == 2)
        // Mended for everyone: the failure is forgotten, and the image is in memory.
        #expect(try await load(loader, request).get().source == .memory)
        #expect(server.count(for: "/mended.png") == 2)
    }

    @Test func eachTierIsReadAndWrittenOnlyWhenThePolicySays() async throws {
        defer { cleanUp() }
        routeChanging("/tiers.png")
        let (loader, disk) = makeLoader()
        var noMemory = ImageRequest(url: server.url("/tiers.png"))
        noMemory.cachePolicy.writes = [.disk]
        #expect(try await load(loader, noMemory).get().source == .network)
        #expect(loader.cachedImage(for: noMemory) == nil)
        // Not in the recent originals either: with the disk tier unread, the next
        // load asks the origin.
        var diskUnread = ImageRequest(url: server.url("/tiers.png"))
        diskUnread.cachePolicy.reads = [.memory, .recentOriginals]
        diskUnread.cachePolicy.writes = []
        await disk.flush()
        #expect(try await load(loader, diskUnread).get().source == .network)
        #expect(server.count(for: "/tiers.png") == 2)
        // The disk tier kept the first image, untouched by the load that wrote nothing.
        let fromDisk = try await load(loader, ImageRequest(url: server.url("/tiers.png"))).get()
        #expect(fromDisk.source == .disk && fromDisk.image.bitmap[0, 0].r == 10)
        #expect(server.count(for: "/tiers.png") == 2)
    }

    @Test func requestsUnderDifferentPoliciesDoNotShareALoad() async throws {
        defer { cleanUp() }
        server.route("/slow.png") { _ in .trickle(pngData(5), bytesPerChunk: 8, interval: 0.05, headers: ["Cache-Control": "max-age=60"]) }
        let (loader, _) = makeLoader()
        let normal = loader.task(with: ImageRequest(url: server.url("/slow.png")))
        let offline = await load(loader, ImageRequest(url: server.url("/slow.png"), cachePolicy: .returnCacheDataDontLoad))
        #expect(offline.failure == .notCached(url: server.url("/slow.png").absoluteString))
        #expect(try await normal.response.source == .network)
        #expect(server.count(for: "/slow.png") == 1)
    }
}
