import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// Previews on views: a view asking for them shows the placeholder, then previews in
/// its place, then the final image; a view reused for another URL never shows a
/// preview of the one before. The real test server and loader, a recording view.
extension MainThreadSuites {
    @MainActor @Suite struct ProgressivePreviewViewTests {
        let server = TestServer()
        let loader = ImageLoader(configuration: .init(retryPolicy: .none), cache: ImageCache())
        let targets: ImageTargetLoader
        let placeholder = try! ImageDecoders.Registry.shared.decode(pngData(1))

        init() throws {
            try server.start()
            targets = ImageTargetLoader(loader: loader)
            let jpeg = TestImages.progressiveJPEG
            server.route("/progressive.jpg") { _ in
                .pieces(jpeg, ends: TestImages.scanBoundaries(jpeg), pause: 0.15)
            }
            server.route("/other.png", data: pngData(9, width: 100, height: 50))
        }

        @Test func placeholderThenPreviewsThenTheFinalImage() async throws {
            defer { server.stop() }
            let view = RecordingView(targets)
            let options = ImageDisplayOptions(crossfadeDuration: 0, showsProgressivePreviews: true)
            let result = await withCheckedContinuation { continuation in
                view.setImage(with: server.url("/progressive.jpg"), placeholder: placeholder, options: options) {
                    continuation.resume(returning: $0)
                }
            }
            let final = try result.get().image
            let phases = view.contents.map(\.phase)
            print("the view showed \(phases.count - 2) previews between the placeholder and the image")
            // The placeholder, previews (loading, with an image that is not the
            // placeholder), then the final image, and nothing after it. At least one
            // preview: on a loaded machine a preview decode may still run when the
            // next scan arrives, and the newest one is made instead.
            try #require(phases.count >= 3)
            #expect(phases.first == .loading && view.contents[0].image?.width == placeholder.width)
            #expect(phases.last == .success && view.contents.last?.image?.isPartial == false)
            for content in view.contents.dropFirst().dropLast() {
                #expect(content.phase == .loading && content.image?.isPartial == true && content.image?.width == final.width)
            }
        }

        /// Each preview replaces the one before at once; the final image fades in over
        /// the last preview, as views crossfade from a preview to the image.
        @Test func theFinalImageFadesInOverThePreviews() async throws {
            defer { server.stop() }
            let view = RecordingView(targets)
            let options = ImageDisplayOptions(crossfadeDuration: 0.3, showsProgressivePreviews: true)
            _ = await withCheckedContinuation { continuation in
                view.setImage(with: server.url("/progressive.jpg"), placeholder: placeholder, options: options) {
                    continuation.resume(returning: $0)
                }
            }
            try #require(view.contents.count >= 3 && view.contents[1].image?.isPartial == true)
            #expect(view.contents.dropLast().allSatisfy { $0.transition == .none })
            #expect(view.contents.last?.phase == .success && view.contents.last?.transition == .crossfade(seconds: 0.3))
        }

        @Test func previewsAreOffUnlessAskedFor() async throws {
            defer { server.stop() }
            let view = RecordingView(targets)
            _ = await withCheckedContinuation { continuation in
                view.setImage(with: server.url("/progressive.jpg"), placeholder: placeholder) { continuation.resume(returning: $0) }
            }
            #expect(view.contents.map(\.phase) == [.loading, .success])
        }

        /// The view moves on while its first URL is still sharpening, and that image's
        /// transfer goes on for another task: none of its previews reach the view.
        @Test func aReusedViewNeverShowsAPreviewOfItsPreviousURL() async throws {
            defer { server.stop() }
            let view = RecordingView(targets)
            let options = ImageDisplayOptions(crossfadeDuration: 0, showsProgressivePreviews: true)
            let other = loader.task(with: ImageRequest(url: server.url("/progressive.jpg"), options: .progressivePreviews))
            view.setImage(with: server.url("/progressive.jpg"), placeholder: placeholder, options: options)
            await waitUntil { view.contents.count >= 2 }
            let switched = view.contents.count
            let result = await withCheckedContinuation { continuation in
                view.setImage(with: server.url("/other.png"), placeholder: placeholder, options: options) {
                    continuation.resume(returning: $0)
                }
            }
            #expect((try? result.get())?.image.width == 100)
            // The first image's transfer runs to its end for the other task.
            _ = await withTimeLimit(60) { await other.value }
            try? await Task.sleep(for: .milliseconds(200))
            for content in view.contents[switched...] {
                #expect(content.image?.width != 320, "a preview of the previous URL was shown")
            }
            #expect(view.contents.last?.image?.width == 100 && view.contents.last?.phase == .success)
        }
    }
}
