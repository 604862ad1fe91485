import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// What a view shows around its loads, against the real server: the indicators
/// (activity, a determinate one filling as the bytes arrive, the caller's own), the
/// transitions (a custom one, none under reduced motion), the images of a button by
/// state each on a binding of its own, and the priority of a load that follows its
/// view on and off screen.
extension MainThreadSuites {
    @MainActor @Suite struct ViewLoadingFeaturesTests {
        let server = TestServer()

        init() throws {
            try server.start()
        }

        func makeTargets() -> ImageTargetLoader {
            let loader = ImageLoader(
                configuration: .init(retryPolicy: .none, diskCache: nil, recentOriginals: nil, recentFailures: nil),
                cache: ImageCache(memoryPressure: nil))
            return ImageTargetLoader(loader: loader)
        }

        /// A determinate indicator hears the share of the bytes as they arrive, in
        /// order, between the placeholder and the image; the loading state a view
        /// renders follows, and nothing moves it after the image.
        @Test func aProgressIndicatorFillsAsTheBytesArrive() async throws {
            defer { server.stop() }
            let body = pngData(90, width: 300, height: 300)
            server.route("/slow.png") { _ in .trickle(body, bytesPerChunk: max(1, body.count / 8), interval: 0.03) }
            let view = RecordingView(makeTargets())
            view.options = ImageDisplayOptions(transition: .none, indicator: .progress)
            view.setImage(with: server.url("/slow.png"), options: view.options)
            await waitUntil { view.contents.last?.phase == .success }
            let loading = view.contents.dropLast()
            #expect(loading.allSatisfy { $0.phase == .loading && $0.indicator == .progress })
            let fractions = loading.compactMap(\.progress)
            #expect(fractions.count >= 3, "\(fractions)")
            #expect(fractions == fractions.sorted() && fractions.last == 1 && fractions.allSatisfy { $0 >= 0 && $0 <= 1 })
            #expect(view.state.visibleIndicator == .none && view.state.progress == nil)
            try await Task.sleep(for: .milliseconds(200))
            #expect(view.contents.last?.phase == .success, "progress shown after the image")
        }

        /// A load overtaken by the view's next one moves its indicator no more.
        @Test func anOvertakenLoadMovesNoIndicator() async throws {
            defer { server.stop() }
            let body = pngData(90, width: 300, height: 300)
            server.route("/slow.png") { _ in .trickle(body, bytesPerChunk: max(1, body.count / 20), interval: 0.03) }
            server.route("/stall.png") { _ in .stall() }
            let view = RecordingView(makeTargets())
            let options = ImageDisplayOptions(transition: .none, indicator: .progress)
            view.setImage(with: server.url("/slow.png"), options: options)
            await waitUntil { view.contents.contains { ($0.progress ?? 0) > 0 } }
            view.setImage(with: server.url("/stall.png"), options: options)
            let count = view.contents.count
            try await Task.sleep(for: .milliseconds(600))
            // The stalled load's own progress (none of its body yet) may come; none of
            // the overtaken one's, which was past its first bytes.
            let later = view.contents[count...]
            #expect(later.allSatisfy { ($0.progress ?? 0) == 0 }, "the overtaken load still moved the indicator: \(later.map(\.progress))")
            view.cancelImageLoad()
        }

        /// The caller's own indicator is told to show with the progress, then to hide.
        @Test func aCustomIndicatorIsToldOfTheLoad() {
            final class Indicator: ImageLoadingIndicatorView {
                var log: [String] = []
                func showLoading(progress: Double?) { log.append("show \(progress.map { "\($0)" } ?? "-")") }
                func hideLoading() { log.append("hide") }
            }
            let state = ImageLoadingState { 0 }
            state.indicator = .custom
            let indicator = Indicator()
            state.apply(ImageDisplayContent(phase: .loading, image: nil, indicator: .custom))
            state.render(into: indicator)
            state.apply(ImageDisplayContent(phase: .loading, image: nil, indicator: .custom, progress: 0.5))
            state.render(into: indicator)
            state.apply(ImageDisplayContent(phase: .success, image: nil))
            state.render(into: indicator)
            #expect(indicator.log == ["show -", "show 0.5", "hide"])
            // The view's own setting off: no indicator, whatever the content asks.
            state.indicator = .none
            state.apply(ImageDisplayContent(phase: .loading, image: nil, indicator: .custom, progress: 0.2))
            #expect(state.visibleIndicator == .none && state.progress == nil)
        }

        /// A custom transition reaches the view with the image; a view under reduced
        /// motion gets none, whatever the options say; a memory hit none either.
        @Test func transitionsAreTheOptionsUnlessMotionIsReduced() async throws {
            defer { server.stop() }
            server.route("/a.png") { _ in .ok(pngData(10), headers: ["Content-Type": "image/png"]) }
            server.route("/b.png") { _ in .ok(pngData(20), headers: ["Content-Type": "image/png"]) }
            let flip = ImageTransition.Custom(name: "flip", duration: 0.3) { _, commit in commit() }
            let options = ImageDisplayOptions(transition: .custom(flip), indicator: .activity)
            let view = RecordingView(makeTargets())
            view.setImage(with: server.url("/a.png"), options: options)
            await waitUntil { view.contents.last?.phase == .success }
            #expect(view.contents.last?.transition == .custom(flip))
            view.setImage(with: server.url("/a.png"), options: options)
            #expect(view.contents.last?.phase == .success && view.contents.last?.transition == ImageTransition.none, "a memory hit")
            view.reducesMotion = true
            view.setImage(with: server.url("/b.png"), options: ImageDisplayOptions())
            await waitUntil { view.contents.last?.phase == .success && view.shade == 20 }
            #expect(view.contents.last?.transition == ImageTransition.none)
        }

        /// A button's images by state, each its own binding: a new URL for one state
        /// replaces only that state's load; every state ends on its own image; a
        /// cached image is set before the call returns; the button going away cancels
        /// the slots' loads, the transfers with them.
        @Test func aButtonsStatesLoadOnBindingsOfTheirOwn() async throws {
            defer { server.stop() }
            final class Button {
                var images: [String: Int] = [:]
            }
            for n in 1...4 {
                server.route("/\(n).png") { _ in
                    usleep(UInt32(n == 1 ? 300_000 : 0))
                    return .ok(NumberedImage.png(n), headers: ["Content-Type": "image/png"])
                }
            }
            server.route("/stall.png") { _ in .stall() }
            let targets = makeTargets()
            var button: Button? = Button()
            func set(_ n: Int, _ slot: String) {
                let path = n == 0 ? "/stall.png" : "/\(n).png"
                targets.setImage(with: server.url(path), on: button!, slot: slot, render: { [weak button] content in
                    if let image = content.image, content.phase == .success { button?.images[slot] = NumberedImage.number(of: image) }
                })
            }
            set(1, "image.normal")
            set(2, "image.highlighted")
            set(3, "image.normal")  // replaces 1, not 2
            set(4, "background.normal")
            await waitUntil { button?.images.count == 3 }
            try await Task.sleep(for: .milliseconds(500))
            #expect(button?.images == ["image.normal": 3, "image.highlighted": 2, "background.normal": 4])
            // From memory, before the call returns.
            set(2, "image.normal")
            #expect(button?.images["image.normal"] == 2)

            set(0, "image.selected")
            await waitUntil { server.count(for: "/stall.png") == 1 }
            button = nil
            let stalls = await server.waitForStalls(1)
            #expect(stalls.first?.closedByClient == true, "the gone button's transfer went on")
        }

        /// Off screen, a model's load goes on at the lowest priority; back on screen, at
        /// the priority it asked for; a new load off screen starts at the lowest.
        @Test func aLoadsPriorityFollowsItsViewOnAndOffScreen() async throws {
            defer { server.stop() }
            server.route("/stall.png") { _ in .stall() }
            server.route("/other.png") { _ in .stall() }
            let model = ImageLoadModel(loader: makeTargets())
            model.load(server.url("/stall.png"), options: ImageDisplayOptions(priority: .high))
            let task = try #require(model.current.task)
            #expect(task.priority == .high)
            model.isVisible = false
            #expect(task.priority == .veryLow)
            model.isVisible = true
            #expect(task.priority == .high)
            model.isVisible = false
            model.load(server.url("/other.png"), options: ImageDisplayOptions(priority: .high))
            #expect(model.current.task?.priority == .veryLow)
            model.isVisible = true
            #expect(model.current.task?.priority == .high)
            model.cancel()
        }
    }
}
