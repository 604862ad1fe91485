import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite struct ProcessorTests {
    /// A 60 × 40 gradient: every pixel differs from its neighbours.
    static let photo: Bitmap = {
        var pixels: [UInt8] = []
        for y in 0..<40 {
            for x in 0..<60 { pixels += [UInt8(x * 4), UInt8(y * 6), 90, 255] }
        }
        return Bitmap(width: 60, height: 40, pixels: pixels)
    }()

    @Test func identifiersNameEveryParameter() {
        let processors: [any ImageProcessing] = [
            ImageProcessors.Resize(.thumbnail(256)),
            ImageProcessors.Resize(TargetSize(width: 256, height: 256, contentMode: .aspectFill)),
            ImageProcessors.Resize(TargetSize(width: 256, height: 256, allowsUpscaling: true)),
            ImageProcessors.Crop(x: 0, y: 0, width: 10, height: 10),
            ImageProcessors.Crop(x: 1, y: 0, width: 10, height: 10),
            ImageProcessors.RoundedCorners(radius: 8),
            ImageProcessors.RoundedCorners(radius: 8.5),
            ImageProcessors.Circle(),
            ImageProcessors.Composition([ImageProcessors.Circle(), ImageProcessors.Resize(.thumbnail(64))]),
            ImageProcessors.Composition([ImageProcessors.Resize(.thumbnail(64)), ImageProcessors.Circle()]),
        ]
        let identifiers = processors.map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count, "\(identifiers)")
        #expect(identifiers[0] == "imago.resize(fit-256x256)")
        // Stable: made again, the same processor names itself the same way.
        #expect(ImageProcessors.RoundedCorners(radius: 8).identifier == identifiers[5])
        #expect(processingIdentifier([]) == "")
        #expect(processingIdentifier(Array(processors.prefix(2))) == "imago.resize(fit-256x256)|imago.resize(fill-256x256)")
    }

    /// Processors work on the values as they are: a wide-gamut image stays in its
    /// colour space through each of them, an app's own included, and through an
    /// orientation change; its pixels are the same as the sRGB image's.
    @Test func processedImagesKeepTheirColourSpace() {
        let wide = Self.photo.tagged(.displayP3)
        let processors: [any ImageProcessing] = [
            ImageProcessors.Resize(.thumbnail(20)), ImageProcessors.Crop(x: 2, y: 2, width: 10, height: 10),
            ImageProcessors.RoundedCorners(radius: 3), ImageProcessors.Circle(),
            ImageProcessors.Custom(identifier: "copy") { Bitmap(width: $0.width, height: $0.height, pixels: $0.pixels) },
        ]
        for processor in processors {
            let image = DecodedImage(bitmap: wide, format: .heic).processed(by: [processor])
            let plain = DecodedImage(bitmap: Self.photo, format: .heic).processed(by: [processor])
            #expect(image.bitmap.colorSpace == .displayP3, "\(processor.identifier)")
            #expect(image.bitmap.pixels == plain.bitmap.pixels, "\(processor.identifier)")
        }
        #expect(wide.applying(.right).colorSpace == .displayP3)
    }

    @Test func resizeAndCrop() {
        let small = ImageProcessors.Resize(.thumbnail(30)).process(Self.photo)
        #expect(small.width == 30 && small.height == 20)
        let crop = ImageProcessors.Crop(x: 10, y: 5, width: 20, height: 10).process(Self.photo)
        #expect(crop.width == 20 && crop.height == 10 && crop[0, 0] == Self.photo[10, 5])
        // A rectangle sticking out keeps the part inside; one missing the image keeps all.
        let edge = ImageProcessors.Crop(x: 50, y: 30, width: 100, height: 100).process(Self.photo)
        #expect(edge.width == 10 && edge.height == 10 && edge[9, 9] == Self.photo[59, 39])
        #expect(ImageProcessors.Crop(x: 100, y: 0, width: 5, height: 5).process(Self.photo) == Self.photo)
    }

    @Test func roundedCornersClearTheCornersAndKeepTheMiddle() {
        let rounded = ImageProcessors.RoundedCorners(radius: 10).process(Self.photo)
        #expect(rounded.isPremultiplied)
        for (x, y) in [(0, 0), (59, 0), (0, 39), (59, 39), (1, 1), (58, 38)] {
            #expect(rounded[x, y] == (0, 0, 0, 0), "(\(x), \(y))")
        }
        for (x, y) in [(30, 20), (10, 0), (0, 10), (59, 20), (30, 39)] {
            #expect(rounded[x, y] == Self.photo[x, y], "(\(x), \(y))")
        }
        // On the arc, pixels are partly covered: antialiased, not jagged.
        let corner = (0..<10).flatMap { y in (0..<10).map { x in rounded[x, y].a } }
        #expect(corner.filter { $0 > 0 && $0 < 255 }.count >= 8)
        // A radius beyond half the side is a capsule, not an error.
        let capsule = ImageProcessors.RoundedCorners(radius: 1000).process(Self.photo)
        #expect(capsule[0, 20].a > 200 && capsule[0, 0].a == 0)
    }

    @Test func circleIsTheCentredSquareMaskedRound() {
        for size in [(60, 40), (41, 77), (1, 1), (2, 3)] {
            let bitmap = Bitmap(width: size.0, height: size.1, pixels: [UInt8](repeating: 255, count: size.0 * size.1 * 4))
            let circle = ImageProcessors.Circle().process(bitmap)
            let side = min(size.0, size.1)
            #expect(circle.width == side && circle.height == side)
            #expect(circle.isPremultiplied)
            if side > 4 {
                #expect(circle[0, 0].a == 0 && circle[side / 2, side / 2].a == 255)
                // The area covered is π r², within the antialiasing.
                let coverage = stride(from: 3, to: circle.pixels.count, by: 4).reduce(0.0) { $0 + Double(circle.pixels[$1]) / 255 }
                let expected = Double.pi * Double(side * side) / 4
                #expect(abs(coverage - expected) / expected < 0.02, "\(size): \(coverage) vs \(expected)")
            }
        }
    }

    @Test func compositionsAndCustomProcessorsApplyInOrder() {
        let invert = ImageProcessors.Custom(identifier: "test.invert") { bitmap in
            Bitmap(width: bitmap.width, height: bitmap.height, pixels: bitmap.pixels.enumerated().map { $0.offset % 4 == 3 ? $0.element : 255 - $0.element })
        }
        let composed = ImageProcessors.Composition([ImageProcessors.Crop(x: 0, y: 0, width: 2, height: 2), invert])
        let result = composed.process(Self.photo)
        let original = Self.photo[1, 1]
        let expected: (UInt8, UInt8, UInt8, UInt8) = (255 - original.r, 255 - original.g, 255 - 90, 255)
        #expect(result.width == 2 && result[1, 1] == expected)
        #expect(composed.identifier == "imago.composition(imago.crop(0,0,2,2)|test.invert)")
        let image = DecodedImage(frames: [.init(bitmap: Self.photo, duration: 0.1), .init(bitmap: Self.photo, duration: 0.2)], format: .gif)
        let processed = image.processed(by: [ImageProcessors.Circle()])
        #expect(processed.frames.map(\.bitmap.width) == [40, 40] && processed.frames.map(\.duration) == [0.1, 0.2])
    }
}
