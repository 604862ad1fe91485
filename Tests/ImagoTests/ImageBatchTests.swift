import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `ImageLoader.images(for:maxConcurrent:)` against the test server on 127.0.0.1:
/// completion order, a bounded window over a lazy input, and cancellation of the rest
/// when the consumer stops.
@Suite struct ImageBatchTests {
    let server = TestServer()

    init() throws {
        try server.start()
        for n in 0..<4 { server.route("/\(n).png", data: pngData(UInt8(n * 10 + 5))) }
        server.route("/stall.png") { _ in .stall() }
    }

    func makeLoader(concurrentLoads: Int = 4) -> ImageLoader {
        let loader = ImageLoader(configuration: .init(retryPolicy: .none), cache: ImageCache())
        loader.concurrentLoads = concurrentLoads
        return loader
    }

    @Test func itemsComeInCompletionOrderWithTheirPlaces() async throws {
        defer { server.stop() }
        // The first image is answered only once the others have all been taken.
        let gate = DispatchSemaphore(value: 0)
        server.route("/slow.png") { _ in
            _ = gate.wait(timeout: .now() + 120)
            return .ok(pngData(200))
        }
        let paths = ["/slow.png", "/0.png", "/1.png", "/missing.png", "/2.png"]
        let loader = makeLoader()
        let items = await withTimeLimit(120) {
            var items: [ImageLoader.Batch.Item] = []
            for await item in loader.images(for: paths.map { ImageRequest(url: self.server.url($0)) }) {
                items.append(item)
                if items.count == paths.count - 1 { gate.signal() }
            }
            return items
        }
        let all = try #require(items)
        #expect(all.count == paths.count)
        #expect(Set(all.map(\.index)) == Set(0..<paths.count))
        #expect(all.last?.index == 0, "the slow image comes last: \(all.map(\.index))")
        for item in all {
            #expect(item.request.url == server.url(paths[item.index]))
            if item.index == 3 {
                #expect(item.result.failure == .httpStatus(404, url: server.url("/missing.png").absoluteString))
            } else {
                let shade = item.index == 0 ? 200 : (item.index == 4 ? 25 : (item.index - 1) * 10 + 5)
                #expect(try item.result.get().image.bitmap[0, 0].r == UInt8(shade), "item \(item.index)")
            }
        }
    }

    @Test func aMillionRequestsAreReadOnlyAsPlacesFreeUp() async throws {
        defer { server.stop() }
        let loader = makeLoader()
        let read = Locked(0)
        let urls = (0..<4).map { server.url("/\($0).png") }
        let window = 5
        let taken = await withTimeLimit(120) {
            let requests = (0..<1_000_000).lazy.map { n in
                read.withLock { $0 += 1 }
                return ImageRequest(url: urls[n % 4])
            }
            var taken = 0, mostRead = 0
            for await item in loader.images(for: requests, maxConcurrent: window) {
                #expect(item.result.isSuccess)
                taken += 1
                // Whatever the consumer has not taken holds a place: the input is
                // never read further ahead than the window (and the one request the
                // reading thread holds while it waits for a place).
                mostRead = max(mostRead, read.withLock { $0 })
                #expect(read.withLock { $0 } <= taken + window)
                if taken == 200 { break }
            }
            return (taken, mostRead)
        }
        let (count, mostRead) = try #require(taken)
        #expect(count == 200)
        #expect(mostRead <= 200 + window)
        // The batch stopped with the loop: the input is not read any further.
        try await Task.sleep(for: .milliseconds(300))
        #expect(read.withLock { $0 } <= 200 + window)
    }

    @Test func leavingTheLoopCancelsTheLoadsInFlight() async throws {
        defer { server.stop() }
        let loader = makeLoader()
        let requests = [ImageRequest(url: server.url("/0.png"))]
            + (0..<3).map { ImageRequest(url: server.url("/stall.png?n=\($0)")) }
        let first = await withTimeLimit(120) { () -> Int? in
            for await item in loader.images(for: requests, maxConcurrent: 4) {
                // The quick image; the stalled ones are still loading, each of them
                // asked for by now (on a busy machine the quick one may come first).
                await waitUntil { self.server.count(for: "/stall.png") == 3 }
                return item.index
            }
            return nil
        }
        #expect(first == 0)
        // Every stalled transfer is closed by the client, not left to its timeout.
        let stalls = await server.waitForStalls(3)
        #expect(stalls.count == 3 && stalls.allSatisfy(\.closedByClient), "\(stalls)")
        await waitUntil { loader.queuedCount == 0 && loader.pipeline.stagesInFlight == 0 }
    }

    @Test func cancellingTheIteratingTaskEndsTheBatch() async throws {
        defer { server.stop() }
        let loader = makeLoader(concurrentLoads: 2)
        // More stalls than transfer slots: two load, the rest wait in the queue.
        let requests = (0..<5).map { ImageRequest(url: server.url("/stall.png?n=\($0)")) }
        let consumer = Task {
            var count = 0
            for await _ in loader.images(for: requests) { count += 1 }
            return count
        }
        await waitUntil { server.count(for: "/stall.png") == 2 }
        consumer.cancel()
        let ended = await withTimeLimit(120) { await consumer.value }
        #expect(ended == 0, "the iteration ends without items")
        let stalls = await server.waitForStalls(2)
        #expect(stalls.count == 2 && stalls.allSatisfy(\.closedByClient))
        await waitUntil { loader.queuedCount == 0 && loader.pipeline.stagesInFlight == 0 }
        // The queued ones never reached the server.
        #expect(server.count(for: "/stall.png") == 2)
    }

    @Test func loadEachHandsOverEveryOutcomeAsItsLoadCompletesWithinTheWindow() async throws {
        defer { server.stop() }
        let loader = makeLoader()
        let read = Locked(0), inHandler = Locked(0)
        let urls = (0..<4).map { server.url("/\($0).png") } + [server.url("/missing.png")]
        let window = 3
        let outcomes = Locked<[Int: Result<ImageResponse, ImagoError>]>([:])
        let wrong = Locked<[String]>([])
        let finished = await withTimeLimit(120) {
            let requests = (0..<200).lazy.map { n in
                read.withLock { $0 += 1 }
                return ImageRequest(url: urls[n % urls.count])
            }
            await loader.loadEach(requests, maxConcurrent: window) { item in
                // Called the moment the load completes: the place it holds is still
                // taken, so the input is never read more than the window ahead.
                // Checked here, reported by the test's own task below: the handler
                // runs on the loader's threads.
                inHandler.withLock { $0 += 1 }
                let handled = outcomes.withLock { outcomes in
                    if outcomes[item.index] != nil { wrong.withLock { $0.append("item \(item.index) handed over twice") } }
                    outcomes[item.index] = item.result
                    return outcomes.count
                }
                if read.withLock({ $0 }) > handled + window { wrong.withLock { $0.append("input read past the window") } }
                if item.request.url != urls[item.index % urls.count] { wrong.withLock { $0.append("item \(item.index) misplaced") } }
                inHandler.withLock { $0 -= 1 }
            }
            // Every outcome was handed over before the call returned.
            return outcomes.withLock { $0.count }
        }
        #expect(finished == 200)
        #expect(wrong.withLock { $0 } == [])
        let all = outcomes.withLock { $0 }
        for (index, result) in all {
            if index % urls.count == 4 {
                #expect(result.failure == .httpStatus(404, url: server.url("/missing.png").absoluteString))
            } else {
                #expect(try result.get().image.bitmap[0, 0].r == UInt8(index % urls.count * 10 + 5), "item \(index)")
            }
        }
        #expect(inHandler.withLock { $0 } == 0)
    }

    /// The outcomes are handed over on several threads at once: the call returns
    /// only when the last handler has, not when the last load has completed (a tool
    /// that ended then would lose the record a slower handler was still writing).
    @Test func loadEachReturnsOnlyOnceEveryHandlerHasReturned() async throws {
        defer { server.stop() }
        let loader = makeLoader()
        let entered = Locked(0), returned = Locked(0)
        let otherReturning = DispatchSemaphore(value: 0)
        let overlapped = Locked(false)
        let returnedAtTheEnd = await withTimeLimit(120) {
            await loader.loadEach([server.url("/0.png"), server.url("/1.png")].map { ImageRequest(url: $0) }) { _ in
                if entered.withLock({ $0 += 1; return $0 }) == 1 {
                    // The first handler is still busy when the other one returns.
                    overlapped.withLock { $0 = otherReturning.wait(timeout: .now() + 30) == .success }
                    Thread.sleep(forTimeInterval: 0.2)
                } else {
                    otherReturning.signal()
                }
                returned.withLock { $0 += 1 }
            }
            return returned.withLock { $0 }
        }
        #expect(overlapped.withLock { $0 }, "the two handlers ran at once")
        #expect(returnedAtTheEnd == 2)
    }

    @Test func cancellingLoadEachCancelsTheLoadsInFlightAndReturns() async throws {
        defer { server.stop() }
        let loader = makeLoader(concurrentLoads: 2)
        let requests = (0..<5).map { ImageRequest(url: server.url("/stall.png?n=\($0)")) }
        let handled = Locked(0)
        let consumer = Task { await loader.loadEach(requests) { _ in handled.withLock { $0 += 1 } } }
        await waitUntil { server.count(for: "/stall.png") == 2 }
        consumer.cancel()
        #expect(await withTimeLimit(120) { await consumer.value } != nil, "loadEach returned")
        let stalls = await server.waitForStalls(2)
        #expect(stalls.count == 2 && stalls.allSatisfy(\.closedByClient))
        await waitUntil { loader.queuedCount == 0 && loader.pipeline.stagesInFlight == 0 }
        #expect(handled.withLock { $0 } == 0 && server.count(for: "/stall.png") == 2)
    }

    @Test func anEmptyInputEndsAtOnce() async throws {
        defer { server.stop() }
        let loader = makeLoader()
        let count = await withTimeLimit(60) {
            var count = 0
            for await _ in loader.images(for: [ImageRequest]()) { count += 1 }
            return count
        }
        #expect(count == 0)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { true } else { false }
    }

    var failure: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
