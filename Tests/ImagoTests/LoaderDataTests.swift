import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `ImageLoader.data(for:)`: the original bytes through the image pipeline's tiers
/// and shared transfers, against the test server on 127.0.0.1.
@Suite struct LoaderDataTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-data-\(UUID())")

    init() throws {
        try server.start()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func makeLoader(disk: DiskCache? = nil) -> ImageLoader {
        ImageLoader(
            configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1), diskCache: disk ?? DiskCache(directory: directory)),
            cache: ImageCache())
    }

    @Test func twoConcurrentCallsMakeOneRequestAndALaterOneIsAnsweredFromCache() async throws {
        defer { cleanUp() }
        let png = pngData(42, width: 40, height: 40)
        server.route("/slow.png") { _ in .trickle(png, bytesPerChunk: 32, interval: 0.02, headers: ["Cache-Control": "max-age=600"]) }
        let loader = makeLoader()
        let request = ImageRequest(url: server.url("/slow.png"))
        async let first = loader.data(for: request)
        async let second = loader.data(for: request)
        // An image load of the key joins the same transfer too.
        async let image = loader.image(for: ImageRequest(url: server.url("/slow.png"), targetSize: TargetSize(width: 4, height: 4)))
        let (a, b, i) = try await (first, second, image)
        #expect(a.data == png && b.data == png)
        #expect(a.source == .network && b.source == .network && i.source == .network)
        #expect(server.count(for: "/slow.png") == 1)

        let later = try await loader.data(for: request)
        #expect(later.data == png && later.source == .recent)
        #expect(server.count(for: "/slow.png") == 1)
        // The disk tier kept them for a loader with empty memories.
        await loader.configuration.diskCache?.flush()
        let restarted = makeLoader(disk: loader.configuration.diskCache)
        let stored = try await restarted.data(for: request)
        #expect(stored.data == png && stored.source == .disk)
        #expect(server.count(for: "/slow.png") == 1)
    }

    @Test func bytesThatAreNoImageAreReturnedAsTheyAre() async throws {
        defer { cleanUp() }
        server.route("/page.html") { _ in .text("<html>hello</html>") }
        let response = try await makeLoader().data(for: server.url("/page.html"))
        #expect(String(decoding: response.data, as: UTF8.self) == "<html>hello</html>")
    }

    @Test func aFailureIsTypedAndACancelledCallStopsTheTransfer() async throws {
        defer { cleanUp() }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/stalled.png") { _ in .stall() }
        let loader = makeLoader()
        await #expect(throws: ImagoError.httpStatus(404, url: server.url("/missing.png").absoluteString)) {
            try await loader.data(for: server.url("/missing.png"))
        }
        let task = Task { try await loader.data(for: server.url("/stalled.png")) }
        await waitUntil { server.count(for: "/stalled.png") == 1 }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        let stalls = await server.waitForStalls(1)
        #expect(stalls.first?.closedByClient == true)
        #expect(loader.pipeline.stagesInFlight == 0)
        // Cache-only: no transfer, a typed miss.
        await #expect(throws: ImagoError.notCached(url: server.url("/other.png").absoluteString)) {
            try await loader.data(for: ImageRequest(url: server.url("/other.png"), cachePolicy: .returnCacheDataDontLoad))
        }
        #expect(server.count(for: "/other.png") == 0)
    }
}
