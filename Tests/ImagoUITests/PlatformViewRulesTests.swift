import Foundation
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// The decisions the Apple views and ImageIO's decoder take from what their SDKs
/// report: pure functions, so that the Apple files, type-checked only, decide nothing.
@Suite struct PlatformViewRulesTests {
    @Test func anUnknownScaleIsNeverGuessed() {
        #expect(ViewGeometry.displayScale(reported: 2) == 2 && ViewGeometry.displayScale(reported: 3, screen: 2) == 3)
        // UIKit's traits say 0 before the view is in a window: the screen's scale then.
        for unknown in [0, -1, .nan, .infinity] {
            #expect(ViewGeometry.displayScale(reported: unknown, screen: 2) == 2)
            #expect(ViewGeometry.displayScale(reported: unknown) == nil)
            #expect(ViewGeometry.displayScale(reported: unknown, screen: 0) == nil)
        }
        #expect(ViewGeometry.targetSize(width: 100, height: 50, scale: 2, screen: nil, contentMode: .aspectFit) == TargetSize(width: 200, height: 100))
        // No scale known: no box made up with a guessed one, which would be cached under a size no view asks for.
        #expect(ViewGeometry.targetSize(width: 100, height: 50, scale: nil, screen: nil, contentMode: .aspectFit) == nil)
        #expect(ViewGeometry.targetSize(width: 100, height: 50, scale: 2, screen: nil, contentMode: nil) == nil)
    }

    @Test func aViewNotLaidOutDecodesAtItsScreensSizeAtMost() throws {
        let phone = try #require(ViewGeometry.Screen(width: 390, height: 844, scale: 3))
        #expect(ViewGeometry.Screen(width: 390, height: 0, scale: 3) == nil && ViewGeometry.Screen(width: 390, height: 844, scale: .nan) == nil)
        // Bounds zero (a cell configured before its first layout): the screen's box, fitted.
        let box = try #require(ViewGeometry.targetSize(width: 0, height: 0, scale: nil, screen: phone, contentMode: .aspectFill))
        #expect(box == TargetSize(width: 1170, height: 2532, contentMode: .aspectFit))
        // A 12 MP photo for that cell decodes at most to the screen, not whole.
        let layout = box.layout(sourceWidth: 4032, sourceHeight: 3024)
        #expect(layout.scaledWidth == 1170 && layout.scaledHeight == 878)
        #expect(ImageSourceRules.decodedLongestSide(width: 4032, height: 3024, target: box) == 1170)
        // Laid out, the view's own box.
        #expect(ViewGeometry.targetSize(width: 100, height: 100, scale: 3, screen: phone, contentMode: .aspectFill)
            == TargetSize(width: 300, height: 300, contentMode: .aspectFill))
        #expect(ViewGeometry.targetSize(width: 0, height: 0, scale: 3, screen: nil, contentMode: .aspectFit) == nil)
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
}
