import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport
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

    static func url(_ n: Int) -> URL { URL(string: "http://127.0.0.1:9/\(n).png")! }

    @MainActor @Test func aCachedImageSucceedsSynchronously() async {
        let url = Self.url(1)
        let request = ImageRequest(url: url)
        loader.cache?.setImage(try! ImageDecoders.Registry.shared.decode(pngData(9)), forKey: request.cacheKey)
        let view = TargetView()
        var called = false
        targets.loadImage(with: url, target: view, success: { _, response in
            called = response.source == .memory
        }, failure: { _, _ in })
        #expect(called)
        #expect(network.started.isEmpty)
    }

    /// A hit answers with a task already ended with the image found, telling the
    /// loader's listeners what a hit through `task(with:)` tells them. Nothing looks
    /// again: an image evicted right after the look-up starts no transfer that nobody
    /// would wait for.
    @MainActor @Test func aCachedImageIsLookedUpOnceAndItsTaskHasEnded() async throws {
        let url = Self.url(1)
        let request = ImageRequest(url: url)
        let cache = ForgetfulCache()
        let loader = ImageLoader(configuration: .init(dataLoader: network), cache: cache)
        let targets = ImageTargetLoader(loader: loader)
        let kinds = Locked<[String]>([])
        let observation = loader.observeEvents { event in kinds.withLock { $0.append(Self.describe(event.kind)) } }
        defer { observation.cancel() }
        let image = try ImageDecoders.Registry.shared.decode(pngData(9))

        cache.setImage(image, forKey: request.cacheKey)
        let plain = loader.task(with: request)
        #expect(plain.result?.isSuccess == true)
        await waitUntil { kinds.withLock { $0.count } == 3 }
        let expected = kinds.withLock { $0 }
        #expect(expected == ["started", "cacheAnswered memory", "finished memory"])

        cache.setImage(image, forKey: request.cacheKey)
        let lookUps = cache.lookUps
        var shown: ImageResponse?
        let task = targets.loadImage(with: url, target: TargetView(), success: { _, response in shown = response }, failure: { _, _ in })
        #expect(shown?.source == .memory)
        guard case .success(let response)? = task.result else { Issue.record("the task of a hit has not ended with its image"); return }
        #expect(response.source == .memory && response.image.firstFrame.bitmap == image.firstFrame.bitmap)
        #expect(cache.lookUps == lookUps + 1, "the memory tier was asked again")
        await waitUntil { kinds.withLock { $0.count } == 6 }
        #expect(kinds.withLock { Array($0.suffix(3)) } == expected)
        #expect(network.started.isEmpty)
    }

    private static func describe(_ kind: ImageLoadEvent.Kind) -> String {
        switch kind {
        case .started: "started"
        case .cacheAnswered(let source): "cacheAnswered \(source)"
        case .finished(let source, _): "finished \(source)"
        default: "\(kind)"
        }
    }

    @MainActor @Test func cancelCallsCancelExactlyWhatTheyName() async throws {
        let a = TargetView(), b = TargetView()
        let one = ImageLoadAction("one") { _, _ in }, two = ImageLoadAction("two") { _, _ in }
        let three = ImageLoadAction("three") { _, _ in }
        let u1 = Self.url(1), u2 = Self.url(2)
        func start() -> [String: ImageTask] {
            [
                "a-u1-one": targets.loadImage(with: u1, target: a, action: one),
                "a-u1-two": targets.loadImage(with: u1, target: a, action: two),
                "a-u2-three": targets.loadImage(with: u2, target: a, action: three),
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
            ("target+action", { self.targets.cancelLoading(target: a, action: three) }, ["a-u2-three"]),
            ("target", { self.targets.cancelLoading(target: a) }, ["a-u1-one", "a-u1-two", "a-u2-three"]),
        ]
        for (name, cancel, expected) in cases {
            let tasks = start()
            #expect(cancelled(tasks).isEmpty, "\(name): a load of another action or target was cancelled by a new one")
            cancel()
            #expect(cancelled(tasks) == expected, "\(name)")
            for task in tasks.values { task.cancel() }
        }
        _ = (a, b)
    }

    @MainActor @Test func lookUpsGiveTheLatestURL() {
        let view = TargetView()
        let thumb = ImageLoadAction("thumb") { _, _ in }, full = ImageLoadAction("full") { _, _ in }
        targets.loadImage(with: Self.url(1), target: view, action: thumb)
        targets.loadImage(with: Self.url(2), target: view, action: full)
        targets.loadImage(with: Self.url(3), target: view, action: thumb)
        #expect(targets.url(for: view, action: thumb) == Self.url(3))
        #expect(targets.url(for: view, action: full) == Self.url(2))
        #expect(targets.url(for: view) == Self.url(3))
        #expect(targets.url(for: TargetView()) == nil)
        // Nothing queued or loading for an action: no URL for it, as AsyncImageLoader's
        // `URLForTarget:action:` answered.
        targets.cancelLoading(target: view, action: thumb)
        #expect(targets.url(for: view, action: thumb) == nil && targets.url(for: view, action: full) == Self.url(2))
        targets.cancelLoading(target: view)
        #expect(targets.url(for: view, action: full) == nil)
    }

    @MainActor @Test func anActionsURLIsForgottenOnceItsLoadHasDelivered() async throws {
        let view = TargetView()
        let url = Self.url(1)
        network.answer(url, with: ok(url))
        let action = ImageLoadAction("image") { _, _ in }
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: url, target: view, action: action)
        #expect(targets.url(for: view, action: action) == url)
        #expect(await events.next()?.url == url)
        #expect(targets.url(for: view, action: action) == nil)
        #expect(targets.url(for: view) == url)
    }

    @MainActor @Test func aTargetThatGoesAwayHasItsLoadsCancelled() async throws {
        weak var gone: TargetView?
        var task: ImageTask?
        do {
            let view = TargetView()
            gone = view
            task = targets.loadImage(with: Self.url(1), target: view, success: { _, _ in }, failure: { _, _ in })
        }
        #expect(gone == nil)
        // The loader held the target weakly, and its sweep cancels the orphaned load
        // and, as nobody else waits for it, the transfer.
        guard case .failure(.cancelled)? = await task?.value else { Issue.record("the orphaned load was not cancelled"); return }
        await waitUntil { network.seen.cancelled == [Self.url(1).absoluteString] }
    }

    /// Nothing pins a bound target's address (an Objective-C object's is free for the
    /// next allocation as soon as it is deallocated, whatever holds it weakly or
    /// unowned): a new object born where a bound one died must get none of its record.
    @MainActor @Test(.disabled(
        if: ProcessInfo.processInfo.environment["IMAGO_SANITIZER"] == "address",
        "the address sanitizer quarantines freed memory: no object is born at a dead one's address"))
    func anObjectAtADeadTargetsAddressInheritsNothingOfIts() async throws {
        let old = Self.url(1), new = Self.url(2)
        var found: (view: TargetView, deadTask: ImageTask)?
        // The allocator hands the chunk just freed to the next object of its size; a
        // few tries cover anything else allocated in between.
        for _ in 0..<1_000 where found == nil {
            var address: ObjectIdentifier?
            var deadTask: ImageTask?
            do {
                let dead = TargetView()
                address = ObjectIdentifier(dead)
                deadTask = targets.loadImage(with: old, target: dead, success: { _, _ in }, failure: { _, _ in })
            }
            let next = TargetView()
            if ObjectIdentifier(next) == address, let deadTask { found = (next, deadTask) } else { deadTask?.cancel() }
        }
        guard let (view, deadTask) = found else { Issue.record("no object was born at a dead target's address"); return }
        #expect(targets.url(for: view) == nil, "the new object inherited the dead one's URL")

        let delivered = Locked<[URL]>([])
        let task = targets.loadImage(with: new, target: view, success: { _, response in
            delivered.withLock { $0.append(response.url) }
        }, failure: { _, _ in })
        #expect(targets.url(for: view) == new)
        // The dead object's load went with its record.
        guard case .failure(.cancelled) = await deadTask.value else { Issue.record("the dead object's load went on"); return }
        // A sweep forgets nothing of the new object's; its load goes on.
        #expect(targets.sweep(), "the live target's load does not keep the sweeper on")
        var events = targets.events.makeAsyncIterator()
        await waitUntil { network.seen.started.contains(new.absoluteString) }
        network.release(new, with: ok(new))
        guard case .success = await task.value else { Issue.record("the new object's load was cancelled"); return }
        #expect(await events.next()?.url == new)
        #expect(delivered.withLock { $0 } == [new])
        _ = view
    }

    @MainActor @Test func theSweeperRunsOnlyWhileALiveTargetHasALoad() async throws {
        func sweeping() -> Bool { targets.registry.withLock { $0.isSweeping } }
        #expect(!sweeping())
        let view = TargetView()
        let url = Self.url(1)
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: url, target: view, success: { _, _ in }, failure: { _, _ in })
        #expect(sweeping())
        #expect(targets.sweep(), "a live target's unfinished load stops the sweeper")
        await waitUntil { network.seen.started.contains(url.absoluteString) }
        network.release(url, with: ok(url))
        #expect(await events.next()?.url == url)
        // The load has delivered: the sweeper's next turn is its last. The wait is a
        // hang guard only.
        await waitUntil("the sweeper went on with no load left") { !sweeping() }
        #expect(!targets.sweep())
        _ = view
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
        let goodView = TargetView(), badView = TargetView()
        let good = Self.url(1), bad = Self.url(2)
        network.answer(good, with: ok(good, 5))
        network.answer(bad, with: ok(bad, status: 404))
        let seen = Locked<[Seen]>([])
        let center = NotificationCenter.default
        let observers = [(ImageTargetLoader.didFinishNotification, goodView), (ImageTargetLoader.didFailNotification, badView)].map {
            name, view in
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
        targets.loadImage(with: good, target: goodView, success: { _, _ in outcomes.append(true) }, failure: { _, _ in outcomes.append(false) })
        targets.loadImage(with: bad, target: badView, success: { _, _ in outcomes.append(true) }, failure: { _, _ in outcomes.append(false) })
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

    // MARK: - Order, targets handed back, success-only actions, nil targets

    /// Loads of one action on one target are set in the order set: an earlier load
    /// arriving first is set, then the later one; a later image arriving first, or
    /// found in memory, cancels the earlier loads, which are never set.
    @MainActor @Test func loadsOfOneActionAreSetInTheOrderSet() async throws {
        let view = TargetView()
        let shown = Locked<[URL]>([])
        let action = ImageLoadAction("image") { _, response in shown.withLock { $0.append(response.url) } }
        var events = targets.events.makeAsyncIterator()

        // The thumbnail arrives first: both are set, in order.
        let thumbnail = Self.url(1), full = Self.url(2)
        targets.loadImage(with: thumbnail, target: view, action: action)
        targets.loadImage(with: full, target: view, action: action)
        await waitUntil { network.seen.started.count == 2 }
        network.release(thumbnail, with: ok(thumbnail))
        #expect(await events.next()?.url == thumbnail)
        network.release(full, with: ok(full))
        #expect(await events.next()?.url == full)
        #expect(shown.withLock { $0 } == [thumbnail, full])

        // The full image arrives first: the thumbnail's load is cancelled, never set.
        let thumbnail2 = Self.url(3), full2 = Self.url(4)
        let early = targets.loadImage(with: thumbnail2, target: view, action: action)
        targets.loadImage(with: full2, target: view, action: action)
        await waitUntil { network.seen.started.count == 4 }
        network.release(full2, with: ok(full2))
        #expect(await events.next()?.url == full2)
        guard case .failure(.cancelled) = await early.value else { Issue.record("the overtaken load was not cancelled"); return }
        await waitUntil { network.seen.cancelled == [thumbnail2.absoluteString] }
        #expect(shown.withLock { $0.suffix(1) } == [full2])

        // The full image already cached: set at once, the earlier load cancelled.
        let thumbnail3 = Self.url(5), cached = Self.url(6)
        loader.cache?.setImage(try ImageDecoders.Registry.shared.decode(pngData(9)), forKey: ImageRequest(url: cached).cacheKey)
        let pending = targets.loadImage(with: thumbnail3, target: view, action: action)
        targets.loadImage(with: cached, target: view, action: action)
        #expect(shown.withLock { $0.last } == cached)
        guard case .failure(.cancelled)? = pending.result else { Issue.record("the earlier load was not cancelled"); return }
        // Another action on the same target is a queue of its own.
        let other = ImageLoadAction("other") { _, response in shown.withLock { $0.append(response.url) } }
        targets.loadImage(with: cached, target: view, action: other)
        #expect(shown.withLock { $0.suffix(2) } == [cached, cached])
    }

    @MainActor @Test func theHandlerIsHandedTheTargetSoItNeedNotCaptureIt() async throws {
        let url = Self.url(1)
        network.answer(url, with: ok(url))
        var view: TargetView? = TargetView()
        let expected = ObjectIdentifier(view!)
        let handed = Locked<[ObjectIdentifier]>([])
        let action = ImageLoadAction("image") { target, _ in handed.withLock { $0.append(ObjectIdentifier(target)) } }
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: url, target: view!, action: action)
        _ = await events.next()
        #expect(handed.withLock { $0 } == [expected])

        // The loader holds the target weakly: released mid-load, nothing is set and
        // the transfer stops.
        let slow = Self.url(2)
        weak let gone = view
        let task = targets.loadImage(with: slow, target: view!, action: action)
        view = nil
        #expect(gone == nil)
        guard case .failure(.cancelled) = await task.value else { Issue.record("the orphaned load was not cancelled"); return }
        await waitUntil { network.seen.cancelled == [slow.absoluteString] }
        #expect(handed.withLock { $0.count } == 1)
    }

    @MainActor @Test func anActionRunsOnSuccessOnlyFailuresArriveByNotification() async throws {
        let view = TargetView()
        let missing = Self.url(404)
        network.answer(missing, with: ok(missing, status: 404))
        let called = Locked(0)
        let action = ImageLoadAction("image") { _, _ in called.withLock { $0 += 1 } }
        let failures = Locked<[URL]>([])
        let observer = NotificationCenter.default.addObserver(
            forName: ImageTargetLoader.didFailNotification, object: view, queue: nil
        ) { note in
            if let url = note.userInfo?[ImageTargetLoader.UserInfoKey.url] as? URL { failures.withLock { $0.append(url) } }
        }
        defer { NotificationCenter.default.removeObserver(observer) }
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: missing, target: view, action: action)
        let event = await events.next()
        guard case .failure(.httpStatus(404, _))? = event?.result else { Issue.record("\(String(describing: event?.result))"); return }
        #expect(failures.withLock { $0 } == [missing])
        #expect(called.withLock { $0 } == 0)
    }

    @MainActor @Test func aNilTargetLoadsAndIsSeenThroughTheNotifications() async throws {
        let url = Self.url(7)
        network.answer(url, with: ok(url, 12))
        let called = Locked(0)
        let action = ImageLoadAction("image") { _, _ in called.withLock { $0 += 1 } }
        var events = targets.events.makeAsyncIterator()
        targets.loadImage(with: url, target: nil, action: action)
        let event = await events.next()
        #expect(event?.url == url && event?.target == nil)
        #expect((try? event?.result.get())?.image.bitmap[0, 0].r == 12, "\(String(describing: event?.result))")
        #expect(called.withLock { $0 } == 0)
    }
}

/// A memory tier that forgets an image once it has given it out: what an eviction
/// right after a look-up leaves.
private final class ForgetfulCache: ImageCaching, @unchecked Sendable {
    private let images = Locked<[ImageCacheKey: DecodedImage]>([:])
    private let count = Locked(0)
    var lookUps: Int { count.withLock { $0 } }

    func image(forKey key: ImageCacheKey) -> DecodedImage? {
        count.withLock { $0 += 1 }
        return images.withLock { $0.removeValue(forKey: key) }
    }
    func setImage(_ image: DecodedImage, forKey key: ImageCacheKey) { images.withLock { $0[key] = image } }
    func removeImage(forKey key: ImageCacheKey) { _ = images.withLock { $0.removeValue(forKey: key) } }
    func removeAll() { images.withLock { $0.removeAll() } }
}
