import Foundation
import Testing
@testable import Imago
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The target/action calls modelled on AsyncImageView's AsyncImageLoader.
@Suite struct ImageTargetLoaderTests {
    let network = ControlledLoader()
    let loader: ImageLoader
    let targets: ImageTargetLoader

    init() {
        loader = ImageLoader(configuration: .init(dataLoader: network), cache: ImageCache())
        targets = ImageTargetLoader(loader: loader)
    }

    static func url(_ n: Int) -> URL { ImageLoaderTests.url(n) }

    @MainActor @Test func aCachedImageSucceedsSynchronously() async {
        let url = Self.url(1)
        let request = ImageRequest(url: url)
        loader.cache?.setImage(try! ImageDecoderRegistry.shared.decode(pngData(9)), forKey: request.cacheKey)
        let view = TargetView()
        var called = false
        targets.loadImage(with: url, target: view, success: { response in
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
                "a-u1-one": targets.loadImage(with: u1, target: a, action: one),
                "a-u1-two": targets.loadImage(with: u1, target: a, action: two),
                "a-u2-one": targets.loadImage(with: u2, target: a, action: one),
                "b-u1-one": targets.loadImage(with: u1, target: b, action: one),
            ]
        }
        func cancelled(_ tasks: [String: ImageTask]) -> Set<String> {
            Set(tasks.filter { if case .failure(.cancelled)? = $0.value.result { true } else { false } }.keys)
        }
        let cases: [(String, @MainActor () -> Void, Set<String>)] = [
            ("url+target+action", { self.targets.cancelLoading(url: u1, target: a, action: one) }, ["a-u1-one"]),
            ("url+target", { self.targets.cancelLoading(url: u1, target: a) }, ["a-u1-one", "a-u1-two"]),
            ("url", { self.targets.cancelLoading(url: u1) }, ["a-u1-one", "a-u1-two", "b-u1-one"]),
            ("target+action", { self.targets.cancelLoading(target: a, action: one) }, ["a-u1-one", "a-u2-one"]),
            ("target", { self.targets.cancelLoading(target: a) }, ["a-u1-one", "a-u1-two", "a-u2-one"]),
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
        targets.loadImage(with: Self.url(1), target: view, action: thumb)
        targets.loadImage(with: Self.url(2), target: view, action: full)
        targets.loadImage(with: Self.url(3), target: view, action: thumb)
        #expect(targets.url(for: view, action: thumb) == Self.url(3))
        #expect(targets.url(for: view, action: full) == Self.url(2))
        #expect(targets.url(for: view) == Self.url(3))
        #expect(targets.url(for: TargetView()) == nil)
        targets.cancelLoading(target: view)
    }

    @MainActor @Test func aTargetThatGoesAwayHasItsLoadsCancelled() async throws {
        weak var gone: TargetView?
        var task: ImageTask?
        do {
            let view = TargetView()
            gone = view
            task = targets.loadImage(with: Self.url(1), target: view, success: { _ in }, failure: { _ in })
        }
        #expect(gone == nil)
        // The loader held the target weakly, and its sweep cancels the orphaned load
        // and, as nobody else waits for it, the transfer.
        guard case .failure(.cancelled)? = await task?.value else { Issue.record("the orphaned load was not cancelled"); return }
        #expect(await network.until { $0.cancelled == [Self.url(1).absoluteString] })
    }

    /// What an observer saw of one notification.
    struct Seen: Sendable {
        let name: Notification.Name
        let url: URL?
        let shade: UInt8?
        let error: ImagoError?
        let cache: ObjectIdentifier?
    }

    @MainActor @Test func notificationsCarryTheImageURLCacheAndError() async throws {
        let view = TargetView()
        let good = Self.url(1), bad = Self.url(2)
        network.answer(good, with: ok(good, 5))
        network.answer(bad, with: ok(bad, status: 404))
        let seen = Locked<[Seen]>([])
        let center = NotificationCenter.default
        let observers = [ImageTargetLoader.didFinishNotification, ImageTargetLoader.didFailNotification].map { name in
            center.addObserver(forName: name, object: view, queue: nil) { note in
                let info = note.userInfo ?? [:]
                let record = Seen(
                    name: note.name, url: info[ImageTargetLoader.UserInfoKey.url] as? URL,
                    shade: (info[ImageTargetLoader.UserInfoKey.image] as? DecodedImage)?.bitmap[0, 0].r,
                    error: info[ImageTargetLoader.UserInfoKey.error] as? ImagoError,
                    cache: (info[ImageTargetLoader.UserInfoKey.cache] as? ImageCache).map { ObjectIdentifier($0) })
                seen.withLock { $0.append(record) }
            }
        }
        defer { observers.forEach(center.removeObserver) }
        var events = targets.events.makeAsyncIterator()
        var outcomes: [Bool] = []
        targets.loadImage(with: good, target: view, success: { _ in outcomes.append(true) }, failure: { _ in outcomes.append(false) })
        targets.loadImage(with: bad, target: view, success: { _ in outcomes.append(true) }, failure: { _ in outcomes.append(false) })
        // Each event is yielded right after its notification is posted.
        let first = await events.next(), second = await events.next()
        #expect(seen.withLock { $0.count } == 2)
        #expect(Set(outcomes) == [false, true] && outcomes.count == 2)
        let finished = try #require(seen.withLock { $0.first { $0.name == ImageTargetLoader.didFinishNotification } })
        #expect(finished.shade == 5 && finished.url == good)
        #expect(finished.cache == (loader.cache as? ImageCache).map { ObjectIdentifier($0) })
        let failed = try #require(seen.withLock { $0.first { $0.name == ImageTargetLoader.didFailNotification } })
        #expect(failed.url == bad && failed.error == .httpStatus(404, url: bad.absoluteString))
        #expect(Set([first?.url, second?.url]) == [good, bad])
    }

    @Test func urlOnlyLoadsAreSeenThroughNotifications() async throws {
        let url = Self.url(8)
        network.answer(url, with: ok(url))
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: url)
        let event = await events.next()
        #expect(event?.url == url)
        #expect((try? event?.result.get())?.image.width == 2)
    }
}
