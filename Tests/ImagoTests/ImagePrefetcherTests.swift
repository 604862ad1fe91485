import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct ImagePrefetcherTests {
    let network = ControlledLoader()
    let loader: ImageLoader

    init() {
        loader = ImageLoader(configuration: .init(dataLoader: network), cache: ImageCache())
        // The tests hold transfers open as long as they need: on a loaded machine (or
        // under a sanitizer) that can pass the default minute.
        loader.loadingTimeout = .infinity
    }

    @Test func prefetchesAtLowPriorityBehindVisibleWork() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: ImageLoaderTests.url(0)))
        await waitUntil { network.seen.started.count == 1 }
        let prefetcher = ImagePrefetcher(loader: loader)
        prefetcher.startPrefetching(with: [ImageLoaderTests.url(1), ImageLoaderTests.url(2)])
        let visible = loader.task(with: ImageRequest(url: ImageLoaderTests.url(3)))
        for n in 1...3 { network.answer(ImageLoaderTests.url(n), with: ok(ImageLoaderTests.url(n))) }
        network.release(ImageLoaderTests.url(0), with: ok(ImageLoaderTests.url(0)))
        _ = try await blocker.response
        _ = try await visible.response
        await waitUntil { network.seen.started.count == 4 }
        #expect(network.started == [0, 3, 1, 2].map { ImageLoaderTests.url($0).absoluteString })
        // Asking for a prefetched image joins its load or finds it in memory: no
        // second transfer.
        for n in 1...2 { _ = try await loader.image(for: ImageLoaderTests.url(n)) }
        #expect(network.started.count == 4)
    }

    @Test func stoppingCancelsAsAWhole() async throws {
        let prefetcher = ImagePrefetcher(loader: loader)
        let urls = (1...5).map(ImageLoaderTests.url)
        prefetcher.startPrefetching(with: urls)
        await waitUntil { network.seen.started.count == 2 }
        // A queued one stops alone, freeing no slot.
        prefetcher.stopPrefetching(with: [urls[4]])
        #expect(prefetcher.count == 4)
        prefetcher.stopPrefetching()
        #expect(prefetcher.count == 0)
        await waitUntil { Set(network.seen.cancelled) == Set(urls.prefix(2).map(\.absoluteString)) }
        // A probe at the lowest priority runs next: nothing of the prefetch is left in
        // the queue to go before it.
        let probe = ImageLoaderTests.url(9)
        network.answer(probe, with: ok(probe))
        _ = try await loader.image(for: ImageRequest(url: probe, priority: .veryLow))
        // The two prefetches ran side by side, so either may have reached the loader
        // first; after them, only the probe.
        #expect(Set(network.started.prefix(2)) == Set(urls.prefix(2).map(\.absoluteString)))
        #expect(network.started.dropFirst(2) == [probe.absoluteString])
    }

    /// 5,000 loads started and cancelled at once or a moment later all end, with no
    /// deadlock between cancellation and the transfer layer.
    @Test func fiveThousandStartThenCancelLoadsAllFinish() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/stall") { _ in .stall() }
        let loader = ImageLoader(configuration: .init(), cache: nil)
        loader.concurrentLoads = 8
        let finished = await withTimeLimit(120) {
            var results: [Bool] = []
            for n in 0..<5000 {
                let task = loader.task(with: ImageRequest(url: server.url("/stall?\(n)")))
                if n % 2 == 1 { try? await Task.sleep(for: .microseconds(Int.random(in: 0...2000))) }
                task.cancel()
                if case .failure(.cancelled) = await task.value { results.append(true) } else { results.append(false) }
            }
            return results
        }
        #expect(finished?.count == 5000)
        #expect(finished?.allSatisfy { $0 } == true)
    }

    /// Progress after each prefetch and completion once all have ended, against the
    /// test server: failures and stops counted apart, a repeat not counted twice, a
    /// memory hit counted at once, and counts that start again after a completion.
    @Test func progressAndCompletionAreReported() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        for n in 0..<3 { server.route("/\(n).png", data: pngData(UInt8(n))) }
        server.route("/stall.png") { _ in .stall() }
        let loader = ImageLoader(configuration: .init(retryPolicy: .none), cache: ImageCache())
        let prefetcher = ImagePrefetcher(loader: loader)
        let reports = Locked<[ImagePrefetcher.Progress]>([])
        let completions = Locked<[ImagePrefetcher.Progress]>([])
        prefetcher.progressHandler = { progress in reports.withLock { $0.append(progress) } }
        prefetcher.completionHandler = { progress in
            // The last progress report has been made by now.
            #expect(reports.withLock { $0.last } == progress)
            completions.withLock { $0.append(progress) }
        }
        func round(_ n: Int) async -> ImagePrefetcher.Progress? {
            await waitUntil { completions.withLock { $0.count } >= n } ? completions.withLock { $0[n - 1] } : nil
        }

        let urls = (0..<3).map { server.url("/\($0).png") } + [server.url("/missing.png")]
        prefetcher.startPrefetching(with: urls + [urls[0]])
        #expect(await round(1) == ImagePrefetcher.Progress(total: 4, completed: 3, failed: 1))
        #expect(reports.withLock { $0.map(\.finished) } == [1, 2, 3, 4])
        #expect(reports.withLock { $0.allSatisfy { $0.total == 4 } })
        #expect(prefetcher.count == 0)

        // In memory now: the next round ends at once, its counts from zero.
        prefetcher.startPrefetching(with: [urls[1]])
        #expect(await round(2) == ImagePrefetcher.Progress(total: 1, completed: 1))

        // Stopped prefetches are counted as such.
        prefetcher.startPrefetching(with: [server.url("/stall.png?a"), server.url("/stall.png?b")])
        await waitUntil { server.count(for: "/stall.png") == 2 }
        prefetcher.stopPrefetching()
        #expect(await round(3) == ImagePrefetcher.Progress(total: 2, cancelled: 2))
        #expect(completions.withLock { $0.count } == 3)
        #expect(server.count(for: "/0.png") == 1)
    }
}
