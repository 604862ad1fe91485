import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A request's alternative and constrained URLs, against the test server on 127.0.0.1.
@Suite struct AlternativeSourcesTests {
    @Test func alternativesAreTriedInOrderAfterAFailureEachUnderItsOwnKey() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/gone.png") { _ in .text("gone", status: 404) }
        server.route("/broken.png") { _ in .text("<html>no</html>") }
        server.route("/mirror.png", data: pngData(61))
        server.route("/unused.png", data: pngData(62))
        let loader = ImageLoader(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1)), cache: ImageCache())
        var request = ImageRequest(url: server.url("/gone.png"))
        request.alternativeURLs = [server.url("/broken.png"), server.url("/mirror.png"), server.url("/unused.png")]
        let response = try await loader.image(for: request)
        #expect(response.url == server.url("/mirror.png") && response.image.bitmap[0, 0].r == 61)
        #expect(["/gone.png", "/broken.png", "/mirror.png", "/unused.png"].map { server.count(for: $0) } == [1, 1, 1, 0])
        // The mirror's image is kept under the mirror's key, never the original's.
        #expect(loader.cachedImage(for: ImageRequest(url: server.url("/mirror.png"))) != nil)
        #expect(loader.cachedImage(for: ImageRequest(url: server.url("/gone.png"))) == nil)
        // Bytes too.
        let data = try await loader.data(for: request)
        #expect(data.url == server.url("/mirror.png") && data.source == .recent)

        var hopeless = ImageRequest(url: server.url("/gone.png"))
        hopeless.alternativeURLs = [server.url("/broken.png")]
        await #expect(throws: ImagoError.self) { try await loader.image(for: hopeless) }
    }

    @Test func theConstrainedURLIsLoadedFirstOnlyWhileTheNetworkIsConstrained() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/full.png", data: pngData(1))
        server.route("/small.png", data: pngData(2))
        let loader = ImageLoader(configuration: .init(), cache: ImageCache())
        var request = ImageRequest(url: server.url("/full.png"))
        request.constrainedURL = server.url("/small.png")
        loader.isNetworkConstrained = true
        #expect(try await loader.image(for: request).url == server.url("/small.png"))
        #expect(server.count(for: "/full.png") == 0)
        loader.isNetworkConstrained = false
        #expect(try await loader.image(for: request).url == server.url("/full.png"))
        #expect(server.count(for: "/full.png") == 1 && server.count(for: "/small.png") == 1)
    }

    @Test func aTaskTriesTheAlternativesWithinItselfAndCancelsTheOneItIsLoading() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/gone.png") { _ in .text("gone", status: 404) }
        server.route("/mirror.png", data: pngData(61))
        server.route("/stall.png") { _ in .stall() }
        let loader = ImageLoader(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1)), cache: ImageCache())
        var request = ImageRequest(url: server.url("/gone.png"))
        request.alternativeURLs = [server.url("/mirror.png")]
        let results = Locked<[Result<ImageResponse, ImagoError>]>([])
        let task = loader.task(with: request) { result in results.withLock { $0.append(result) } }
        let progress = task.progress
        let response = try await task.response
        #expect(task.request.url == server.url("/gone.png"))
        #expect(response.url == server.url("/mirror.png") && response.image.bitmap[0, 0].r == 61)
        // Its completion ran once, with the mirror's image; the mirror's progress came
        // through the task, and the stream ended with it.
        #expect(results.withLock { $0.count } == 1 && (try? results.withLock { $0[0] }.get().url) == server.url("/mirror.png"))
        var last: ImageTask.Progress?
        for await update in progress { last = update }
        #expect(last?.received == Int64(pngData(61).count))

        // Cancelled while the alternative stalls: the task ends cancelled and the
        // alternative's transfer is closed by the client. The 404 is remembered, so
        // the first URL fails before its task is returned.
        var stalling = ImageRequest(url: server.url("/gone.png"))
        stalling.alternativeURLs = [server.url("/stall.png"), server.url("/mirror.png")]
        let stalled = loader.task(with: stalling)
        await waitUntil("the alternative asked for") { server.count(for: "/stall.png") == 1 }
        stalled.cancel()
        #expect(stalled.result.map { if case .failure(.cancelled) = $0 { true } else { false } } == true)
        #expect(await server.waitForStalls(1).first?.closedByClient == true)
        #expect(server.count(for: "/mirror.png") == 1)

        // Cancelled in a batch, the same.
        let batched = loader.task(with: stalling)
        await waitUntil("the alternative asked again") { server.count(for: "/stall.png") == 2 }
        loader.cancel([batched])
        #expect(batched.isFinished)
        #expect(await server.waitForStalls(2).last?.closedByClient == true)
    }
}
