import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The rules the Apple views follow when they show images: pixels handed to Core
/// Graphics in place, toolkit images shown as they are and drawn once, and a view
/// that grows keeping its image until a sharper one is ready.
@Suite struct DisplayRulesTests {
    private static func photo(width: Int = 8, height: Int = 6) -> DecodedImage {
        DecodedImage(bitmap: Bitmap(width: width, height: height, pixels: (0..<width * height * 4).map { UInt8($0 % 251) }), format: .png)
    }

    @Test func heldPixelsAreTheBitmapsOwnAndOutliveIt() throws {
        var bitmap: Bitmap? = Self.photo().bitmap
        let expected = bitmap!.pixels
        let held = bitmap!.holdPixels()
        // The bitmap's own storage, not a copy.
        #expect(held.base == bitmap!.pixels.withUnsafeBytes { UnsafeRawPointer($0.baseAddress!) })
        #expect(held.count == 8 * 6 * 4)
        weak let storage = Unmanaged<HeldPixels>.fromOpaque(held.info).takeUnretainedValue()
        bitmap = nil
        // Core Graphics still reads them after the cache let the bitmap go.
        #expect(Array(UnsafeRawBufferPointer(start: held.base, count: held.count)) == expected)
        #expect(storage != nil)
        Bitmap.releasePixels(held.info)
        #expect(storage == nil, "released with the data provider, not leaked")
    }

    private final class Toolkit: Sendable {}

    @Test func anImageMadeFromAToolkitImageIsShownAsItIsUntilItsPixelsChange() {
        var image = Self.photo()
        let toolkit = Toolkit()
        image.platformOrigin = toolkit
        let copy = image
        #expect(copy.platformOrigin === toolkit && copy.sharesPixels(with: image))
        // Fitted or processed, the pixels are new: shown from them, at the screen's scale.
        #expect(image.fitted(to: .thumbnail(4)).platformOrigin == nil)
        #expect(!Self.photo().sharesPixels(with: image), "equal pixels elsewhere are another image")
    }

    @Test @MainActor func aToolkitImageIsDrawnOnceWhileItLivesAndMemoryPressureLetsGo() async throws {
        let monitor = MemoryPressureMonitor()
        let memo = PlatformImageMemo(capacity: 2, memoryPressure: monitor)
        var draws = 0
        func draw() -> DecodedImage? { draws += 1; return Self.photo() }
        let a = Toolkit(), b = Toolkit(), c = Toolkit()
        let first = memo.image(for: a, draw: draw)
        #expect(memo.image(for: a, draw: draw)?.sharesPixels(with: first!) == true && draws == 1)
        _ = memo.image(for: b, draw: draw)
        _ = memo.image(for: a, draw: draw)
        _ = memo.image(for: c, draw: draw)
        // Two kept: the least recently used (b) went.
        #expect(memo.count == 2 && draws == 3)
        _ = memo.image(for: a, draw: draw)
        #expect(draws == 3)
        monitor.report(.warning)
        let start = Date()
        while memo.count > 0, Date().timeIntervalSince(start) < 10 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(memo.count == 0)
        _ = memo.image(for: a, draw: draw)
        #expect(draws == 4)
    }

    @Test func aViewThatGrowsLoadsAgainAndShowsItsImageMeanwhile() throws {
        let url = URL(string: "https://example.com/a.jpg")!
        let small = TargetSize(width: 60, height: 60, contentMode: .aspectFill)
        let large = TargetSize(width: 900, height: 600, contentMode: .aspectFill)
        let options = ImageDisplayOptions()
        var sized = SizedLoad()
        // The first layout loads, with the view's placeholder and indicator.
        let firstLoad = sized.load(url, at: small, options: options, showing: nil)
        let first = try #require(firstLoad)
        #expect(first.placeholder == nil && first.options.showsActivityIndicator)
        // A layout pass at the same size, or smaller, loads nothing.
        #expect(sized.load(url, at: small, options: options, showing: Self.photo()) == nil)
        #expect(sized.load(url, at: TargetSize(width: 30, height: 30, contentMode: .aspectFill), options: options, showing: Self.photo()) == nil)
        // Larger: loads again, the image on screen staying, no indicator, no fade.
        let shown = Self.photo()
        let grownLoad = sized.load(url, at: large, options: options, showing: shown)
        let grown = try #require(grownLoad)
        #expect(grown.placeholder?.sharesPixels(with: shown) == true)
        #expect(!grown.options.showsActivityIndicator && grown.options.crossfadeDuration == 0)
        #expect(sized.size == large)
        // Back to the small size: the sharper image stays.
        #expect(sized.load(url, at: small, options: options, showing: shown) == nil)
        // Another URL loads as any load does.
        let otherLoad = sized.load(URL(string: "https://example.com/b.jpg")!, at: small, options: options, showing: shown)
        let other = try #require(otherLoad)
        #expect(other.placeholder == nil && other.options.showsActivityIndicator)
        sized.reset()
        #expect(sized.load(URL(string: "https://example.com/b.jpg")!, at: small, options: options, showing: shown) != nil)
        // Another content mode needs another box; a full-size image serves every box.
        #expect(SizedLoad.needsReload(loaded: small, for: TargetSize(width: 60, height: 60, contentMode: .aspectFit)))
        #expect(!SizedLoad.needsReload(loaded: nil, for: large) && SizedLoad.needsReload(loaded: small, for: nil))
    }
}
