import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The prefetcher's destinations and pausing, and the caches' calls made for it,
/// against the test server on 127.0.0.1 and a real disk tier.
@Suite struct PrefetchDestinationTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-prefetch-\(UUID())")

    init() throws {
        try server.start()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func aDiskPrefetchKeepsTheFileAndNoPixels() async throws {
        defer { cleanUp() }
        for n in 0..<3 { server.route("/\(n).png", data: pngData(UInt8(n * 10 + 5)), headers: ["Cache-Control": "max-age=600"]) }
        let disk = DiskCache(directory: directory)
        let memory = ImageCache()
        let loader = ImageLoader(configuration: .init(diskCache: disk), cache: memory)
        let prefetcher = ImagePrefetcher(loader: loader, destination: .disk)
        let requests = (0..<3).map { ImageRequest(url: server.url("/\($0).png")) }
        prefetcher.startPrefetching(with: requests)
        await waitUntil { prefetcher.progress.total == 0 || prefetcher.progress.isFinished }
        await waitUntil { (0..<3).allSatisfy { server.count(for: "/\($0).png") == 1 } && prefetcher.count == 0 }
        #expect(memory.count == 0)
        #expect(loader.configuration.recentOriginals?.count == 0)
        await disk.flush()
        let response = try await loader.image(for: requests[2])
        #expect(response.source == .disk && response.image.bitmap[0, 0].r == 25)
        #expect((0..<3).map { server.count(for: "/\($0).png") } == [1, 1, 1])
    }

    @Test func pausingHoldsPrefetchesAndResumingFinishesThem() async throws {
        defer { cleanUp() }
        let open = Locked(false)
        server.route("/held.png") { _ in open.withLock { $0 } ? .ok(pngData(9)) : .stall() }
        server.route("/later.png", data: pngData(8))
        let memory = ImageCache()
        let loader = ImageLoader(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1)), cache: memory)
        let prefetcher = ImagePrefetcher(loader: loader)
        let finished = Locked<ImagePrefetcher.Progress?>(nil)
        prefetcher.completionHandler = { progress in finished.withLock { $0 = progress } }
        prefetcher.startPrefetching(with: [ImageRequest(url: server.url("/held.png"))])
        await waitUntil { server.count(for: "/held.png") == 1 }
        prefetcher.pause()
        #expect(prefetcher.isPaused)
        prefetcher.startPrefetching(with: [ImageRequest(url: server.url("/later.png"))])
        _ = await server.waitForStalls(1)
        // Nothing counted as ended, nothing asked while paused.
        #expect(prefetcher.progress == ImagePrefetcher.Progress(total: 2))
        #expect(server.count(for: "/later.png") == 0)

        open.withLock { $0 = true }
        prefetcher.resume()
        await waitUntil { finished.withLock { $0 } != nil }
        #expect(finished.withLock { $0 } == ImagePrefetcher.Progress(total: 2, completed: 2))
        #expect(server.count(for: "/held.png") == 2 && server.count(for: "/later.png") == 1)
        #expect(memory.count == 2)
    }

    @Test func theMemoryTierTrimsToACountAndTheDiskTierSweepsNow() async throws {
        defer { cleanUp() }
        let memory = ImageCache(costLimit: 1 << 20, countLimit: 10, entryCostLimit: 4096)
        #expect(memory.entryCostLimit == 4096)
        let image = DecodedImage(bitmap: Bitmap(width: 2, height: 2, pixels: [UInt8](repeating: 1, count: 16)), format: .png)
        for n in 0..<5 { memory.setImage(image, forKey: ImageCacheKey(imageKey: "k\(n)")) }
        memory.trim(toCount: 2)
        #expect(memory.count == 2 && memory.image(forKey: ImageCacheKey(imageKey: "k4")) != nil)

        let disk = DiskCache(directory: directory)
        disk.store(Data(repeating: 7, count: 100), forKey: "kept")
        await disk.flush()
        // A file that is no record: the sweep deletes it now.
        let stray = disk.fileURL(forKey: "stray")
        try Data("not a record".utf8).write(to: stray)
        await disk.sweep()
        #expect(!FileManager.default.fileExists(atPath: stray.path))
        #expect(disk.record(forKey: "kept")?.data.count == 100)
    }
}
