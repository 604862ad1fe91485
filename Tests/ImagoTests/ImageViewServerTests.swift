import Dispatch
import Foundation
import Testing
@testable import Imago

/// A view that logs, in one order, every URL set on it and every image it was
/// given, so a test can tell whether an older image ever followed a newer one.
@MainActor final class LoggingView: ImageDisplaying {
    enum Entry: Equatable {
        /// URL number `n` was set, by `setImage(with:)` or `imageURL`.
        case set(Int)
        /// The image of URL number `n` was shown.
        case shown(Int)
    }

    var log: [Entry] = []
    let imageTargetLoader: ImageTargetLoader

    init(_ targets: ImageTargetLoader) { imageTargetLoader = targets }

    func display(_ content: ImageDisplayContent) {
        guard content.phase == .success, let image = content.image else { return }
        log.append(.shown(ImageViewServerTests.number(of: image)))
    }

    /// The number of the last image shown.
    var lastShown: Int? {
        for entry in log.reversed() { if case .shown(let n) = entry { return n } }
        return nil
    }

    /// The shown images out of order: for each image shown, the place of the latest
    /// setting of its URL before it; an image whose place is before an earlier
    /// image's place is older than one already shown.
    var olderAfterNewer: [(earlier: Int, later: Int)] {
        var latestSet: [Int: Int] = [:]
        var newestShown = -1
        var faults: [(Int, Int)] = []
        for (index, entry) in log.enumerated() {
            switch entry {
            case .set(let n):
                latestSet[n] = index
            case .shown(let n):
                let place = latestSet[n] ?? -1
                if place < newestShown { faults.append((newestShown, place)) }
                newestShown = max(newestShown, place)
            }
        }
        return faults
    }
}

/// The view calls against the real HTTP server: reuse under random delays, the
/// thumbnail-then-full-image orders, and a view that goes away mid-load.
@MainActor @Suite(.serialized) struct ImageViewServerTests {
    let server = TestServer()

    init() throws {
        try server.start()
    }

    /// An image whose first pixel names its URL's number (0–65,535).
    static func image(number: Int) -> Data {
        let pixel: [UInt8] = [UInt8(number >> 8), UInt8(number & 0xFF), 7, 255]
        let pixels = Array([pixel, pixel].joined())
        return try! PNGEncoder().encode(Bitmap(width: 2, height: 1, pixels: pixels))
    }

    nonisolated static func number(of image: DecodedImage) -> Int {
        let pixel = image.bitmap[0, 0]
        return Int(pixel.r) << 8 | Int(pixel.g)
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
            let body = Self.image(number: n)
            server.route("/\(n).png") { _ in
                usleep(UInt32.random(in: 0...15_000))
                return .ok(body, headers: ["Content-Type": "image/png"])
            }
        }
        let targets = makeTargets()
        let views = (0..<50).map { _ in LoggingView(targets) }
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
        let settled = await until(60) { views.indices.allSatisfy { views[$0].lastShown == last[$0] } }
        for (v, view) in views.enumerated() {
            #expect(view.lastShown == last[v], "view \(v) shows \(String(describing: view.lastShown)), set last to \(last[v])")
            #expect(view.imageURL == server.url("/\(last[v]).png"))
            #expect(view.olderAfterNewer.isEmpty, "view \(v) showed an older image after a newer one: \(view.olderAfterNewer)")
        }
        #expect(settled)
        let shown = views.reduce(0) { $0 + $1.log.filter { if case .shown = $0 { true } else { false } }.count }
        print("reuse storm: 10,000 calls on 50 views, \(shown) images shown, \(server.allRequests.count) requests to the server")
    }

    /// Serves `/thumb.png` (number 1) and `/full.png` (number 2), each held back until
    /// its gate opens.
    func routeThumbnailAndFull() -> (thumbnail: DispatchSemaphore, full: DispatchSemaphore) {
        let gates = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        for (path, number, gate) in [("/thumb.png", 1, gates.0), ("/full.png", 2, gates.1)] {
            let body = Self.image(number: number)
            server.route(path) { _ in
                _ = gate.wait(timeout: .now() + 20)
                return .ok(body)
            }
        }
        return gates
    }

    /// Sets the thumbnail on a view and, once the server has its request, the full
    /// image, then lets them arrive in `order`; returns the view.
    func thumbnailThenFull(arriving order: [String]) async throws -> LoggingView {
        let gates = routeThumbnailAndFull()
        let view = LoggingView(makeTargets())
        view.log.append(.set(1))
        view.imageURL = server.url("/thumb.png")
        #expect(await until { server.count(for: "/thumb.png") == 1 })
        view.log.append(.set(2))
        view.imageURL = server.url("/full.png")
        #expect(await until { server.count(for: "/full.png") == 1 })
        for path in order {
            (path == "/thumb.png" ? gates.thumbnail : gates.full).signal()
            if path == "/full.png" { #expect(await until { view.lastShown == 2 }) }
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
        let view = LoggingView(targets)
        view.imageURL = server.url("/thumb.png")
        #expect(await until { server.count(for: "/thumb.png") == 1 })
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
        var view: LoggingView? = LoggingView(targets)
        let task = try #require(view?.setImage(with: server.url("/stall.png")))
        #expect(await until { server.count(for: "/stall.png") == 1 && server.openConnections == 1 })
        view = nil
        #expect(await until { server.openConnections == 0 }, "the server still holds the connection")
        #expect(await withTimeLimit(120) { await task.value }?.error == .cancelled)
    }
}
