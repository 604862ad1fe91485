import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Testing

/// A progressive JPEG served slowly sharpens in place in the GTK view: a capture of
/// the window while it downloads shows a preview, neither the placeholder nor yet the
/// final image, and the final image replaces it.
@MainActor @Suite(.display, .gtkWindows) struct ProgressivePreviewTests {
    /// A 128×96 picture with gradients and hard edges: a coarse scan of it is visibly
    /// not the final image.
    private static func testPicture() -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: 128 * 96 * 4)
        for y in 0..<96 {
            for x in 0..<128 {
                let i = (y * 128 + x) * 4
                pixels[i] = UInt8(x * 2)
                pixels[i + 1] = UInt8(y * 2)
                pixels[i + 2] = (x / 4 + y / 4) % 2 == 0 ? 230 : 30
            }
        }
        return Bitmap(width: 128, height: 96, pixels: pixels)
    }

    @Test func aProgressiveJPEGSharpensInPlace() async throws {
        let jpeg = try ImageEncoders.JPEG(quality: 92, progressive: true).encode(Self.testPicture())
        let expected = try ImageDecoders.Registry.shared.decode(jpeg).bitmap
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        // About 30 pieces, 0.1 s apart: three seconds for the whole file.
        server.route("/progressive.jpg") { _ in
            .trickle(jpeg, bytesPerChunk: max(1, jpeg.count / 30), interval: 0.1, headers: ["Content-Type": "image/jpeg"])
        }

        let placeholderBitmap = Pixels.solid(width: 128, height: 96, 128, 128, 128)
        let placeholder = DecodedImage(bitmap: placeholderBitmap, format: .png)
        let loader = GTK.targetLoader()
        let view = ImageView(targetLoader: loader, width: 128, height: 96)
        let window = await GTK.window(width: 128, height: 96, child: view.widget)
        defer { window.close() }
        var previews = 0
        view.didDisplay = { content in
            if content.phase == .loading, content.image?.isPartial == true { previews += 1 }
        }

        var finished: Result<ImageResponse, ImagoError>?
        view.setImage(
            with: server.url("/progressive.jpg"), placeholder: placeholder,
            options: ImageDisplayOptions(crossfadeDuration: 0, showsProgressivePreviews: true)
        ) { finished = $0 }
        await GTK.waitUntil("no preview was shown") { previews > 0 }
        await GTK.run(for: 0.05)
        let preview = try await GTK.capture(view.widget)
        #expect(finished == nil, "the capture was taken while the image was still arriving")
        let fromPlaceholder = preview.difference(to: placeholderBitmap).maximum
        let fromFinal = preview.difference(to: expected).maximum
        print("a preview captured after \(previews) preview(s): \(fromPlaceholder) from the placeholder, \(fromFinal) from the final image")
        #expect(fromPlaceholder > 40, "the preview is not the placeholder")
        #expect(fromFinal > 10, "the preview is not yet the final image")

        await GTK.waitUntil { finished != nil }
        #expect((try? finished?.get()) != nil)
        await GTK.run(for: 0.1)
        let final = try await GTK.capture(view.widget)
        #expect(final.difference(to: expected).maximum <= 2, "the final image replaces the previews")
        #expect(previews >= 2)
    }
}
