import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loader's defaults and its preset for servers and tools, against the test
/// server on 127.0.0.1: the User-Agent sent, transfers at once, the tiers, and the
/// metrics of a load that waits for a decoding slot.
@Suite struct LoaderDefaultsTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-defaults-\(UUID())")

    init() throws {
        try server.start()
        for n in 0..<4 { server.route("/\(n).png", data: pngData(UInt8(n * 10 + 5)), headers: ["Cache-Control": "max-age=3600"]) }
        server.route("/stall.png") { _ in .stall() }
    }

    private func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func load(_ loader: ImageLoader, _ request: ImageRequest) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: request)
        return await withTimeLimit(120) { await task.value } ?? .failure(.cancelled)
    }

    @Test(arguments: LoaderKind.all)
    func theUserAgentIsImagosUnlessOneIsSet(kind: LoaderKind) async throws {
        defer { cleanUp() }
        let path = "/0.png"
        func userAgent(_ network: any DataLoading, request: (inout URLRequest) -> Void = { _ in }) async throws -> String? {
            var urlRequest = URLRequest(url: server.url(path))
            request(&urlRequest)
            _ = try await network.loadData(for: urlRequest, options: DataLoadingOptions()) { _ in }
            return server.requests(for: path).last?.header("User-Agent")
        }
        #expect(HTTPLoaderConfiguration.defaultUserAgent == "Imago/\(HTTPLoaderConfiguration.version)")
        // Nothing set: Imago's own, not the HTTP client's.
        #expect(try await userAgent(kind.make()) == HTTPLoaderConfiguration.defaultUserAgent)
        // The data loader's configuration sets one, in any case.
        let configured = kind.make(.init(httpAdditionalHeaders: ["user-agent": "Gallery/2"]))
        #expect(try await userAgent(configured) == "Gallery/2")
        // The request's own wins over both.
        #expect(try await userAgent(configured) { $0.setValue("Job/1", forHTTPHeaderField: "User-Agent") } == "Job/1")
        #expect(try await userAgent(kind.make()) { $0.setValue("Job/1", forHTTPHeaderField: "User-Agent") } == "Job/1")

        // Through a loader: its configuration's headers count as the request's.
        let loader = ImageLoader(
            configuration: .init(dataLoader: DefaultDataLoader(network: kind.make()), headers: ["User-Agent": "Feed/3"]), cache: nil)
        _ = try await load(loader, ImageRequest(url: server.url(path))).get()
        #expect(server.requests(for: path).last?.header("User-Agent") == "Feed/3")
        let plain = ImageLoader(configuration: .init(dataLoader: DefaultDataLoader(network: kind.make())), cache: nil)
        _ = try await load(plain, ImageRequest(url: server.url(path))).get()
        #expect(server.requests(for: path).last?.header("User-Agent") == HTTPLoaderConfiguration.defaultUserAgent)
    }

    /// The formats this build decodes go out as `Accept` unless the request or the
    /// configuration names one; conditional requests and configured fields keep it.
    @Test(arguments: LoaderKind.all)
    func acceptIsImagosUnlessTheRequestOrTheConfigurationSetsOne(kind: LoaderKind) async throws {
        defer { cleanUp() }
        func accept(headers: [String: String] = [:], validators: [String: String] = [:], _ request: ImageRequest) async throws -> String? {
            let configuration = ImageLoaderConfiguration(dataLoader: DefaultDataLoader(network: kind.make()), headers: headers)
            let urlRequest = try configuration.urlRequest(for: request, validators: validators)
            _ = try await kind.make().loadData(for: urlRequest, options: DataLoadingOptions()) { _ in }
            let sent = server.requests(for: "/0.png").last
            for (name, value) in validators.merging(headers, uniquingKeysWith: { first, _ in first }) where name.lowercased() != "accept" {
                #expect(sent?.header(name) == value, "\(name)")
            }
            return sent?.header("Accept")
        }
        let url = server.url("/0.png")
        let plain = ImageRequest(url: url)
        #expect(try await accept(plain) == ImageFormat.acceptHeader)
        #expect(try await accept(headers: ["X-Feed": "3"], validators: ["If-None-Match": "\"v1\""], plain) == ImageFormat.acceptHeader)
        #expect(try await accept(headers: ["accept": "image/png"], plain) == "image/png")
        var own = URLRequest(url: url)
        #expect(try await accept(ImageRequest(urlRequest: own)) == ImageFormat.acceptHeader)
        own.setValue("image/webp", forHTTPHeaderField: "Accept")
        #expect(try await accept(headers: ["Accept": "image/png"], ImageRequest(urlRequest: own)) == "image/webp")
    }

    @Test func concurrentLoadsComesFromTheConfiguration() async throws {
        defer { cleanUp() }
        let loader = ImageLoader(configuration: .init(retryPolicy: .none, concurrentLoads: 3), cache: nil)
        #expect(loader.concurrentLoads == 3 && loader.configuration.concurrentLoads == 3)
        let tasks = (0..<5).map { loader.task(with: ImageRequest(url: server.url("/stall.png?n=\($0)"))) }
        defer { loader.cancel(tasks) }
        await waitUntil { server.count(for: "/stall.png") == 3 && loader.queuedCount == 2 }
        #expect(server.count(for: "/stall.png") == 3)
        // Changed while running, as before.
        loader.concurrentLoads = 4
        await waitUntil { server.count(for: "/stall.png") == 4 }
        #expect(loader.configuration.concurrentLoads == 3)
    }

    @Test func theDefaultLoaderSharesMemoryAndKeepsNothingOnDisk() {
        defer { cleanUp() }
        let loader = ImageLoader()
        #expect((loader.cache as? ImageCache) === ImageCache.shared)
        #expect(loader.configuration.diskCache == nil && loader.concurrentLoads == 2)
        #expect(ImageLoader(configuration: .init(memoryTier: .disabled)).cache == nil)
        let own = ImageLoader(configuration: .init(memoryTier: .own(costLimit: 1 << 20, countLimit: 7))).cache as? ImageCache
        #expect(own !== ImageCache.shared && own?.costLimit == 1 << 20 && own?.countLimit == 7)
    }

    @Test func theServerPresetKeepsImagesOnDiskAndFewInMemory() async throws {
        defer { cleanUp() }
        let disk = DiskCache(directory: directory)
        let loader = ImageLoader(configuration: .server(diskCache: disk))
        let memory = try #require(loader.cache as? ImageCache)
        #expect(memory !== ImageCache.shared && memory.costLimit == 32 << 20 && memory.countLimit == 256)
        #expect(loader.concurrentLoads == 8 && loader.configuration.diskCache === disk)
        #expect(ImageLoader(configuration: .server(diskCache: nil, concurrentLoads: 20)).concurrentLoads == 20)

        // Eight transfers at once, all to one host.
        let stalled = (0..<10).map { loader.task(with: ImageRequest(url: server.url("/stall.png?n=\($0)"))) }
        await waitUntil { server.count(for: "/stall.png") == 8 && loader.queuedCount == 2 }
        loader.cancel(stalled)

        #expect(try await load(loader, ImageRequest(url: server.url("/1.png"))).get().source == .network)
        await disk.flush()
        // Another process's loader finds it on disk.
        let next = ImageLoader(configuration: .server(diskCache: DiskCache(directory: directory)))
        let again = try await load(next, ImageRequest(url: server.url("/1.png"))).get()
        #expect(again.source == .disk && again.image.bitmap[0, 0].r == 15)
        #expect(server.count(for: "/1.png") == 1)
    }

    /// A processor that holds its decoding slot until the test lets it go.
    struct Gate: ImageProcessing {
        let open: Locked<Bool>
        let entered: Locked<Bool>
        var identifier: String { "test.gate" }

        func process(_ bitmap: Bitmap) -> Bitmap {
            entered.withLock { $0 = true }
            while !open.withLock({ $0 }) { usleep(1000) }
            return bitmap
        }
    }

    @Test func metricsCountTheWaitForADecodingSlot() async throws {
        defer { cleanUp() }
        let loader = ImageLoader(configuration: .init(retryPolicy: .none, concurrentDecodes: 1, concurrentLoads: 4), cache: nil)
        let gate = Gate(open: Locked(false), entered: Locked(false))
        // The first load's processor takes the only decoding slot and keeps it.
        let blocker = loader.task(with: ImageRequest(url: server.url("/0.png"), processors: [gate]))
        await waitUntil { gate.entered.withLock { $0 } }
        let start = ContinuousClock.now
        let waiting = loader.task(with: ImageRequest(url: server.url("/2.png")))
        // Its transfer is done and its decode waits for the slot.
        await waitUntil { loader.pipeline.queuedDecodes == 1 }
        let queuedBy = ContinuousClock.now
        try await Task.sleep(for: .milliseconds(300))
        let released = ContinuousClock.now
        gate.open.withLock { $0 = true }
        let response = try #require(await withTimeLimit(120) { await waiting.value }).get()
        let total = (ContinuousClock.now - start).seconds
        _ = await blocker.value
        let metrics = response.metrics
        // It waited at least from when it was seen queued to the release.
        #expect(metrics.decodeQueued >= (released - queuedBy).seconds, "\(metrics)")
        let sum = metrics.queued + metrics.transfer + metrics.decodeQueued + metrics.decode + metrics.processing
        #expect(sum <= total, "the parts (\(sum) s) within the whole (\(total) s)")
    }
}
