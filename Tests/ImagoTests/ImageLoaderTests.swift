import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

@Suite struct ImageLoaderTests {
    let network = ControlledLoader()
    let loader: ImageLoader

    init() {
        loader = ImageLoader(
            configuration: .init(dataLoader: network, retryPolicy: RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.02)),
            cache: ImageCache())
    }

    static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:9/\(n).png")! }

    @Test func concurrentLoadsIsHonoured() async throws {
        loader.concurrentLoads = 2
        let tasks = (0..<6).map { loader.task(with: ImageRequest(url: Self.url($0))) }
        await waitUntil { network.seen.started.count == 2 }
        #expect(loader.queuedCount == 4)
        network.release(Self.url(0), with: ok(Self.url(0)))
        await waitUntil { network.seen.started.count == 3 }
        // Five slots: the three running and two more; the sixth request was the last.
        loader.concurrentLoads = 5
        await waitUntil { network.seen.started.count == 6 }
        for n in 1..<6 { network.release(Self.url(n), with: ok(Self.url(n))) }
        for task in tasks { _ = try await task.response }
    }

    @Test func identicalRequestsShareOneTransfer() async throws {
        let url = Self.url(1)
        let tasks = (0..<10).map { _ in loader.task(with: ImageRequest(url: url)) }
        await waitUntil { network.seen.started.count == 1 }
        network.release(url, with: ok(url, 42))
        for task in tasks {
            let response = try await task.response
            #expect(response.image.bitmap[0, 0].r == 42 && response.source == .network)
        }
        #expect(network.started == [url.absoluteString])
        // Different processing is a different result, but the same key and size
        // again is now a memory hit.
        let again = loader.task(with: ImageRequest(url: url))
        #expect(again.result.map { (try? $0.get())?.source } == .memory)
    }

    @Test func aSharedTransferStopsOnlyWithItsLastConsumer() async throws {
        let url = Self.url(2)
        let tasks = (0..<3).map { _ in loader.task(with: ImageRequest(url: url)) }
        await waitUntil { network.seen.started.count == 1 }
        tasks[0].cancel()
        tasks[1].cancel()
        // Cancelling a transfer is synchronous: had it been stopped, the loader would
        // have seen it by now.
        #expect(network.cancelled.isEmpty)
        #expect(tasks[0].result.map { if case .failure(.cancelled) = $0 { true } else { false } } == true)
        tasks[2].cancel()
        await waitUntil { network.seen.cancelled == [url.absoluteString] }
        // A cancelled load frees its slot.
        loader.concurrentLoads = 1
        let next = loader.task(with: ImageRequest(url: Self.url(3)))
        await waitUntil { network.seen.started.count == 2 }
        network.release(Self.url(3), with: ok(Self.url(3)))
        _ = try await next.response
    }

    @Test func queuedLoadsStartInPriorityOrder() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: Self.url(0)))
        await waitUntil { network.seen.started.count == 1 }
        let priorities: [ImageRequest.Priority] = [.low, .normal, .veryLow, .high, .normal]
        let tasks = priorities.enumerated().map { loader.task(with: ImageRequest(url: Self.url($0.offset + 1), priority: $0.element)) }
        // Raising a queued task's priority moves it ahead at once.
        tasks[2].priority = .veryHigh
        for task in tasks { network.answer(task.request.url, with: ok(task.request.url)) }
        network.release(Self.url(0), with: ok(Self.url(0)))
        for task in [blocker] + tasks { _ = try await task.response }
        #expect(network.started == [0, 3, 4, 2, 5, 1].map { Self.url($0).absoluteString })
    }

    @Test func aSharedLoadRunsAtItsHighestConsumersPriority() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: Self.url(0)))
        await waitUntil { network.seen.started.count == 1 }
        let normal = loader.task(with: ImageRequest(url: Self.url(1), priority: .normal))
        let low = loader.task(with: ImageRequest(url: Self.url(2), priority: .low))
        let joined = loader.task(with: ImageRequest(url: Self.url(2), priority: .high))
        for task in [normal, low] { network.answer(task.request.url, with: ok(task.request.url)) }
        network.release(Self.url(0), with: ok(Self.url(0)))
        for task in [blocker, normal, low, joined] { _ = try await task.response }
        #expect(network.started == [0, 2, 1].map { Self.url($0).absoluteString })
    }

    @Test func invalidURLsFailBeforeAnyIO() async {
        for text in ["ftp://example.com/a.png", "gopher://x", "mailto:a@b.c"] {
            let task = loader.task(with: ImageRequest(url: URL(string: text)!))
            guard case .failure(.invalidURL) = await task.value else {
                Issue.record("\(text) did not fail as invalid")
                continue
            }
        }
        #expect(network.started.isEmpty)
    }

    @Test func httpErrorsFailWithTheirStatusAndTransientOnesAreRetried() async throws {
        let missing = Self.url(404), flaky = Self.url(500)
        network.answer(missing, with: ok(missing, status: 404))
        let failed = await loader.task(with: ImageRequest(url: missing)).value
        guard case .failure(.httpStatus(404, _)) = failed else { Issue.record("\(failed)"); return }
        #expect(network.started.count == 1)

        let task = loader.task(with: ImageRequest(url: flaky))
        await waitUntil { network.seen.started.count == 2 }
        network.release(flaky, with: ok(flaky, status: 503))
        await waitUntil { network.seen.started.count == 3 }
        network.release(flaky, with: ok(flaky, 7))
        let response = try await task.response
        #expect(response.metrics.attempts >= 2 && response.image.bitmap[0, 0].r == 7)
    }

    @Test func aStalledLoadFailsAtTheLoadingTimeout() async throws {
        loader.loadingTimeout = 0.3
        let url = Self.url(9)
        let start = ContinuousClock.now
        let result = await loader.task(with: ImageRequest(url: url)).value
        guard case .failure(.timedOut) = result else { Issue.record("\(result)"); return }
        let elapsed = start.duration(to: .now)
        // The upper bound only says "did not hang" (the stall never ends): the
        // deadline answers from the concurrency pool, which the rest of the suite on
        // two cores can hold for most of its run (about 90 s).
        #expect(elapsed >= .milliseconds(290) && elapsed < .seconds(300))
        await waitUntil { network.seen.cancelled == [url.absoluteString] }
    }

    @Test func nilCacheStoresNothingAndANewCacheAppliesToLaterRequests() async throws {
        let url = Self.url(5)
        network.answer(url, with: ok(url))
        loader.cache = nil
        _ = try await loader.image(for: url)
        _ = try await loader.image(for: url)
        #expect(network.started.count == 2)
        let cache = ImageCache()
        loader.cache = cache
        _ = try await loader.image(for: url)
        #expect(cache.count == 1)
        #expect(try await loader.image(for: url).source == .memory)
        #expect(network.started.count == 3)
    }

    @Test func progressReachesEveryConsumer() async throws {
        let trickle = ControlledLoader(script: .init(progress: [10, 40], pause: .milliseconds(20) ... .milliseconds(20)) { _ in pngData(1) })
        let loader = ImageLoader(configuration: .init(dataLoader: trickle), cache: nil)
        let task = loader.task(with: ImageRequest(url: Self.url(1)))
        var seen: [Int64] = []
        for await update in task.progress { seen.append(update.received) }
        #expect(seen == [10, 40, Int64(pngData(1).count)])
    }
}
