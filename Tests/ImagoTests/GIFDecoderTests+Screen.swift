#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A first frame that does not fit the logical screen: the canvas grows to hold it,
/// as in Chrome, Firefox and Pillow, whose decodes of the fixtures are the reference
/// (`Fixtures/gif/make_fixtures.py`).
extension GIFDecoderTests {
    @Test(arguments: ["frame-larger-than-screen", "empty-screen"])
    func theCanvasGrowsToHoldTheFirstFrame(name: String) throws {
        let image = try ImageDecoders.GIF().decode(try fixture(name + ".gif"), options: DecodingOptions())
        let reference = try ImageDecoders.PNG().decode(try fixture(name + ".ref.png"), options: DecodingOptions())
        #expect(image.width == 40 && image.height == 30)
        let differing = (0..<40 * 30).filter { rgba(image.bitmap, $0 % 40, $0 / 40) != rgba(reference.bitmap, $0 % 40, $0 / 40) }
        #expect(differing.isEmpty, "\(differing.count) pixels differ from Pillow's")
        // The green rectangle reaches (30, 20), far outside a 20×15 screen.
        #expect(rgba(image.bitmap, 30, 20) == [0, 200, 0, 255])
    }

    /// Only the first frame grows the canvas: a later, larger one is clipped to it.
    @Test func laterFramesAreClippedToTheGrownCanvas() throws {
        var gif = TestGIF(width: 2, height: 1, loop: 0)
        gif.frames = [
            .init(width: 3, height: 2, indices: [1, 1, 1, 1, 1, 1]),
            .init(left: 1, top: 1, width: 4, height: 3, indices: [Array(repeating: 2, count: 12)].flatMap { $0 }),
        ]
        let image = try decode(gif.encode())
        #expect(image.width == 3 && image.height == 2)
        #expect(image.frames.count == 2)
        let second = try #require(image.frames.last?.bitmap)
        #expect(second.width == 3 && second.height == 2)
        #expect(self.image(second) == grid("RRR RGG"))
    }

    /// The pixel limit holds the grown canvas, before it is allocated.
    @Test func theGrownCanvasIsHeldToThePixelLimit() {
        var gif = TestGIF(width: 0, height: 0)
        gif.frames = [.init(left: 90, top: 0, width: 10, height: 100, indices: Array(repeating: 1, count: 1000))]
        let options = DecodingOptions(maximumPixelCount: 5000)
        #expect(failure(Data(gif.encode()), options: options) == .imageTooLarge(width: 100, height: 100, frames: 1, limit: 5000))
    }
}
#endif
