import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// `ImageLoadModel`, the load state a view of one's own shows, against the real
/// server: its phases in order, its callbacks, and the binding rule.
extension MainThreadSuites {
    @MainActor @Suite struct ImageLoadModelTests {
        let server = TestServer()

        init() throws {
            try server.start()
        }

        func makeModel() -> ImageLoadModel {
            let loader = ImageLoader(
                configuration: .init(retryPolicy: .none, diskCache: nil, recentOriginals: nil, recentFailures: nil),
                cache: ImageCache(memoryPressure: nil))
            return ImageLoadModel(loader: ImageTargetLoader(loader: loader))
        }

        /// Empty, loading with the bytes as they arrive, then the image; each
        /// callback told once.
        @Test func phasesGoFromLoadingThroughProgressToTheImage() async throws {
            defer { server.stop() }
            let body = NumberedImage.png(7) + Data(count: 0)
            server.route("/slow.png") { _ in .trickle(body, bytesPerChunk: 8, interval: 0.02) }
            let model = makeModel()
            var phases: [String] = []
            var progress: [Int64] = []
            var successes = 0
            model.onChange = { phase in
                switch phase {
                case .empty: phases.append("empty")
                case .loading: if phases.last != "loading" { phases.append("loading") }
                case .success: phases.append("success")
                case .failure: phases.append("failure")
                }
            }
            model.onProgress = { progress.append($0.received) }
            model.onSuccess = { _ in successes += 1 }
            model.load(server.url("/slow.png"))
            await waitUntil { successes == 1 }
            #expect(phases == ["loading", "success"])
            #expect(!progress.isEmpty && progress == progress.sorted(), "\(progress)")
            guard case .success(let response) = model.phase else { Issue.record("\(model.phase)"); return }
            #expect(NumberedImage.number(of: response.image) == 7 && response.source == .network)
            model.load(nil)
            guard case .empty = model.phase else { Issue.record("\(model.phase)"); return }
        }

        /// A load that fails ends in the failure phase and tells `onFailure`.
        @Test func aFailureEndsInTheFailurePhase() async throws {
            defer { server.stop() }
            server.route("/missing.png") { _ in .text("gone", status: 404) }
            let model = makeModel()
            var failures: [ImagoError] = []
            model.onFailure = { failures.append($0) }
            model.load(server.url("/missing.png"))
            await waitUntil { failures.count == 1 }
            guard case .failure(.httpStatus(404, _)) = model.phase else { Issue.record("\(model.phase)"); return }
        }

        /// A new URL replaces the load before: the first image, arriving later, never
        /// reaches the model; a cancel keeps the phase it had.
        @Test func aNewURLOvertakesTheLoadBefore() async throws {
            defer { server.stop() }
            let first = NumberedImage.png(1), second = NumberedImage.png(2)
            server.route("/first.png") { _ in
                usleep(300_000)
                return .ok(first)
            }
            server.route("/second.png") { _ in .ok(second) }
            let model = makeModel()
            var shown: [Int] = []
            model.onSuccess = { shown.append(NumberedImage.number(of: $0.image)) }
            model.load(server.url("/first.png"))
            model.load(server.url("/second.png"))
            await waitUntil { shown == [2] }
            try await Task.sleep(for: .milliseconds(500))
            #expect(shown == [2])
            model.load(server.url("/first.png"))
            model.cancel()
            try await Task.sleep(for: .milliseconds(500))
            #expect(shown == [2])
            guard case .loading = model.phase else { Issue.record("\(model.phase)"); return }
        }

        /// A view that decodes to its own laid-out size reports every layout pass:
        /// a smaller box loads nothing, a larger one loads a sharper image while the
        /// phase stays the image shown (no loading phase between), and the sharper
        /// image then replaces it.
        @Test func aLargerBoxSharpensTheImageShownWithoutALoadingPhase() async throws {
            defer { server.stop() }
            let body = pngData(90, width: 400, height: 400)
            let gate = Locked(false)
            server.route("/photo.png") { _ in
                // The second request waits until the test has looked at the phase.
                if server.count(for: "/photo.png") > 1 { while !gate.withLock({ $0 }) { usleep(5_000) } }
                return .ok(body, headers: ["Content-Type": "image/png"])
            }
            let model = makeModel()
            var phases: [String] = []
            var successes: [ImageResponse] = []
            model.onChange = { phase in
                switch phase {
                case .empty: phases.append("empty")
                case .loading: if phases.last != "loading" { phases.append("loading") }
                case .success: phases.append("success")
                case .failure: phases.append("failure")
                }
            }
            model.onSuccess = { successes.append($0) }
            let url = server.url("/photo.png")
            model.load(url, fitting: TargetSize(width: 100, height: 100))
            await waitUntil { successes.count == 1 }
            #expect(successes[0].image.bitmap.width == 100)

            // Smaller, then the same: nothing loads.
            model.load(url, fitting: TargetSize(width: 50, height: 50))
            model.load(url, fitting: TargetSize(width: 100, height: 100))
            #expect(server.count(for: "/photo.png") == 1)

            // Larger: a second load, the first image standing meanwhile.
            model.load(url, fitting: TargetSize(width: 200, height: 200))
            await waitUntil { server.count(for: "/photo.png") == 2 }
            guard case .success(let standing) = model.phase else { Issue.record("\(model.phase)"); return }
            #expect(standing.image.bitmap.width == 100)
            gate.withLock { $0 = true }
            await waitUntil { successes.count == 2 }
            #expect(successes[1].image.bitmap.width == 200)
            #expect(phases == ["loading", "success", "success"], "\(phases)")
        }
    }
}
