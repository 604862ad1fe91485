import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The decisions the Apple views and ImageIO's decoder take from what their SDKs
/// report: pure functions, so that the Apple files, type-checked only, decide nothing.
@Suite struct PlatformViewRulesTests {
    @Test func anUnknownDisplayScaleIsNeverAOnePixelBox() {
        #expect(ViewGeometry.displayScale(2) == 2 && ViewGeometry.displayScale(3) == 3)
        for unknown in [0, -1, .nan, .infinity] { #expect(ViewGeometry.displayScale(unknown) == 3) }
        let box = ViewGeometry.targetSize(width: 100, height: 50, reportedScale: 0, contentMode: .aspectFit)
        #expect(box == TargetSize(width: 300, height: 150))
        #expect(ViewGeometry.targetSize(width: 0, height: 50, reportedScale: 2, contentMode: .aspectFit) == nil)
        #expect(ViewGeometry.targetSize(width: 100, height: 50, reportedScale: 2, contentMode: nil) == nil)
    }

    @Test func contentModesMapAsTheToolkitsScale() {
        // UIView.ContentMode: scaleToFill 0, scaleAspectFit 1, scaleAspectFill 2, redraw 3, center 4 … bottomRight 12.
        #expect(ViewGeometry.contentMode(uiViewContentMode: 0) == .scaleToFill)
        #expect(ViewGeometry.contentMode(uiViewContentMode: 1) == .aspectFit)
        #expect(ViewGeometry.contentMode(uiViewContentMode: 2) == .aspectFill)
        #expect(ViewGeometry.contentMode(uiViewContentMode: 3) == .scaleToFill)
        for unscaled in 4...12 { #expect(ViewGeometry.contentMode(uiViewContentMode: unscaled) == nil) }
        // NSImageScaling: proportionallyDown 0, axesIndependently 1, none 2, proportionallyUpOrDown 3.
        #expect(ViewGeometry.contentMode(nsImageScaling: 0) == .aspectFit)
        #expect(ViewGeometry.contentMode(nsImageScaling: 1) == .scaleToFill)
        #expect(ViewGeometry.contentMode(nsImageScaling: 2) == nil)
        #expect(ViewGeometry.contentMode(nsImageScaling: 3) == .aspectFit)
    }

    @Test func aStretchingViewGetsTheWholeImageCoveringItsBox() throws {
        let box = TargetSize(width: 100, height: 50, contentMode: .scaleToFill)
        // Covered in both directions, nothing cropped: a fill would cut it to 100×50.
        let layout = box.layout(sourceWidth: 400, sourceHeight: 100)
        #expect(layout.scaledWidth == 200 && layout.scaledHeight == 50 && layout.outputWidth == 200 && layout.outputHeight == 50)
        #expect(TargetSize(width: 100, height: 50, contentMode: .aspectFill).layout(sourceWidth: 400, sourceHeight: 100).outputWidth == 100)
        #expect(box.description == "cover-100x50")
        let image = DecodedImage(bitmap: Bitmap(width: 400, height: 100, pixels: [UInt8](repeating: 9, count: 400 * 100 * 4)), format: .png)
        let fitted = image.fitted(to: box)
        #expect(fitted.width == 200 && fitted.height == 50)
    }

    @Test func uiImageOrientationsAreTheirEXIFOrientations() {
        // UIImage.Orientation: up, down, left, right, upMirrored, downMirrored, leftMirrored, rightMirrored.
        let exif = (0..<8).compactMap { ViewGeometry.orientation(uiImageOrientation: $0)?.rawValue }
        #expect(exif == [1, 3, 8, 6, 2, 4, 5, 7])
        #expect(ViewGeometry.orientation(uiImageOrientation: 8) == nil)
    }

    @Test func aFileOfSeveralImagesShowsTheOneItsFormatMeans() {
        let sizes = [ImageSourceRules.Entry(width: 16, height: 16, depth: 32), .init(width: 256, height: 256, depth: 32),
                     .init(width: 48, height: 48, depth: 8), .init(width: 48, height: 48, depth: 32)]
        func select(_ format: ImageFormat, count: Int = 4, primary: Int = 2, sequence: Bool = false, target: TargetSize? = nil) -> ImageSourceRules.Selection {
            ImageSourceRules.selection(format: format, count: count, primaryIndex: primary, isSequence: sequence, target: target) { sizes[$0] }
        }
        #expect(select(.gif) == .animation && select(.png) == .animation && select(.webp) == .animation)
        #expect(select(.tiff) == .still(index: 0), "a TIFF's pages are no slideshow")
        #expect(select(.heic) == .still(index: 2) && select(.avif) == .still(index: 2), "a collection shows its primary image")
        #expect(select(.heic, sequence: true) == .animation && select(.avif, sequence: true) == .animation)
        #expect(select(.ico) == .still(index: 1), "the largest icon without a target")
        #expect(select(.ico, target: .thumbnail(40)) == .still(index: 3), "the smallest covering the target, deeper colour first")
        #expect(select(.ico, target: .thumbnail(1000)) == .still(index: 1))
        #expect(select(.gif, count: 1) == .still(index: 0))
        #expect(select(.heic, primary: 9) == .still(index: 0))
    }

    @Test func imagesAreDecodedAtTheTargetsSizeNotInFull() {
        // A 48 MP photo for a 256 px thumbnail: ImageIO decodes 256 px, not 8000 px.
        #expect(ImageSourceRules.decodedLongestSide(width: 8000, height: 6000, target: .thumbnail(256)) == 256)
        #expect(ImageSourceRules.decodedLongestSide(width: 8000, height: 6000, target: TargetSize(width: 100, height: 100, contentMode: .aspectFill)) == 133)
        #expect(ImageSourceRules.decodedLongestSide(width: 200, height: 100, target: .thumbnail(256)) == nil, "no upscaling")
        #expect(ImageSourceRules.decodedLongestSide(width: 8000, height: 6000, target: nil) == nil)
    }

    @Test func frameDelaysPlayAsInBrowsers() {
        #expect(ImageSourceRules.frameDelay(nil) == 0.1 && ImageSourceRules.frameDelay(0) == 0.1 && ImageSourceRules.frameDelay(0.01) == 0.1)
        #expect(ImageSourceRules.frameDelay(0.02) == 0.02 && ImageSourceRules.frameDelay(1.5) == 1.5)
    }

    @Test func perFrameDelaysSurviveAUniformTimeline() {
        let timeline = UniformFrameTimeline(durations: [0.1, 0.3, 0.05])
        #expect(timeline.tick == 0.05 && timeline.frames == [0, 0, 1, 1, 1, 1, 1, 1, 2])
        #expect(abs(timeline.duration - 0.45) < 1e-9)
        // Delays with no common tick under the bound: at most that many entries, each frame kept.
        let odd = UniformFrameTimeline(durations: [0.101, 0.097, 5], maximumTicks: 100)
        #expect(odd.frames.count <= 110 && Set(odd.frames) == [0, 1, 2])
        #expect(UniformFrameTimeline(durations: [0.1, 0.1]).frames == [0, 1])
    }

    @Test func aTimerPlaysTheTimelineForItsLoopsAndEndsOnTheLastFrame() {
        let timeline = UniformFrameTimeline(durations: [0.1, 0.2])
        #expect(timeline.frames == [0, 1, 1])
        let twice = (0..<8).map { timeline.frame(atTick: $0, loopCount: 2) }
        #expect(twice.map(\.index) == [0, 1, 1, 0, 1, 1, 1, 1])
        #expect(twice.map(\.isLast) == [false, false, false, false, false, true, true, true])
        let forever = (0..<7).map { timeline.frame(atTick: $0, loopCount: 0) }
        #expect(forever.map(\.index) == [0, 1, 1, 0, 1, 1, 0] && forever.allSatisfy { !$0.isLast })
        // Entries laid out one a tick: position in the list, not frame number.
        let laidOut = (0..<4).map { UniformFrameTimeline.entry(atTick: $0, of: 3, loopCount: 1) }
        #expect(laidOut.map(\.entry) == [0, 1, 2, 2] && laidOut.map(\.isLast) == [false, false, true, true])
    }

    /// An animation of `frames` frames of 4×4 pixels.
    private static func animation(frames: Int) -> DecodedImage {
        let frame = DecodedImage.Frame(bitmap: Bitmap(width: 4, height: 4, pixels: [UInt8](repeating: 255, count: 64)), duration: 0.1)
        return DecodedImage(frames: Array(repeating: frame, count: frames), format: .gif)
    }

    private final class Built {}

    @Test @MainActor func anAnimationIsBuiltOncePerScaleAndFoundAgain() {
        let cache = BuiltAnimationCache<Built>(capacity: 1 << 20)
        var builds = 0
        func show(_ image: DecodedImage, scale: Double = 2) -> Built? {
            cache.image(for: image, scale: scale) { builds += 1; return Built() }
        }
        let image = Self.animation(frames: 3)
        let first = show(image)
        #expect(show(image) === first && builds == 1)
        // A copy of the value shares its animation: found, not built.
        let copy = image
        #expect(show(copy) === first && builds == 1)
        #expect(show(image, scale: 3) !== first && builds == 2)
        // Another animation with the same pixels is another object: built.
        #expect(show(Self.animation(frames: 3)) !== first && builds == 3)
        // A still is never kept.
        let still = DecodedImage(bitmap: image.bitmap, format: .png)
        _ = show(still); _ = show(still)
        #expect(builds == 5)
        #expect(cache.image(for: image, scale: 4) { nil } == nil)
    }

    @Test @MainActor func anAnimationThatIsGoneIsNeverFoundAgain() {
        let cache = BuiltAnimationCache<Built>(capacity: 1 << 20)
        var builds = 0
        do {
            let gone = Self.animation(frames: 2)
            _ = cache.image(for: gone, scale: 2) { builds += 1; return Built() }
            #expect(cache.count == 1)
        }
        // The dead animation's entry goes at the next build; what is built now is the new one's.
        let next = Self.animation(frames: 2)
        let built = cache.image(for: next, scale: 2) { builds += 1; return Built() }
        #expect(builds == 2 && cache.count == 1)
        #expect(cache.image(for: next, scale: 2) { builds += 1; return Built() } === built && builds == 2)
    }

    @Test @MainActor func theLeastRecentlyShownAnimationGoesFirstBeyondTheCapacity() {
        // Each 3-frame animation of 4×4 pixels costs 192 bytes: two fit in 400.
        let cache = BuiltAnimationCache<Built>(capacity: 400)
        var builds = 0
        func show(_ image: DecodedImage) -> Built? {
            cache.image(for: image, scale: 1) { builds += 1; return Built() }
        }
        let a = Self.animation(frames: 3), b = Self.animation(frames: 3), c = Self.animation(frames: 3)
        _ = show(a); _ = show(b); _ = show(a)
        _ = show(c)
        #expect(cache.count == 2 && cache.cost == 384 && builds == 3)
        _ = show(a)
        #expect(builds == 3)
        _ = show(b)
        #expect(builds == 4)
        // Larger than the whole capacity: built every time, never kept.
        let huge = Self.animation(frames: 10)
        _ = show(huge); _ = show(huge)
        #expect(builds == 6 && cache.count == 2)
    }
}
