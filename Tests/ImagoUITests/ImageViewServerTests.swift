import Dispatch
import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The view and target calls against the real HTTP server: reuse under random
/// delays, the thumbnail-then-full-image orders of AsyncImageView, the outcome of
/// each of several loads on one target, and a view that goes away mid-load.
@MainActor @Suite(.serialized) struct ImageViewServerTests {
    let server = TestServer()

    init() throws {
        try server.start()
    }

    func makeTargets(concurrentLoads: Int = 4) -> ImageTargetLoader {
        let loader = ImageLoader(configuration: .init(retryPolicy: .none, diskCache: nil), cache: ImageCache())
        loader.concurrentLoads = concurrentLoads
        return ImageTargetLoader(loader: loader)
    }

    /// Cells of a list reused at random while the server answers after random
    /// delays: each view ends on the image of the last URL set on it, and none ever
    /// shows an older image after a newer one.
    @Test func aReuseStormAgainstTheServer() async throws {
        defer { server.stop() }
        for n in 0..<200 {
            let body = NumberedImage.png(n)
            server.route("/\(n).png") { _ in
                usleep(UInt32.random(in: 0...15_000))
                return .ok(body, headers: ["Content-Type": "image/png"])
            }
        }
        let targets = makeTargets()
        let views = (0..<50).map { _ in RecordingView(targets) }
        var last: [Int] = Array(repeating: -1, count: views.count)
        for call in 0..<10_000 {
            let v = Int.random(in: 0..<views.count), n = Int.random(in: 0..<200)
            views[v].log.append(.set(n))
            last[v] = n
            if Bool.random() {
                views[v].setImage(with: server.url("/\(n).png"))
            } else {
                views[v].imageURL = server.url("/\(n).png")
            }
            // Let loads land during the storm, not only after it.
            if call % 50 == 0 { try await Task.sleep(for: .milliseconds(2)) }
        }
        await waitUntil { views.indices.allSatisfy { views[$0].lastShown == last[$0] } }
        for (v, view) in views.enumerated() {
            #expect(view.lastShown == last[v], "view \(v) shows \(String(describing: view.lastShown)), set last to \(last[v])")
            #expect(view.imageURL == server.url("/\(last[v]).png"))
            #expect(view.olderAfterNewer.isEmpty, "view \(v) showed an older image after a newer one: \(view.olderAfterNewer)")
        }
        let shown = views.reduce(0) { $0 + $1.log.filter { if case .shown = $0 { true } else { false } }.count }
        print("reuse storm: 10,000 calls on 50 views, \(shown) images shown, \(server.allRequests.count) requests to the server")
    }

    /// Serves `/thumb.png` (number 1) and `/full.png` (number 2), each held back until
    /// its gate opens.
    func routeThumbnailAndFull() -> (thumbnail: DispatchSemaphore, full: DispatchSemaphore) {
        let gates = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        for (path, number, gate) in [("/thumb.png", 1, gates.0), ("/full.png", 2, gates.1)] {
            let body = NumberedImage.png(number)
            server.route(path) { _ in
                _ = gate.wait(timeout: .now() + 20)
                return .ok(body)
            }
        }
        return gates
    }

    /// Sets the thumbnail on a view and, once the server has its request, the full
    /// image, then lets them arrive in `order`, each shown before the next is sent;
    /// returns the view.
    func thumbnailThenFull(arriving order: [String]) async throws -> RecordingView {
        let gates = routeThumbnailAndFull()
        let view = RecordingView(makeTargets())
        view.log.append(.set(1))
        view.imageURL = server.url("/thumb.png")
        await waitUntil { server.count(for: "/thumb.png") == 1 }
        view.log.append(.set(2))
        view.imageURL = server.url("/full.png")
        await waitUntil { server.count(for: "/full.png") == 1 }
        for path in order {
            (path == "/thumb.png" ? gates.thumbnail : gates.full).signal()
            // Each lands before the next is let go: the order of arrival is the test's.
            let number = path == "/thumb.png" ? 1 : 2
            await waitUntil { view.lastShown == number }
        }
        // Whatever else was coming has had time to arrive.
        try await Task.sleep(for: .milliseconds(300))
        return view
    }

    /// AsyncImageView's `imageURL` loads in the order set: the thumbnail, arriving
    /// first, is set, and then the full image.
    @Test func aThumbnailArrivingFirstIsSetBeforeTheFullImage() async throws {
        defer { server.stop() }
        let view = try await thumbnailThenFull(arriving: ["/thumb.png", "/full.png"])
        #expect(view.log == [.set(1), .set(2), .shown(1), .shown(2)])
        #expect(view.olderAfterNewer.isEmpty && view.imageURL == server.url("/full.png"))
    }

    /// The full image arriving first is set, and the thumbnail's load is cancelled:
    /// never set, its transfer dropped (the server sees the connection closed).
    @Test func aFullImageArrivingFirstIsSetAndTheThumbnailsTransferDropped() async throws {
        defer { server.stop() }
        server.route("/thumb.png") { _ in .stall() }
        let full = NumberedImage.png(2)
        server.route("/full.png") { _ in .ok(full) }
        let view = RecordingView(makeTargets())
        view.log.append(.set(1))
        view.imageURL = server.url("/thumb.png")
        await waitUntil { server.count(for: "/thumb.png") == 1 }
        view.log.append(.set(2))
        view.imageURL = server.url("/full.png")
        await waitUntil { view.lastShown == 2 }
        let stalls = await server.waitForStalls(1)
        #expect(stalls.first?.closedByClient == true, "the thumbnail's transfer went on")
        try await Task.sleep(for: .milliseconds(200))
        #expect(view.log == [.set(1), .set(2), .shown(2)])
        #expect(!view.imageTargetLoader.isLoading(view, action: nil))
    }

    /// A view's options may name alternative URLs: the URL set failing, the view
    /// shows the first alternative's image, and never the failure in between.
    @Test func aViewShowsAnAlternativeWhenItsURLFails() async throws {
        defer { server.stop() }
        server.route("/gone.png") { _ in .text("gone", status: 404) }
        let mirror = NumberedImage.png(7)
        server.route("/mirror.png") { _ in .ok(mirror) }
        let view = RecordingView(makeTargets())
        view.options.alternativeURLs = [server.url("/mirror.png")]
        let outcome = Locked<Result<ImageResponse, ImagoError>?>(nil)
        view.setImage(with: server.url("/gone.png")) { result in outcome.withLock { $0 = result } }
        await waitUntil { outcome.withLock { $0 } != nil }
        let response = try #require(try outcome.withLock { $0 }?.get())
        #expect(response.url == server.url("/mirror.png"))
        #expect(view.lastShown == 7 && view.contents.allSatisfy { $0.phase != .failure })
        #expect(server.count(for: "/gone.png") == 1 && server.count(for: "/mirror.png") == 1)
    }

    @Test func aCachedFullImageIsShownAtOnceAndTheThumbnailNever() async throws {
        defer { server.stop() }
        let gates = routeThumbnailAndFull()
        let targets = makeTargets()
        gates.full.signal()
        _ = try await targets.loader.image(for: server.url("/full.png"))
        let view = RecordingView(targets)
        view.imageURL = server.url("/thumb.png")
        await waitUntil { server.count(for: "/thumb.png") == 1 }
        view.imageURL = server.url("/full.png")
        // Shown before the setter returned, from the memory cache.
        #expect(view.lastShown == 2)
        gates.thumbnail.signal()
        try await Task.sleep(for: .milliseconds(300))
        #expect(view.log == [.shown(2)])
    }

    /// AsyncImageLoader's target/action loads keep the same order: a thumbnail then
    /// the full image on one target and action, the thumbnail arriving first, are
    /// both handed to the action, in that order.
    @Test func targetActionLoadsAreSetInTheOrderSet() async throws {
        defer { server.stop() }
        let gates = routeThumbnailAndFull()
        let targets = makeTargets()
        final class Cell {}
        let cell = Cell()
        let handed = Locked<[Int]>([])
        let show = ImageLoadAction("show") { _, response in handed.withLock { $0.append(NumberedImage.number(of: response.image)) } }
        targets.loadImage(with: server.url("/thumb.png"), target: cell, action: show)
        targets.loadImage(with: server.url("/full.png"), target: cell, action: show)
        #expect(targets.url(for: cell, action: show) == server.url("/full.png"))
        await waitUntil { server.count(for: "/thumb.png") == 1 && server.count(for: "/full.png") == 1 }
        gates.thumbnail.signal()
        await waitUntil { handed.withLock { $0 } == [1] }
        gates.full.signal()
        await waitUntil { handed.withLock { $0 } == [1, 2] }
        try await Task.sleep(for: .milliseconds(200))
        #expect(handed.withLock { $0 } == [1, 2] && targets.url(for: cell, action: show) == nil)
        _ = cell
    }

    /// Three loads on one target (an image, a URL that answers 500, one that answers
    /// 404), the image arriving last: each ends with its own notification and event,
    /// as AsyncImageLoader's queue of loads does.
    @Test func eachOfSeveralLoadsOnATargetIsAnnounced() async throws {
        defer { server.stop() }
        let image = NumberedImage.png(1)
        let released = DispatchSemaphore(value: 0)
        server.route("/image.png") { _ in
            _ = released.wait(timeout: .now() + 20)
            return .ok(image)
        }
        server.route("/error.png") { _ in .text("broken", status: 500) }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let targets = makeTargets()
        final class Cell {}
        let cell = Cell()
        let notified = Locked<[String]>([])
        let center = NotificationCenter.default
        let observers = [ImageTargetLoader.didFinishNotification, ImageTargetLoader.didFailNotification].map { name in
            center.addObserver(forName: name, object: cell, queue: nil) { note in
                let url = note.userInfo?[ImageTargetLoader.UserInfoKey.url] as? URL
                let kind = note.name == ImageTargetLoader.didFinishNotification ? "finished" : "failed"
                notified.withLock { $0.append("\(kind) \(url?.lastPathComponent ?? "?")") }
            }
        }
        defer { observers.forEach(center.removeObserver) }
        var events = targets.events.makeAsyncIterator()
        let succeeded = Locked<[Int]>([]), failed = Locked<[String]>([])
        for path in ["/image.png", "/error.png", "/missing.png"] {
            targets.loadImage(with: server.url(path), target: cell, success: { _, response in
                succeeded.withLock { $0.append(NumberedImage.number(of: response.image)) }
            }, failure: { _, error in
                let what = if case .httpStatus(let status, _) = error { "\(status)" } else { "\(error)" }
                failed.withLock { $0.append("\(path) \(what)") }
            })
        }
        var outcomes: [String] = []
        for _ in 0..<2 {
            let event = await events.next()
            outcomes.append("\(event?.url.lastPathComponent ?? "?") \(event.map { (try? $0.result.get()) != nil } == true ? "ok" : "failed")")
        }
        released.signal()
        let last = await events.next()
        outcomes.append("\(last?.url.lastPathComponent ?? "?") \(last.map { (try? $0.result.get()) != nil } == true ? "ok" : "failed")")
        #expect(Set(outcomes.prefix(2)) == ["error.png failed", "missing.png failed"] && outcomes.last == "image.png ok")
        #expect(succeeded.withLock { $0 } == [1] && Set(failed.withLock { $0 }) == ["/error.png 500", "/missing.png 404"])
        await waitUntil { notified.withLock { $0.count } == 3 }
        #expect(Set(notified.withLock { $0 }) == ["finished image.png", "failed error.png", "failed missing.png"])
        _ = cell
    }

    /// The view is the only consumer: when it goes away, its load is cancelled and
    /// the transfer with it, which the server sees as the connection closing.
    @Test func aViewReleasedWhileLoadingDropsTheConnection() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        let targets = makeTargets()
        var view: RecordingView? = RecordingView(targets)
        let task = try #require(view?.setImage(with: server.url("/stall.png")))
        await waitUntil { server.count(for: "/stall.png") == 1 && server.openConnections == 1 }
        view = nil
        await waitUntil("the server still holds the connection") { server.openConnections == 0 }
        #expect(await withTimeLimit(120) { await task.value }?.error == .cancelled)
    }

    /// A completion handler that captured its view keeps the view alive until the
    /// handler is released; a view that leaves its hierarchy is taken for gone all
    /// the same, its load cancelled (and the transfer, which nobody else waits for),
    /// its handler released, and the view with it.
    @Test func aViewThatLeavesItsHierarchyIsFreedThoughItsCompletionHoldsIt() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        let targets = makeTargets()
        weak var gone: RecordingView?
        let outcome = Locked<ImagoError?>(nil)
        do {
            let view = RecordingView(targets)
            gone = view
            view.setImage(with: server.url("/stall.png")) { result in
                // The view, captured strongly, as a cell's handler often does.
                view.firstImage = nil
                outcome.withLock { $0 = result.error }
            }
            await waitUntil { server.openConnections == 1 }
            // Shown, then taken out of its window and its superview.
            try await Task.sleep(for: ImageTargetLoader.sweepInterval * 2)
            view.isInViewHierarchy = false
        }
        await waitUntil("the server still holds the connection") { server.openConnections == 0 }
        await waitUntil("the view is still alive") { gone == nil }
        #expect(outcome.withLock { $0 } == .cancelled)
    }

    /// A view set up before it is added to a hierarchy (a cell configured for display)
    /// keeps its load however long it waits outside: only a view seen inside is taken
    /// for gone when it leaves. Its load is then cancelled, and the view hears of it.
    @Test func aViewSetUpOutsideAHierarchyKeepsItsLoadUntilItLeavesOne() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        let targets = makeTargets()
        let view = RecordingView(targets)
        view.isInViewHierarchy = false
        let task = try #require(view.setImage(with: server.url("/stall.png")))
        await waitUntil { server.openConnections == 1 }
        try await Task.sleep(for: ImageTargetLoader.sweepInterval * 4)
        #expect(server.openConnections == 1, "a view never in a hierarchy lost its load")
        #expect(!task.isFinished)
        view.isInViewHierarchy = true
        try await Task.sleep(for: ImageTargetLoader.sweepInterval * 2)
        #expect(!task.isFinished, "a view in its hierarchy lost its load")
        view.isInViewHierarchy = false
        #expect(await withTimeLimit(120) { await task.value }?.error == .cancelled)
        #expect(view.cancellations == 1)
        await waitUntil("the server still holds the connection") { server.openConnections == 0 }
    }
}
