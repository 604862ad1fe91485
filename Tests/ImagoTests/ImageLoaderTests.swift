import Foundation
import Synchronization
import Testing
@testable import Imago
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data loader the test drives: each request waits until the test answers it, so
/// queueing, coalescing and cancellation can be observed exactly.
final class ControlledLoader: DataLoading {
    private struct Pending {
        let url: String
        let continuation: CheckedContinuation<Result<DataResponse, ImagoError>, Never>
    }

    private struct State {
        var pending: [Int: Pending] = [:]
        var started: [String] = []
        var cancelled: [String] = []
        var automatic: [String: Result<DataResponse, ImagoError>] = [:]
        var next = 0
    }

    private let state = Locked(State())

    /// URLs requested so far, in order.
    var started: [String] { state.withLock { $0.started } }
    /// URLs whose transfer was cancelled.
    var cancelled: [String] { state.withLock { $0.cancelled } }
    var waiting: Int { state.withLock { $0.pending.count } }

    /// Answers every future request for `url` at once.
    func answer(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        state.withLock { $0.automatic[url.absoluteString] = result }
    }

    /// Answers the waiting requests for `url`.
    func release(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        let ready = state.withLock { state -> [Pending] in
            let matching = state.pending.filter { $0.value.url == url.absoluteString }
            for key in matching.keys { state.pending[key] = nil }
            return Array(matching.values)
        }
        for pending in ready { pending.continuation.resume(returning: result) }
    }

    func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
        let url = request.url!.absoluteString
        let (id, automatic) = state.withLock { state -> (Int, Result<DataResponse, ImagoError>?) in
            state.started.append(url)
            state.next += 1
            return (state.next, state.automatic[url])
        }
        if let automatic { return try automatic.get() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelledAlready = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.pending[id] = Pending(url: url, continuation: continuation)
                    return false
                }
                if cancelledAlready { continuation.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            let pending = state.withLock { state -> Pending? in
                state.cancelled.append(url)
                return state.pending.removeValue(forKey: id)
            }
            pending?.continuation.resume(returning: .failure(.cancelled))
        }
        return try result.get()
    }
}

/// A small PNG whose one colour tells which image it is.
func pngData(_ shade: UInt8) -> Data {
    try! PNGEncoder().encode(Bitmap(width: 2, height: 2, pixels: [UInt8](repeating: 0, count: 16).enumerated().map { $0.offset % 4 == 3 ? 255 : shade }))
}

func ok(_ url: URL, _ shade: UInt8 = 100, status: Int = 200, headers: [String: String] = [:]) -> Result<DataResponse, ImagoError> {
    .success(DataResponse(data: pngData(shade), url: url, statusCode: status, headers: headers))
}

/// Waits until `condition` holds, up to two seconds; false if it never did.
func eventually(isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<400 {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

final class TargetView {}

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
        #expect(await eventually { network.started.count == 2 })
        try await Task.sleep(for: .milliseconds(50))
        #expect(network.started.count == 2)
        network.release(Self.url(0), with: ok(Self.url(0)))
        #expect(await eventually { network.started.count == 3 })
        // Five slots: the three running and two more; the sixth request was the last.
        loader.concurrentLoads = 5
        #expect(await eventually { network.started.count == 6 })
        for n in 1..<6 { network.release(Self.url(n), with: ok(Self.url(n))) }
        for task in tasks { _ = try await task.response }
    }

    @Test func identicalRequestsShareOneTransfer() async throws {
        let url = Self.url(1)
        let tasks = (0..<10).map { _ in loader.task(with: ImageRequest(url: url)) }
        #expect(await eventually { network.started.count == 1 })
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
        #expect(await eventually { network.started.count == 1 })
        tasks[0].cancel()
        tasks[1].cancel()
        try await Task.sleep(for: .milliseconds(30))
        #expect(network.cancelled.isEmpty)
        #expect(tasks[0].result.map { if case .failure(.cancelled) = $0 { true } else { false } } == true)
        tasks[2].cancel()
        #expect(await eventually { network.cancelled == [url.absoluteString] })
        // A cancelled load frees its slot.
        loader.concurrentLoads = 1
        let next = loader.task(with: ImageRequest(url: Self.url(3)))
        #expect(await eventually { network.started.count == 2 })
        network.release(Self.url(3), with: ok(Self.url(3)))
        _ = try await next.response
    }

    @Test func queuedLoadsStartInPriorityOrder() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: Self.url(0)))
        #expect(await eventually { network.started.count == 1 })
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
        #expect(await eventually { network.started.count == 1 })
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
        #expect(await eventually { network.started.count == 2 })
        network.release(flaky, with: ok(flaky, status: 503))
        #expect(await eventually { network.started.count == 3 })
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
        // The upper bound only says "did not hang": a busy 2-core machine running the
        // whole suite can be seconds late.
        #expect(elapsed >= .milliseconds(290) && elapsed < .seconds(20))
        #expect(await eventually { network.cancelled == [url.absoluteString] })
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
        final class Trickle: DataLoading {
            func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
                let data = pngData(1)
                for received in [10, 40, data.count] {
                    try? await Task.sleep(for: .milliseconds(20))
                    progress(Int64(received), Int64(data.count))
                }
                return DataResponse(data: data, url: request.url!, statusCode: 200)
            }
        }
        let loader = ImageLoader(configuration: .init(dataLoader: Trickle()), cache: nil)
        let task = loader.task(with: ImageRequest(url: Self.url(1)))
        var seen: [Int64] = []
        for await update in task.progress { seen.append(update.received) }
        #expect(seen == [10, 40, Int64(pngData(1).count)])
    }

    // MARK: - The seeds' target calls

    @MainActor @Test func aCachedImageSucceedsSynchronously() async {
        let url = Self.url(1)
        let request = ImageRequest(url: url)
        loader.cache?.setImage(try! ImageDecoderRegistry.shared.decode(pngData(9)), forKey: request.cacheKey)
        let view = TargetView()
        var called = false
        loader.loadImage(with: url, target: view, success: { response in
            called = response.source == .memory
        }, failure: { _ in })
        #expect(called)
        #expect(network.started.isEmpty)
    }

    @MainActor @Test func cancelCallsCancelExactlyWhatTheyName() async throws {
        let a = TargetView(), b = TargetView()
        let one = ImageLoadAction("one") { _ in }, two = ImageLoadAction("two") { _ in }
        let u1 = Self.url(1), u2 = Self.url(2)
        func start() -> [String: ImageTask] {
            [
                "a-u1-one": loader.loadImage(with: u1, target: a, action: one),
                "a-u1-two": loader.loadImage(with: u1, target: a, action: two),
                "a-u2-one": loader.loadImage(with: u2, target: a, action: one),
                "b-u1-one": loader.loadImage(with: u1, target: b, action: one),
            ]
        }
        func cancelled(_ tasks: [String: ImageTask]) -> Set<String> {
            Set(tasks.filter { if case .failure(.cancelled)? = $0.value.result { true } else { false } }.keys)
        }
        let cases: [(String, @MainActor () -> Void, Set<String>)] = [
            ("url+target+action", { self.loader.cancelLoading(url: u1, target: a, action: one) }, ["a-u1-one"]),
            ("url+target", { self.loader.cancelLoading(url: u1, target: a) }, ["a-u1-one", "a-u1-two"]),
            ("url", { self.loader.cancelLoading(url: u1) }, ["a-u1-one", "a-u1-two", "b-u1-one"]),
            ("target+action", { self.loader.cancelLoading(target: a, action: one) }, ["a-u1-one", "a-u2-one"]),
            ("target", { self.loader.cancelLoading(target: a) }, ["a-u1-one", "a-u1-two", "a-u2-one"]),
        ]
        for (name, cancel, expected) in cases {
            let tasks = start()
            cancel()
            #expect(cancelled(tasks) == expected, "\(name)")
            for task in tasks.values { task.cancel() }
        }
        _ = (a, b)
    }

    @MainActor @Test func lookUpsGiveTheLatestURL() {
        let view = TargetView()
        let thumb = ImageLoadAction("thumb") { _ in }, full = ImageLoadAction("full") { _ in }
        loader.loadImage(with: Self.url(1), target: view, action: thumb)
        loader.loadImage(with: Self.url(2), target: view, action: full)
        loader.loadImage(with: Self.url(3), target: view, action: thumb)
        #expect(loader.url(for: view, action: thumb) == Self.url(3))
        #expect(loader.url(for: view, action: full) == Self.url(2))
        #expect(loader.url(for: view) == Self.url(3))
        #expect(loader.url(for: TargetView()) == nil)
        loader.cancelLoading(target: view)
    }

    @MainActor @Test func aTargetThatGoesAwayHasItsLoadsCancelled() async throws {
        weak var gone: TargetView?
        var task: ImageTask?
        do {
            let view = TargetView()
            gone = view
            task = loader.loadImage(with: Self.url(1), target: view, success: { _ in }, failure: { _ in })
        }
        #expect(gone == nil)
        // The loader held the target weakly, and its sweep cancels the orphaned load
        // and, as nobody else waits for it, the transfer.
        #expect(await eventually { task?.isFinished == true })
        #expect(await eventually { network.cancelled == [Self.url(1).absoluteString] })
    }

    /// What an observer saw of one notification.
    struct Seen: Sendable {
        let name: Notification.Name
        let url: URL?
        let shade: UInt8?
        let error: ImagoError?
        let cache: ObjectIdentifier?
    }

    @MainActor @Test func notificationsCarryTheSeedsUserInfo() async throws {
        let view = TargetView()
        let good = Self.url(1), bad = Self.url(2)
        network.answer(good, with: ok(good, 5))
        network.answer(bad, with: ok(bad, status: 404))
        let seen = Locked<[Seen]>([])
        let center = NotificationCenter.default
        let observers = [ImageLoader.didFinishNotification, ImageLoader.didFailNotification].map { name in
            center.addObserver(forName: name, object: view, queue: nil) { note in
                let info = note.userInfo ?? [:]
                let record = Seen(
                    name: note.name, url: info[ImageLoader.urlKey] as? URL,
                    shade: (info[ImageLoader.imageKey] as? DecodedImage)?.bitmap[0, 0].r,
                    error: info[ImageLoader.errorKey] as? ImagoError,
                    cache: (info[ImageLoader.cacheKey] as? ImageCache).map { ObjectIdentifier($0) })
                seen.withLock { $0.append(record) }
            }
        }
        defer { observers.forEach(center.removeObserver) }
        var events = loader.events.makeAsyncIterator()
        var outcomes: [Bool] = []
        loader.loadImage(with: good, target: view, success: { _ in outcomes.append(true) }, failure: { _ in outcomes.append(false) })
        loader.loadImage(with: bad, target: view, success: { _ in outcomes.append(true) }, failure: { _ in outcomes.append(false) })
        #expect(await eventually { seen.withLock { $0.count } == 2 })
        #expect(Set(outcomes) == [false, true] && outcomes.count == 2)
        let finished = try #require(seen.withLock { $0.first { $0.name == ImageLoader.didFinishNotification } })
        #expect(finished.shade == 5 && finished.url == good)
        #expect(finished.cache == (loader.cache as? ImageCache).map { ObjectIdentifier($0) })
        let failed = try #require(seen.withLock { $0.first { $0.name == ImageLoader.didFailNotification } })
        #expect(failed.url == bad && failed.error == .httpStatus(404, url: bad.absoluteString))
        let first = await events.next(), second = await events.next()
        #expect(Set([first?.url, second?.url]) == [good, bad])
    }

    @Test func urlOnlyLoadsAreSeenThroughNotifications() async throws {
        let url = Self.url(8)
        network.answer(url, with: ok(url))
        var events = loader.events.makeAsyncIterator()
        loader.loadImage(with: url)
        let event = await events.next()
        #expect(event?.url == url)
        #expect((try? event?.result.get())?.image.width == 2)
    }
}

@Suite struct ImagePrefetcherTests {
    let network = ControlledLoader()
    let loader: ImageLoader

    init() {
        loader = ImageLoader(configuration: .init(dataLoader: network), cache: ImageCache())
    }

    @Test func prefetchesAtLowPriorityBehindVisibleWork() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: ImageLoaderTests.url(0)))
        #expect(await eventually { network.started.count == 1 })
        let prefetcher = ImagePrefetcher(loader: loader)
        prefetcher.startPrefetching(with: [ImageLoaderTests.url(1), ImageLoaderTests.url(2)])
        let visible = loader.task(with: ImageRequest(url: ImageLoaderTests.url(3)))
        for n in 1...3 { network.answer(ImageLoaderTests.url(n), with: ok(ImageLoaderTests.url(n))) }
        network.release(ImageLoaderTests.url(0), with: ok(ImageLoaderTests.url(0)))
        _ = try await blocker.response
        _ = try await visible.response
        #expect(await eventually { prefetcher.count == 0 })
        #expect(network.started == [0, 3, 1, 2].map { ImageLoaderTests.url($0).absoluteString })
        // Prefetched images are memory hits now.
        #expect(loader.cachedImage(for: ImageRequest(url: ImageLoaderTests.url(2))) != nil)
    }

    @Test func stoppingCancelsAsAWhole() async throws {
        let prefetcher = ImagePrefetcher(loader: loader)
        let urls = (1...5).map(ImageLoaderTests.url)
        prefetcher.startPrefetching(with: urls)
        #expect(await eventually { network.started.count == 2 })
        // A queued one stops alone, freeing no slot.
        prefetcher.stopPrefetching(with: [urls[4]])
        #expect(prefetcher.count == 4)
        prefetcher.stopPrefetching()
        #expect(prefetcher.count == 0)
        #expect(await eventually { Set(network.cancelled) == Set(urls.prefix(2).map(\.absoluteString)) })
        try await Task.sleep(for: .milliseconds(50))
        #expect(network.started.count == 2)
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
}
