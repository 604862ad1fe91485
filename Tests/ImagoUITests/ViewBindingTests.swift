import Dispatch
import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// Suites whose tests must not overlap: some hold the main thread on purpose, as a
/// busy main loop would, and others count what reaches the main actor while a
/// transfer goes on (progressive previews), which a held main thread would drop.
@Suite(.serialized) enum MainThreadSuites {}

extension MainThreadSuites {
    /// The binding rule of every view and target under a busy main thread: a load
    /// delivers only while it is still pending on its binding (not replaced, not
    /// cancelled, not overtaken by a newer image), checked on the main actor when the
    /// delivery runs, against the real HTTP server.
    @MainActor @Suite(.serialized) struct ViewBindingTests {
        let server = TestServer()

        init() throws {
            try server.start()
        }

        func makeTargets(cache: ImageCache = ImageCache(memoryPressure: nil)) -> ImageTargetLoader {
            // No memory of recent originals: every load that misses the memory tier
            // goes to the server and its random delays.
            let loader = ImageLoader(configuration: .init(retryPolicy: .none, diskCache: nil, recentOriginals: nil), cache: cache)
            loader.concurrentLoads = 6
            return ImageTargetLoader(loader: loader)
        }

        /// Serves `/n.png` for `n` in `range`, each image naming its number, after a
        /// random delay of up to `delay` seconds.
        func routeNumbered(_ range: Range<Int>, delay: Double = 0) {
            for n in range {
                let body = NumberedImage.png(n)
                server.route("/\(n).png") { _ in
                    if delay > 0 { usleep(UInt32.random(in: 0...UInt32(delay * 1_000_000))) }
                    return .ok(body, headers: ["Content-Type": "image/png"])
                }
            }
        }

        /// Runs the main actor for `seconds`, letting whatever is on its way land.
        func settle(_ seconds: Double = 0.3) async throws {
            try await Task.sleep(for: .seconds(seconds))
        }

        // MARK: - The deterministic sequence

        /// A's image arrives while the main thread is busy; the view is cancelled and
        /// given B, which never answers: it shows the placeholder and the spinner, never A.
        @Test func anImageArrivingDuringABusyMainThreadIsNotShownAfterReuse() async throws {
            defer { server.stop() }
            routeNumbered(1..<2)
            server.route("/never.png") { _ in .stall() }
            let placeholder = try ImageDecoders.Registry.shared.decode(pngData(200))
            for cancelFirst in [true, false] {
                let view = RecordingView(makeTargets())
                view.expected = 1
                let task = try #require(view.setImage(with: server.url("/1.png"), placeholder: placeholder))
                keepBusy(until: { task.isFinished }, extra: 0.1)
                #expect(try task.result?.get() != nil, "A's image arrived while the main thread was busy")
                if cancelFirst { view.cancelImageLoad() }
                view.expected = nil
                view.setImage(with: server.url("/never.png"), placeholder: placeholder)
                try await settle()
                #expect(view.shown.isEmpty, "A's image was shown after the view moved on to B")
                let last = try #require(view.contents.last)
                #expect(last.phase == .loading && last.showsActivityIndicator && last.image?.bitmap[0, 0].r == 200)
                #expect(view.imageURL == server.url("/never.png"))
                view.cancelImageLoad()
            }
        }

        // MARK: - Cancel after arrival, before delivery

        /// For each cancel call: the image has arrived, the main thread is busy, the cancel
        /// comes before the delivery runs; nothing is shown, called or announced, and the
        /// view's completion says cancelled.
        @Test func aCancelAfterTheImageArrivedDeliversNothing() async throws {
            defer { server.stop() }
            routeNumbered(1..<2)
            let url = server.url("/1.png")
            let action = ImageLoadAction("show") { _, _ in Issue.record("the action of a cancelled load ran") }
            let cancels: [(String, @MainActor (ImageTargetLoader, AnyObject) -> Void)] = [
                ("cancelLoading(url:target:action:)", { $0.cancelLoading(url: url, target: $1, action: action) }),
                ("cancelLoading(url:target:)", { $0.cancelLoading(url: url, target: $1) }),
                ("cancelLoading(url:)", { targets, _ in targets.cancelLoading(url: url) }),
                ("cancelLoading(target:action:)", { $0.cancelLoading(target: $1, action: action) }),
                ("cancelLoading(target:)", { $0.cancelLoading(target: $1) }),
            ]
            let announced = Locked(0)
            // Other suites' loads are announced meanwhile, to views of the same type: only
            // this test's views count, each kept alive to the end so no other object
            // takes its address.
            let ours = Locked<Set<ObjectIdentifier>>([])
            var kept: [RecordingView] = []
            let observer = NotificationCenter.default.addObserver(forName: ImageTargetLoader.didFinishNotification, object: nil, queue: nil) { note in
                guard let object = note.object as? AnyObject, ours.withLock({ $0.contains(ObjectIdentifier(object)) }) else { return }
                announced.withLock { $0 += 1 }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            for (name, cancel) in cancels {
                // A fresh memory tier each time: the image must come from the server.
                let targets = makeTargets()
                let target = RecordingView(targets)
                kept.append(target)
                ours.withLock { _ = $0.insert(ObjectIdentifier(target)) }
                let task = targets.loadImage(with: url, target: target, action: action)
                keepBusy(until: { task.isFinished }, extra: 0.1)
                cancel(targets, target)
                try await settle()
                #expect(targets.url(for: target, action: action) == nil, "\(name)")
                _ = target
            }
            // The view calls: `cancelImageLoad()`, and `cancelLoading(target:)` on a view.
            for name in ["cancelImageLoad()", "cancelLoading(target:) on a view"] {
                let targets = makeTargets()
                let view = RecordingView(targets)
                kept.append(view)
                ours.withLock { _ = $0.insert(ObjectIdentifier(view)) }
                var completions: [Result<ImageResponse, ImagoError>] = []
                let task = try #require(view.setImage(with: url) { completions.append($0) })
                keepBusy(until: { task.isFinished }, extra: 0.1)
                if name == "cancelImageLoad()" { view.cancelImageLoad() } else { targets.cancelLoading(target: view) }
                try await settle()
                #expect(view.shown.isEmpty && view.contents.map(\.phase) == [.loading], "\(name)")
                #expect(completions.count == 1 && completions.first?.error == .cancelled, "\(name): \(completions)")
            }
            #expect(announced.withLock { $0 } == 0, "a cancelled load was announced")
            _ = kept
        }

        // MARK: - Storms

        /// 50 views, 10,000 calls mixing `setImage(with:)`, `imageURL` and cancels, the
        /// server answering after random delays, and one main-loop turn in twenty blocked
        /// for 5–15 ms: every delivery is checked as it happens. After `setImage(with:)`
        /// only its image may come; `imageURL` queues its image behind those still
        /// allowed, and images never go back in the order set; each view ends on its
        /// last URL's image.
        @Test func aReuseStormWithABusyMainThreadNeverShowsAStaleImage() async throws {
            defer { server.stop() }
            routeNumbered(0..<300, delay: 0.015)
            // A small memory tier, so that most calls go to the server.
            let targets = makeTargets(cache: ImageCache(countLimit: 20, memoryPressure: nil))
            let views = (0..<50).map { _ in RecordingView(targets) }
            var last: [Int?] = Array(repeating: nil, count: views.count)
            var blocked = 0
            for call in 0..<10_000 {
                let v = Int.random(in: 0..<views.count), n = Int.random(in: 0..<300)
                let view = views[v]
                switch Int.random(in: 0..<10) {
                case 0:
                    view.expected = nil
                    view.cancelImageLoad()
                case 1...5:
                    view.expected = n
                    last[v] = n
                    view.setImage(with: server.url("/\(n).png"))
                default:
                    view.allowed.append(n)
                    last[v] = n
                    view.imageURL = server.url("/\(n).png")
                }
                if Int.random(in: 0..<20) == 0 {
                    usleep(UInt32.random(in: 5_000...15_000))
                    blocked += 1
                }
                if call % 10 == 0 { await Task.yield() }
                if call % 200 == 0 { try await Task.sleep(for: .milliseconds(2)) }
            }
            // Every view ends on its last URL: set it once more where a cancel came last.
            for (v, view) in views.enumerated() where view.allowed.isEmpty {
                let n = last[v] ?? 0
                view.expected = n
                last[v] = n
                view.setImage(with: server.url("/\(n).png"))
            }
            await waitUntil { views.indices.allSatisfy { views[$0].shown.last == last[$0] } }
            let wrong = views.flatMap(\.wrong)
            let deliveries = views.reduce(0) { $0 + $1.shown.count }
            print("view storm: 10,000 calls on 50 views, \(blocked) main-loop turns blocked 5–15 ms, \(deliveries) deliveries, \(wrong.count) wrong, \(server.allRequests.count) requests")
            #expect(wrong.isEmpty, "\(wrong.prefix(5))")
            for (v, view) in views.enumerated() {
                #expect(view.imageURL == server.url("/\(last[v] ?? -1).png"))
            }
        }

        /// The same storm through the target/action calls: each target's handler gets
        /// images of its loads still pending, never one older than an image it already
        /// got, and ends on the image of the URL last set for its action.
        @Test func aTargetActionStormWithABusyMainThreadNeverCallsAStaleHandler() async throws {
            defer { server.stop() }
            routeNumbered(0..<300, delay: 0.015)
            let targets = makeTargets(cache: ImageCache(countLimit: 20, memoryPressure: nil))
            final class Cell {}
            /// What each cell may be given (its pending loads, oldest first), and what it was given.
            @MainActor final class Ledger {
                var allowed: [ObjectIdentifier: [Int]] = [:]
                var delivered: [ObjectIdentifier: Int] = [:]
                var wrong: [String] = []
                var deliveries = 0
            }
            let cells = (0..<50).map { _ in Cell() }
            let ledger = Ledger()
            let action = ImageLoadAction("show") { target, response in
                let id = ObjectIdentifier(target), n = NumberedImage.number(of: response.image)
                ledger.deliveries += 1
                ledger.delivered[id] = n
                if let place = ledger.allowed[id]?.firstIndex(of: n) {
                    ledger.allowed[id]?.removeFirst(place)
                } else {
                    ledger.wrong.append("showed \(n) while \(ledger.allowed[id] ?? []) could come")
                }
            }
            var last: [ObjectIdentifier: Int] = [:]
            for call in 0..<10_000 {
                let cell = cells.randomElement()!, id = ObjectIdentifier(cell), n = Int.random(in: 0..<300)
                let url = server.url("/\(n).png")
                switch Int.random(in: 0..<10) {
                case 0:
                    ledger.allowed[id] = nil
                    targets.cancelLoading(target: cell, action: action)
                case 1:
                    // Cancels exactly the loads of that URL.
                    ledger.allowed[id]?.removeAll { $0 == n }
                    targets.cancelLoading(url: url, target: cell)
                default:
                    ledger.allowed[id, default: []].append(n)
                    last[id] = n
                    targets.loadImage(with: url, target: cell, action: action)
                }
                if Int.random(in: 0..<20) == 0 { usleep(UInt32.random(in: 5_000...15_000)) }
                if call % 10 == 0 { await Task.yield() }
                if call % 200 == 0 { try await Task.sleep(for: .milliseconds(2)) }
            }
            for cell in cells where ledger.allowed[ObjectIdentifier(cell)]?.contains(last[ObjectIdentifier(cell)] ?? -1) != true {
                let id = ObjectIdentifier(cell), n = last[id] ?? 0
                ledger.allowed[id, default: []].append(n)
                last[id] = n
                targets.loadImage(with: server.url("/\(n).png"), target: cell, action: action)
            }
            await waitUntil { cells.allSatisfy { ledger.delivered[ObjectIdentifier($0)] == last[ObjectIdentifier($0)] } }
            print("target/action storm: 10,000 calls on 50 targets, \(ledger.deliveries) deliveries, \(ledger.wrong.count) wrong")
            #expect(ledger.wrong.isEmpty, "\(ledger.wrong.prefix(5))")
        }

        // MARK: - The loading view's path, placeholders, crossfades

        /// `imageURL` is `setImage(with:)` with the view's own options: the spinner while
        /// loading (or none, if the view says so), the view's crossfade; a call's own
        /// crossfade wins over the view's.
        @Test func imageURLShowsTheSpinnerAndTheViewsOwnCrossfade() async throws {
            defer { server.stop() }
            routeNumbered(1..<4)
            let view = RecordingView(makeTargets())
            view.options = ImageDisplayOptions(crossfadeDuration: 0.7)
            view.expected = 1
            view.imageURL = server.url("/1.png")
            #expect(view.contents.last?.phase == .loading && view.contents.last?.showsActivityIndicator == true)
            await waitUntil { view.shown == [1] }
            #expect(view.contents.last?.transition == .crossfade(seconds: 0.7))

            view.options.showsActivityIndicator = false
            view.expected = 2
            view.imageURL = server.url("/2.png")
            #expect(view.contents.last?.phase == .loading && view.contents.last?.showsActivityIndicator == false)
            await waitUntil { view.shown == [1, 2] }

            view.expected = 3
            view.setImage(with: server.url("/3.png"), options: ImageDisplayOptions(crossfadeDuration: 0.1))
            #expect(view.contents.last?.showsActivityIndicator == true)
            await waitUntil { view.shown == [1, 2, 3] }
            #expect(view.contents.last?.transition == .crossfade(seconds: 0.1))

            // A loading view's state fades over what the content says, not its own default.
            let state = ImageLoadingState(now: { 0 })
            state.crossfadeDuration = 0.4
            state.apply(ImageDisplayContent(phase: .loading, image: view.firstImage, showsActivityIndicator: true, transition: .none))
            state.apply(try #require(view.contents.last))
            #expect(state.isCrossfading && state.crossfadeProgress == 0)
        }

        /// Without a placeholder, the image the view showed at its first load stands in at
        /// every later load, as the original `setImageWithURL:` kept it; an explicit
        /// placeholder wins.
        @Test func theViewsFirstImageIsItsPlaceholder() async throws {
            defer { server.stop() }
            routeNumbered(1..<3)
            server.route("/never.png") { _ in .stall() }
            let first = try ImageDecoders.Registry.shared.decode(pngData(77))
            let view = RecordingView(makeTargets(), firstImage: first)
            view.expected = 1
            view.setImage(with: server.url("/1.png"))
            #expect(view.contents.last?.image?.bitmap[0, 0].r == 77)
            await waitUntil { view.shown == [1] }
            // The view now shows image 1, but its placeholder stays the first image.
            view.firstImage = nil
            view.expected = 2
            view.setImage(with: server.url("/2.png"))
            #expect(view.contents.last?.phase == .loading && view.contents.last?.image?.bitmap[0, 0].r == 77)
            await waitUntil { view.shown == [1, 2] }
            let own = try ImageDecoders.Registry.shared.decode(pngData(88))
            view.expected = nil
            view.setImage(with: server.url("/never.png"), placeholder: own)
            #expect(view.contents.last?.image?.bitmap[0, 0].r == 88)
            view.setImage(with: nil)
            #expect(view.contents.last?.phase == .empty && view.contents.last?.image?.bitmap[0, 0].r == 77)
            #expect(view.imageURL == nil)
        }

        // MARK: - Notifications

        /// Observers registered with `queue: .main`, as the README shows, and with
        /// `queue: nil` both hear of a load, on the main actor, without hanging.
        @Test func notificationsReachMainQueueAndNilQueueObservers() async throws {
            defer { server.stop() }
            routeNumbered(1..<2)
            let targets = makeTargets()
            let view = RecordingView(targets)
            let heard = Locked<[String]>([])
            let center = NotificationCenter.default
            let observers = [("main", OperationQueue.main), ("nil", nil)].map { name, queue in
                center.addObserver(forName: ImageTargetLoader.didFinishNotification, object: view, queue: queue) { note in
                    let url = note.userInfo?[ImageTargetLoader.UserInfoKey.url] as? URL
                    heard.withLock { $0.append("\(name) \(url?.lastPathComponent ?? "?")") }
                }
            }
            defer { observers.forEach(center.removeObserver) }
            view.expected = 1
            targets.loadImage(with: server.url("/1.png"), target: view, success: { _, _ in }, failure: { _, _ in })
            await waitUntil("heard: \(heard.withLock { $0 })", seconds: 30) { heard.withLock { $0.count } == 2 }
            #expect(Set(heard.withLock { $0 }) == ["main 1.png", "nil 1.png"])
        }
    }
}
