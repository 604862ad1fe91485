import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Transfers cut short and files cut short, through the whole loader: the real test
/// server on 127.0.0.1, both network loaders, the real codecs, memory and disk tiers.
@Suite struct PartialLoadingTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-partial-\(UUID())")

    init() throws {
        try server.start()
    }

    func makeLoader(_ kind: LoaderKind) -> (ImageLoader, ImageCache, DiskCache) {
        let memory = ImageCache()
        let disk = DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(
                dataLoader: DefaultDataLoader(network: kind.make()),
                retryPolicy: RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02), diskCache: disk),
            cache: memory)
        return (loader, memory, disk)
    }

    func load(_ loader: ImageLoader, _ path: String, options: ImageRequest.Options = []) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: ImageRequest(url: server.url(path), options: options))
        return await withTimeLimit(60) { await task.value } ?? .failure(.cancelled)
    }

    @Test(arguments: LoaderKind.all)
    func aTransferCutShortFailsUnlessPartialImagesAreAllowed(_ kind: LoaderKind) async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let jpeg = TestImages.jpeg
        server.route("/cut.jpg") { _ in
            .truncate(declaredLength: jpeg.count, actualBody: jpeg.prefix(jpeg.count * 6 / 10))
        }
        let (loader, memory, disk) = makeLoader(kind)

        // As before: a typed error, retried once, and nothing kept.
        guard case .failure(.network(_, let reason, _, _)) = await load(loader, "/cut.jpg") else {
            Issue.record("a cut transfer did not fail with a network error")
            return
        }
        #expect(reason.contains("of \(jpeg.count) bytes"), "\(reason)")
        #expect(server.count(for: "/cut.jpg") == 2)
        await disk.flush()
        #expect(memory.count == 0 && disk.statistics.count == 0)

        // Asked for: what arrived, marked partial, at once (no retry), kept nowhere.
        let response = try await load(loader, "/cut.jpg", options: .allowsPartialImages).get()
        let image = response.image
        #expect(image.isPartial && image.width == 160 && image.height == 120)
        #expect(response.source == .network && response.metrics.bytes == jpeg.count * 6 / 10)
        #expect(server.count(for: "/cut.jpg") == 3)
        let whole = try ImageDecoders.Registry.shared.decode(jpeg)
        let rows = PartialDecodeTests.matchingRows(image.bitmap, whole.bitmap, tolerance: 2)
        print("\(kind): a transfer cut at 60% showed the top \(rows) of 120 rows")
        #expect(rows >= 40 && rows < 120)
        await disk.flush()
        #expect(memory.count == 0 && disk.statistics.count == 0)

        // The next load asks the server again.
        _ = await load(loader, "/cut.jpg", options: .allowsPartialImages)
        #expect(server.count(for: "/cut.jpg") == 4)
    }

    @Test(arguments: LoaderKind.all)
    func aWholeTransferWithPartialImagesAllowedIsCachedAsUsual(_ kind: LoaderKind) async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        server.route("/whole.jpg", data: TestImages.jpeg, headers: ["Cache-Control": "max-age=60"])
        let (loader, memory, disk) = makeLoader(kind)
        let response = try await load(loader, "/whole.jpg", options: .allowsPartialImages).get()
        #expect(!response.image.isPartial)
        await disk.flush()
        #expect(memory.count == 1 && disk.statistics.count == 1)
        // A request without the option finds it in memory: a whole image is whole.
        #expect(try await load(loader, "/whole.jpg").get().source == .memory)
    }

    /// A file that is itself cut short, served whole (its length matching): every
    /// request gets what the file holds, marked partial; it is kept in neither tier,
    /// so the next load asks the server, which may have mended it.
    @Test(arguments: LoaderKind.all)
    func aTruncatedFileServedWholeDecodesAsPartialAndIsNotKept(_ kind: LoaderKind) async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        server.route("/short.jpg", data: TestImages.jpeg.prefix(TestImages.jpeg.count / 2), headers: ["Cache-Control": "max-age=60"])
        let (loader, memory, disk) = makeLoader(kind)
        for options: ImageRequest.Options in [[], .allowsPartialImages] {
            let response = try await load(loader, "/short.jpg", options: options).get()
            let isPartial = response.image.isPartial
            #expect(isPartial && response.source == .network)
        }
        let thumbnail = loader.task(with: ImageRequest(url: server.url("/short.jpg"), targetSize: TargetSize(width: 40, height: 40)))
        let small = try await thumbnail.response.image
        #expect(small.isPartial && small.width == 40)
        await disk.flush()
        #expect(memory.count == 0 && disk.statistics.count == 0)
        #expect(server.count(for: "/short.jpg") == 3)
    }

    /// Requests with and without the option never share a transfer: the one that
    /// must fail is never handed the bytes of a cut one.
    @Test func requestsWithAndWithoutTheOptionDoNotShareATransfer() async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let jpeg = TestImages.jpeg
        server.route("/cut.jpg") { _ in .truncate(declaredLength: jpeg.count, actualBody: jpeg.prefix(jpeg.count / 2)) }
        let (loader, _, _) = makeLoader(LoaderKind.all[LoaderKind.all.count - 1])
        let strict = loader.task(with: ImageRequest(url: server.url("/cut.jpg")))
        let lenient = loader.task(with: ImageRequest(url: server.url("/cut.jpg"), options: .allowsPartialImages))
        let (a, b) = (await strict.value, await lenient.value)
        guard case .failure(.network) = a, case .success(let response) = b else {
            Issue.record("\(a), \(b)")
            return
        }
        #expect(response.image.isPartial)
    }
}
