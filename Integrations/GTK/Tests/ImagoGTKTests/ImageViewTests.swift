import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Synchronization
import Testing

/// The GTK image view in real windows (under Xvfb in CI), loading from a real HTTP
/// server on 127.0.0.1, with the real codecs; what it shows is checked on captures of
/// the window's rendering, pixel by pixel.
@MainActor @Suite(.display, .gtkWindows) struct ImageViewTests {
    /// A 64×48 picture with features in every quadrant, so a shifted, scaled or
    /// flipped rendering cannot pass for it.
    private static func testPicture() -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: 64 * 48 * 4)
        for y in 0..<48 {
            for x in 0..<64 {
                let i = (y * 64 + x) * 4
                pixels[i] = UInt8(x * 4)
                pixels[i + 1] = UInt8(y * 5)
                pixels[i + 2] = (x / 8 + y / 8) % 2 == 0 ? 230 : 30
            }
        }
        return Bitmap(width: 64, height: 48, pixels: pixels)
    }

    @Test func placeholderThenSpinnerWhileStalledThenImageCrossfadingIn() async throws {
        let png = try Pixels.png(Self.testPicture())
        let expected = try ImageDecoders.Registry.shared.decode(png).bitmap
        let released = Mutex(false)
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        // Stalls until the test lets the reply go, as a slow network would.
        server.route("/picture.png") { _ in
            while !released.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
            return .ok(png, headers: ["Content-Type": "image/png"])
        }

        let placeholderBitmap = Pixels.solid(width: 64, height: 48, 128, 128, 128)
        let placeholder = DecodedImage(bitmap: placeholderBitmap, format: .png)
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 64, height: 48)
        let window = await GTK.window(width: 64, height: 48, child: view.widget)
        defer { window.close() }

        // No URL: the placeholder alone.
        view.setImage(with: nil, placeholder: placeholder)
        await GTK.run(for: 0.1)
        var started = monotonicSeconds()
        let first = try await GTK.capture(view.widget)
        print("capture of a 64×48 view: \(Int((monotonicSeconds() - started) * 1000)) ms")
        #expect(first.width == 64)
        #expect(first.height == 48)
        #expect(first.difference(to: placeholderBitmap).maximum <= 2, "the placeholder, exactly")

        // Loading while the server stalls: the placeholder with the spinner on it.
        var finished: Result<ImageResponse, ImagoError>?
        view.setImage(with: server.url("/picture.png"), placeholder: placeholder) { finished = $0 }
        #expect(view.loadingState.isActivityIndicatorVisible)
        await GTK.run(for: 0.3)
        let loading = try await GTK.capture(view.widget)
        #expect(loading[1, 1].r == 128, "the placeholder stays around the spinner")
        #expect(loading[62, 46].r == 128)
        var spinnerPixels = 0
        for y in 12..<36 {
            for x in 20..<44 where loading[x, y] != placeholderBitmap[x, y] { spinnerPixels += 1 }
        }
        #expect(spinnerPixels > 20, "the spinner is drawn in the middle")
        #expect(finished == nil, "the server is still stalling")

        // The reply arrives: the image fades in over the placeholder.
        released.withLock { $0 = true }
        await GTK.waitUntil { finished != nil }
        #expect((try? finished?.get()) != nil)
        started = monotonicSeconds()
        await GTK.run(for: 0.15)
        let midway = try await GTK.capture(view.widget)
        if monotonicSeconds() - started < 0.35 {
            // A pixel far from grey in the image is part way between the two.
            let p = midway[4, 4], image = expected[4, 4]
            #expect((Int(min(image.b, 128)) + 5..<Int(max(image.b, 128)) - 5).contains(Int(p.b)), "mid-crossfade, blue \(p.b) lies between the placeholder's 128 and the image's \(image.b)")
        }
        #expect(!view.loadingState.isActivityIndicatorVisible)

        await GTK.waitUntil { !view.loadingState.isCrossfading }
        await GTK.run(for: 0.05)
        let final = try await GTK.capture(view.widget)
        #expect(final.difference(to: expected).maximum <= 2, "after the 0.4 s crossfade the view shows the decoded image")
    }

    @Test func failureShowsTheFailureImage() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let failureBitmap = Pixels.solid(width: 32, height: 32, 200, 30, 30)
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 32, height: 32)
        let window = await GTK.window(width: 32, height: 32, child: view.widget)
        defer { window.close() }
        var failed = false
        view.setImage(
            with: server.url("/missing.png"),
            placeholder: DecodedImage(bitmap: Pixels.solid(width: 32, height: 32, 128, 128, 128), format: .png),
            options: ImageDisplayOptions(failureImage: DecodedImage(bitmap: failureBitmap, format: .png))
        ) { result in
            if case .failure = result { failed = true }
        }
        await GTK.waitUntil { failed }
        await GTK.run(for: 0.05)
        let shown = try await GTK.capture(view.widget)
        #expect(shown.difference(to: failureBitmap).maximum <= 2)
        #expect(!view.loadingState.isActivityIndicatorVisible)
    }

    @Test func fillCropsToTheViewAndAsksForItsSize() async throws {
        let view = ImageView(targetLoader: GTK.targetLoader(), contentMode: .aspectFill, width: 40, height: 40)
        let window = await GTK.window(width: 40, height: 40, child: view.widget)
        defer { window.close() }
        #expect(view.displayTargetSize == TargetSize(width: 40, height: 40, contentMode: .aspectFill))
        // A wide image filling a square shows its middle.
        var pixels = [UInt8](repeating: 255, count: 80 * 40 * 4)
        for y in 0..<40 {
            for x in 0..<80 {
                let i = (y * 80 + x) * 4
                let middle = (20..<60).contains(x)
                pixels[i] = middle ? 0 : 255
                pixels[i + 1] = middle ? 200 : 0
                pixels[i + 2] = 0
            }
        }
        let png = try Pixels.png(Bitmap(width: 80, height: 40, pixels: pixels))
        var loaded = false
        view.setImage(
            with: URL(string: "data:image/png;base64," + png.base64EncodedString()),
            options: ImageDisplayOptions(crossfadeDuration: 0)) { _ in loaded = true }
        await GTK.waitUntil { loaded }
        await GTK.run(for: 0.05)
        let shown = try await GTK.capture(view.widget)
        #expect(shown.difference(to: Pixels.solid(width: 40, height: 40, 0, 200, 0)).maximum <= 2)
    }

    /// A view with no size of its own, given its URL before its first layout, shows
    /// its image at the size it is given, and asks again when it grows.
    @Test func aViewWithoutASizeLoadsAtItsAllocatedSizeAndAgainWhenItGrows() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let photo = Pixels.solid(width: 1600, height: 1200, 40, 120, 200)
        server.route("/photo.png", data: try Pixels.png(photo), headers: ["Content-Type": "image/png"])
        let view = ImageView(targetLoader: GTK.targetLoader())
        #expect(view.displayTargetSize == nil, "no size before layout")
        view.setImage(with: server.url("/photo.png"), options: ImageDisplayOptions(crossfadeDuration: 0))
        let window = await GTK.window(width: 400, height: 300, child: view.widget)
        defer { window.close() }
        await GTK.waitUntil("decoded at the view's size, not 1600×1200: \(String(describing: view.loadingState.image))") {
            guard let image = view.loadingState.image else { return false }
            return image.width == 400 && image.height == 300
        }

        // Grown to 800×600: asked again, at the new size.
        gtk_widget_set_size_request(view.widget, 800, 600)
        await GTK.waitUntil("asked again at 800×600: \(String(describing: view.loadingState.image))") { view.loadingState.image?.width == 800 }
        #expect(view.loadingState.image?.height == 600)
        #expect(view.imageURL == server.url("/photo.png"))
    }

    /// A load whose options name its size keeps that size: reading the view's
    /// `displayTargetSize` changes nothing, so the view growing afterwards does not
    /// ask again at its own size.
    @Test func aLoadAtASizeOfItsOwnIsNotAskedForAgainWhenTheViewGrows() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let photo = Pixels.solid(width: 1600, height: 1200, 40, 120, 200)
        server.route("/photo.png", data: try Pixels.png(photo), headers: ["Content-Type": "image/png"])
        let view = ImageView(targetLoader: GTK.targetLoader())
        let window = await GTK.window(width: 400, height: 300, child: view.widget)
        defer { window.close() }
        var loaded = false
        let options = ImageDisplayOptions(targetSize: TargetSize(width: 200, height: 150), crossfadeDuration: 0)
        view.setImage(with: server.url("/photo.png"), options: options) { _ in loaded = true }
        await GTK.waitUntil { loaded }
        #expect(view.loadingState.image?.width == 200)
        #expect(view.displayTargetSize?.width == 400, "the view's own size, only read")

        gtk_widget_set_size_request(view.widget, 800, 600)
        await GTK.waitUntil("the view grew to 800 wide") { gtk_widget_get_width(view.widget) == 800 }
        // The look at the new size is queued once the layout is over.
        await GTK.run(for: 0.3)
        #expect(!view.loadingState.isLoading, "no load at the view's size")
        #expect(view.loadingState.image?.width == 200)
    }

    @Test func animatedGIFPlaysAtItsFrameDelaysAndStopsWhenUnmapped() async throws {
        let gif = try Fixture.sample("moon.gif")
        let decoded = try ImageDecoders.Registry.shared.decode(gif)
        let frames = decoded.frames
        #expect(frames.count > 2)
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/moon.gif", data: gif, headers: ["Content-Type": "image/gif"])

        let view = ImageView(targetLoader: GTK.targetLoader(), width: decoded.width, height: decoded.height)
        let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0)!
        gtk_box_append(box.cast(GtkBox.self), view.widget)
        let window = await GTK.window(width: Int32(decoded.width), height: Int32(decoded.height), child: box)
        defer { window.close() }
        var changes: [(frame: Int, time: Double)] = []
        view.didChangeFrame = { changes.append(($0, monotonicSeconds())) }
        var loaded = false
        view.setImage(with: server.url("/moon.gif"), options: ImageDisplayOptions(crossfadeDuration: 0)) { _ in loaded = true }
        await GTK.waitUntil { loaded }
        await GTK.waitUntil("the animation plays") { changes.count >= 8 }

        // Each frame stays on screen for its own delay, give or take a frame of the
        // clock (and a wide margin for a loaded machine).
        var errors: [Double] = []
        for (before, after) in zip(changes, changes.dropFirst()) where after.frame == (before.frame + 1) % frames.count {
            let delay = frames[before.frame].duration <= 0.01 ? 0.1 : frames[before.frame].duration
            errors.append(after.time - before.time - delay)
        }
        #expect(errors.count >= 5, "frames follow each other in order")
        let meanError = errors.reduce(0, +) / Double(max(1, errors.count))
        print(String(
            format: "GIF frame delays: %d frames, delays %@ s, mean error %+.1f ms, worst %+.1f ms", errors.count,
            Set(frames.map(\.duration)).sorted().map { String($0) }.joined(separator: "/"), meanError * 1000,
            (errors.max() ?? 0) * 1000))
        // No frame is cut short: each frame appears no earlier than the delays of
        // those before it allow, counted from the first. (A single gap can be short
        // after a late tick on a loaded machine, which is not the animation running
        // ahead.)
        var elapsedDelays = 0.0, earliest = 0.0
        for (before, after) in zip(changes, changes.dropFirst()) {
            guard after.frame == (before.frame + 1) % frames.count else { break }
            elapsedDelays += frames[before.frame].duration <= 0.01 ? 0.1 : frames[before.frame].duration
            earliest = min(earliest, (after.time - changes[0].time) - elapsedDelays)
        }
        #expect(earliest > -0.025, "no frame is cut short")
        #expect(meanError < 0.05, "frames keep to their delays on average")

        // A capture shows the frame the view says it shows.
        let shown = try await GTK.capture(view.widget)
        #expect(shown.difference(to: frames[view.frameIndex].bitmap).maximum <= 2)

        // Hidden (unmapped), it stops, and resumes where it stood when shown again.
        gtk_widget_set_visible(view.widget, 0)
        let stoppedAt = view.frameIndex
        let count = changes.count
        await GTK.run(for: 0.5)
        #expect(changes.count == count, "no frame changes while unmapped")
        #expect(view.frameIndex == stoppedAt)
        gtk_widget_set_visible(view.widget, 1)
        await GTK.waitUntil("it plays again once mapped") { changes.count > count }
        #expect(changes[count].frame == (stoppedAt + 1) % frames.count, "from the frame it stopped at")
    }

    /// A long animation plays through the view's bounded frame buffer: every frame in
    /// order, and only the textures of the few frames around the one shown are kept.
    @Test func longAnimationKeepsABoundedNumberOfTextures() async throws {
        // 120 frames of 96×96, 20 ms each, each a colour of its own.
        var long = TestGIF(width: 96, height: 96, loop: 0)
        let blank = [UInt8](repeating: 0, count: 96 * 96)
        for n in 0..<120 {
            let colour: [UInt8] = [UInt8(n * 2), UInt8(255 - n * 2), UInt8(n % 2 * 255)]
            long.frames.append(TestGIF.Frame(width: 96, height: 96, indices: blank, delay: 2, palette: [colour]))
        }
        let gif = Data(long.encode())
        let decoded = try ImageDecoders.Registry.shared.decode(gif)
        #expect(decoded.frameCount == 120)

        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/long.gif", data: gif, headers: ["Content-Type": "image/gif"])
        let view = ImageView(targetLoader: GTK.targetLoader(), width: 96, height: 96)
        let window = await GTK.window(width: 96, height: 96, child: view.widget)
        defer { window.close() }
        var changes: [Int] = []
        var times: [Double] = []
        var mostTextures = 0
        view.didChangeFrame = { index in
            changes.append(index)
            times.append(monotonicSeconds())
            mostTextures = max(mostTextures, view.heldFrameTextureCount)
        }
        var loaded = false
        view.setImage(with: server.url("/long.gif"), options: ImageDisplayOptions(crossfadeDuration: 0)) { _ in loaded = true }
        await GTK.waitUntil { loaded }
        await GTK.waitUntil("the animation plays past a loop (\(changes.count) changes)") { changes.count >= 150 }
        let seconds = (times.last ?? 0) - (times.first ?? 0)
        let steps = zip(changes, changes.dropFirst()).map { ($1 - $0 + 120) % 120 }
        print(String(format: "long animation in the view: %d frame changes in %.2f s, %d frames skipped, at most %d textures held",
                     changes.count, seconds, steps.reduce(0) { $0 + $1 - 1 }, mostTextures))
        #expect(mostTextures <= 3)
        #expect(view.heldFrameTextureCount <= 3)
        // Frames move forward: frames may be skipped on a slow tick (a loaded machine
        // was seen to skip ten, 200 ms, at once), never shown out of order (which
        // would read as a step of more than half the loop).
        for (before, after) in zip(changes, changes.dropFirst()) {
            #expect((after - before + 120) % 120 < 60, "\(before) → \(after)")
        }
    }
}
