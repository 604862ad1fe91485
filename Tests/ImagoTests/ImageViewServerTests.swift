import Dispatch
import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The view calls against the real HTTP server: reuse under random delays, the
/// thumbnail-then-full-image orders, and a view that goes away mid-load.
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
    /// image, then lets them arrive in `order`; returns the view.
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
            if path == "/full.png" { await waitUntil { view.lastShown == 2 } }
        }
        // Whatever else was coming has had time to arrive.
        try await Task.sleep(for: .milliseconds(300))
        return view
    }

    /// AsyncImageView's `imageURL` ends on the newest URL: the view moved on from the
    /// thumbnail, so the thumbnail is never shown, whichever arrives first.
    @Test func aThumbnailArrivingFirstIsNotShownOnceTheViewMovedOn() async throws {
        defer { server.stop() }
        let view = try await thumbnailThenFull(arriving: ["/thumb.png", "/full.png"])
        #expect(view.log == [.set(1), .set(2), .shown(2)])
    }

    @Test func aFullImageArrivingFirstIsShownAndTheThumbnailNever() async throws {
        defer { server.stop() }
        let view = try await thumbnailThenFull(arriving: ["/full.png", "/thumb.png"])
        #expect(view.log == [.set(1), .set(2), .shown(2)])
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
}
