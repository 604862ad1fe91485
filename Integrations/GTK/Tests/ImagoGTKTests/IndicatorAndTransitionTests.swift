import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Testing

/// The GTK view's loading indicators (a progress bar filling as the bytes arrive, or
/// the caller's own) and a transition of the caller's own, in real windows against a
/// real server that sends its bytes slowly.
@MainActor @Suite(.display, .gtkWindows) struct IndicatorAndTransitionTests {
    /// An indicator that writes down what it is told.
    final class RecordingIndicator: ImageLoadingIndicatorView {
        var shown: [Double?] = []
        var hidden = 0
        func showLoading(progress: Double?) { shown.append(progress) }
        func hideLoading() { hidden += 1 }
    }

    /// A 96×48 grey placeholder, and a server sending a noisy PNG (too big to come in
    /// one piece) 2,000 bytes every 20 ms, with its length.
    private static func slowPicture() throws -> (server: TestServer, placeholder: DecodedImage, png: Data) {
        var pixels = [UInt8](repeating: 255, count: 96 * 48 * 4)
        var noise: UInt32 = 7
        for i in stride(from: 0, to: pixels.count, by: 4) {
            noise = noise &* 1_664_525 &+ 1_013_904_223
            pixels[i] = UInt8(truncatingIfNeeded: noise >> 24)
            pixels[i + 1] = UInt8(truncatingIfNeeded: noise >> 16)
            pixels[i + 2] = 40
        }
        let png = try Pixels.png(Bitmap(width: 96, height: 48, pixels: pixels))
        let server = TestServer()
        try server.start()
        server.route("/slow.png") { _ in
            .trickle(png, bytesPerChunk: 2_000, interval: 0.02, headers: ["Content-Type": "image/png"])
        }
        let placeholder = DecodedImage(bitmap: Pixels.solid(width: 96, height: 48, 128, 128, 128), format: .png)
        return (server, placeholder, png)
    }

    @Test func aDeterminateIndicatorFillsAsTheBytesArrive() async throws {
        let (server, placeholder, png) = try Self.slowPicture()
        defer { server.stop() }
        #expect(png.count > 10_000, "the picture comes in several pieces")
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 96, height: 48)
        view.loadingState.indicator = .progress
        let window = await GTK.window(width: 96, height: 48, child: view.widget)
        defer { window.close() }
        var fractions: [Double] = []
        view.didDisplay = { content in
            if content.phase == .loading, let progress = content.progress { fractions.append(progress) }
        }
        var finished = false
        view.setImage(with: server.url("/slow.png"), placeholder: placeholder) { _ in finished = true }
        await GTK.waitUntil { fractions.count >= 2 }
        let partWay = try await GTK.capture(view.widget)
        // A bar, not a spinner: the pixels that differ from the placeholder run across
        // most of the width, in a band of a few rows.
        var columns = Set<Int>(), rows = Set<Int>()
        for y in 0..<48 {
            for x in 0..<96 where partWay[x, y] != placeholder.bitmap[x, y] {
                columns.insert(x)
                rows.insert(y)
            }
        }
        #expect(columns.count >= 56, "the progress bar spans two thirds of the view (\(columns.count) columns)")
        #expect(rows.count <= 16, "a bar, a few rows high (\(rows.count) rows)")
        await GTK.waitUntil { finished }
        #expect(fractions == fractions.sorted(), "the bar only fills: \(fractions)")
        #expect(fractions.allSatisfy { $0 >= 0 && $0 <= 1 }, "fractions of the whole: \(fractions)")
        #expect(!view.loadingState.isActivityIndicatorVisible, "no indicator once the image is shown")
    }

    @Test func theCallersIndicatorIsToldTheProgressAndTheEnd() async throws {
        let (server, placeholder, _) = try Self.slowPicture()
        defer { server.stop() }
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 96, height: 48)
        view.loadingState.indicator = .custom
        let indicator = RecordingIndicator()
        let label = gtk_label_new("Loading")!
        view.setCustomIndicator(indicator, widget: label)
        let window = await GTK.window(width: 96, height: 48, child: view.widget)
        defer { window.close() }
        var finished = false
        view.setImage(with: server.url("/slow.png"), placeholder: placeholder) { _ in finished = true }
        #expect(gtk_widget_get_visible(label) != 0, "the caller's widget shows while loading")
        await GTK.waitUntil { indicator.shown.compactMap { $0 }.count >= 2 }
        let loading = try await GTK.capture(view.widget)
        var changed = 0
        for y in 0..<48 { for x in 0..<96 where loading[x, y] != placeholder.bitmap[x, y] { changed += 1 } }
        #expect(changed > 20, "the label is drawn over the placeholder")
        await GTK.waitUntil { finished }
        let fractions = indicator.shown.compactMap { $0 }
        #expect(fractions == fractions.sorted(), "told the progress as it grows: \(fractions)")
        #expect(indicator.hidden >= 1, "told that loading ended")
        #expect(gtk_widget_get_visible(label) == 0, "the caller's widget hides with the image")
        // Set apart from the view, nothing is told any more.
        view.setCustomIndicator(nil)
        #expect(view.customIndicator == nil)
    }

    @Test func aCustomTransitionPutsTheImageUpWhenItCommits() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let red = Pixels.solid(width: 32, height: 32, 220, 20, 20)
        server.route("/red.png", data: try Pixels.png(red), headers: ["Content-Type": "image/png"])
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 32, height: 32)
        let window = await GTK.window(width: 32, height: 32, child: view.widget)
        defer { window.close() }
        var commit: (@MainActor () -> Void)?
        var animatedView: AnyObject?
        let transition = ImageTransition.custom(.init(name: "held", duration: 0.2) { view, put in
            animatedView = view
            commit = put
        })
        var options = view.imageDisplayOptions
        options.transition = transition
        let grey = DecodedImage(bitmap: Pixels.solid(width: 32, height: 32, 128, 128, 128), format: .png)
        var finished = false
        view.setImage(with: server.url("/red.png"), placeholder: grey, options: options) { _ in finished = true }
        await GTK.waitUntil { finished && commit != nil }
        #expect((animatedView as? ImageView)?.widget == view.widget, "the transition is handed the view")
        await GTK.run(for: 0.05)
        #expect(try await GTK.capture(view.widget)[16, 16].r == 128, "nothing changes before the transition commits")
        commit?()
        await GTK.run(for: 0.05)
        #expect(try await GTK.capture(view.widget)[16, 16].r == 220, "the image is up once it commits")

        // A commit that comes after the view was given something newer puts nothing up.
        commit = nil
        let blue = Pixels.solid(width: 32, height: 32, 20, 20, 220)
        server.route("/blue.png", data: try Pixels.png(blue), headers: ["Content-Type": "image/png"])
        finished = false
        view.setImage(with: server.url("/blue.png"), placeholder: grey, options: options) { _ in finished = true }
        await GTK.waitUntil { finished && commit != nil }
        view.image = grey
        commit?()
        await GTK.run(for: 0.05)
        #expect(try await GTK.capture(view.widget)[16, 16].r == 128, "a late commit does not bring the stale image back")
    }
}
