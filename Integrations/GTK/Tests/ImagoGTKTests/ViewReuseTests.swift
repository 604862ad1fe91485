import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Testing

/// A recycled GTK view when the main loop is busy as an earlier image lands: in a
/// real window, checked by its pixels and by every content it is given.
@MainActor @Suite(.display, .gtkWindows) struct ViewReuseTests {
    /// A's image arrives while the main loop is held up (no GLib iteration runs);
    /// then the view is cancelled, or not, and given B, which never answers. The view
    /// must show the placeholder with the spinner, never A: on screen and in every
    /// content it was given.
    @Test func anImageLandingWhileTheMainLoopIsBusyIsNeverShownAfterReuse() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let red = Pixels.solid(width: 48, height: 48, 220, 20, 20)
        server.route("/a.png", data: try Pixels.png(red), headers: ["Content-Type": "image/png"])
        server.route("/b.png") { _ in .stall() }
        let grey = Pixels.solid(width: 48, height: 48, 128, 128, 128)
        let placeholder = DecodedImage(bitmap: grey, format: .png)

        for (round, cancelFirst) in [true, false].enumerated() {
            let view = ImageView(targetLoader: GTK.targetLoader(), width: 48, height: 48)
            let window = await GTK.window(width: 48, height: 48, child: view.widget)
            defer { window.close() }
            var reds = 0
            view.didDisplay = { content in
                if let image = content.image, image.bitmap[24, 24].r == 220 { reds += 1 }
            }
            let task = try #require(view.setImage(with: server.url("/a.png?round=\(round)"), placeholder: placeholder))
            // The main loop is busy (a layout pass, a grid binding cells) while A
            // arrives and its delivery waits for the main actor.
            keepBusy(until: { task.isFinished }, extra: 0.15)
            #expect((try? task.result?.get()) != nil, "A's image arrived while the loop was busy")
            if cancelFirst { view.cancelImageLoad() }
            view.setImage(with: server.url("/b.png"), placeholder: placeholder)
            await GTK.run(for: 0.6)
            #expect(reds == 0, "A's image was given to the view after it moved on to B")
            #expect(view.loadingState.isActivityIndicatorVisible, "B is loading: the spinner shows")
            let shown = try await GTK.capture(view.widget)
            #expect(shown[2, 2].r == 128, "the placeholder, not A, around the spinner")
            #expect(shown[45, 45].r == 128)
            #expect(view.imageURL == server.url("/b.png"))
            view.cancelImageLoad()
        }
    }

    /// Setting `imageURL` on an empty view shows the spinner, as `setImage(with:)`
    /// does, over the view's first image, which stands in as its placeholder; a
    /// cancel stops the spinner.
    @Test func imageURLShowsTheSpinnerOverTheViewsFirstImage() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/slow.png") { _ in .stall() }
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 48, height: 48)
        let window = await GTK.window(width: 48, height: 48, child: view.widget)
        defer { window.close() }
        let green = Pixels.solid(width: 48, height: 48, 20, 200, 20)
        view.image = DecodedImage(bitmap: green, format: .png)
        view.imageURL = server.url("/slow.png")
        #expect(view.loadingState.isActivityIndicatorVisible, "imageURL shows the spinner")
        await GTK.run(for: 0.3)
        let shown = try await GTK.capture(view.widget)
        #expect(shown[2, 2].g == 200, "the view's first image stays while its URL loads")
        // A cancel ends the loading: no spinner left turning, the picture as it was.
        view.cancelImageLoad()
        #expect(!view.loadingState.isActivityIndicatorVisible, "a cancel stops the spinner")
        await GTK.run(for: 0.1)
        #expect(try await GTK.capture(view.widget)[24, 24].g == 200)
        view.imageURL = server.url("/slow.png")
        view.imageURL = nil
        #expect(!view.loadingState.isActivityIndicatorVisible)
    }
}
