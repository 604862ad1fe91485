import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The colour and shape processors, each against a plain per-pixel reference
/// written here from the formula its documentation names.
@Suite struct FilterProcessorTests {
    /// A 23 × 17 bitmap with every alpha from opaque to transparent, premultiplied.
    static let translucent: Bitmap = {
        var pixels: [UInt8] = []
        for y in 0..<17 {
            for x in 0..<23 {
                let a = (x * 11 + y * 5) % 256
                let straight = [(x * 37) % 256, (y * 53) % 256, (x * y * 7) % 256]
                pixels += straight.map { UInt8((Double($0 * a) / 255).rounded()) } + [UInt8(a)]
            }
        }
        return Bitmap(width: 23, height: 17, pixels: pixels)
    }()

    /// The straight colour of a premultiplied pixel, components 0...1, alpha last.
    static func straight(_ bitmap: Bitmap, _ x: Int, _ y: Int) -> [Double] {
        let p = bitmap[x, y]
        let a = Double(p.a) / 255
        let rgb = [p.r, p.g, p.b].map { a == 0 ? 0 : Double($0) / 255 / a }
        return rgb + [a]
    }

    /// The bitmap whose pixel (x, y) is `pixel(x, y)`: premultiplied components
    /// 0...1, rounded to bytes.
    static func reference(width: Int, height: Int, _ pixel: (Int, Int) -> [Double]) -> Bitmap {
        var pixels: [UInt8] = []
        for y in 0..<height {
            for x in 0..<width {
                pixels += pixel(x, y).map { UInt8((min(1, max(0, $0)) * 255).rounded()) }
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    static func expectClose(_ actual: Bitmap, _ expected: Bitmap, tolerance: Int = 1, _ comment: String = "",
                            sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(actual.width == expected.width && actual.height == expected.height, sourceLocation: sourceLocation)
        guard actual.width == expected.width && actual.height == expected.height else { return }
        let difference = actual.difference(to: expected)
        #expect(difference.maximum <= tolerance, "\(comment): off by \(difference.maximum)", sourceLocation: sourceLocation)
        #expect(actual.isPremultiplied, "\(comment)", sourceLocation: sourceLocation)
    }

    @Test func identifiersAreStableAndDistinct() {
        let red = ImageProcessors.Color(red: 1, green: 0, blue: 0)
        let make: () -> [any ImageProcessing] = {
            var all: [any ImageProcessing] = [ImageProcessors.GaussianBlur(radius: 4), ImageProcessors.GaussianBlur(radius: 4.5)]
            all.append(ImageProcessors.Tint(color: red))
            all.append(ImageProcessors.Tint(color: ImageProcessors.Color(red: 1, green: 0, blue: 0, alpha: 0.5)))
            all.append(ImageProcessors.ColorControls(saturation: 1.2))
            all.append(ImageProcessors.ColorControls(brightness: 0.1))
            all.append(ImageProcessors.ColorControls(contrast: 1.1))
            all.append(ImageProcessors.Grayscale())
            all.append(ImageProcessors.Border(width: 2, color: .white))
            all.append(ImageProcessors.Border(width: 2, color: .white, cornerRadius: 8))
            all.append(ImageProcessors.Border(width: 3, color: .white))
            all.append(ImageProcessors.Border(width: 2, color: .black))
            all.append(ImageProcessors.Flip(.horizontal))
            all.append(ImageProcessors.Flip(.vertical))
            all.append(ImageProcessors.Rotate(.clockwise90))
            all.append(ImageProcessors.Rotate(.halfTurn))
            all.append(ImageProcessors.Rotate(.counterclockwise90))
            for mode in ImageProcessors.BlendMode.allCases { all.append(ImageProcessors.Overlay(color: red, blendMode: mode)) }
            all.append(ImageProcessors.Overlay(image: Self.translucent))
            all.append(ImageProcessors.Overlay(image: Self.translucent, x: 1))
            all.append(ImageProcessors.Overlay(image: Self.translucent.applying(.upMirrored)))
            return all
        }
        let identifiers = make().map(\.identifier)
        #expect(Set(identifiers).count == identifiers.count, "\(identifiers)")
        #expect(make().map(\.identifier) == identifiers)
        #expect(identifiers[0] == "imago.gaussianBlur(4.0)")
        #expect(identifiers[2] == "imago.tint(#ff0000ff)")
        #expect(identifiers[9] == "imago.border(2.0,#ffffffff,radius:8.0)")
        #expect(identifiers[14] == "imago.rotate(90)")
        #expect(ImageProcessors.Rotate(degrees: -90)?.identifier == "imago.rotate(270)")
        #expect(ImageProcessors.Rotate(degrees: 45) == nil && ImageProcessors.Rotate(degrees: 720) == nil)
        // The image overlay is named by its pixels: equal pixels, equal names, whatever the stride.
        let padded = Bitmap(width: 2, height: 1, bytesPerRow: 12, pixels: [1, 2, 3, 255, 4, 5, 6, 255, 9, 9, 9, 9])
        let tight = Bitmap(width: 2, height: 1, pixels: [1, 2, 3, 255, 4, 5, 6, 255])
        #expect(ImageProcessors.Overlay(image: padded).identifier == ImageProcessors.Overlay(image: tight).identifier)
    }

    @Test func everyProcessorKeepsTheColourSpaceAndPremultiplication() {
        let wide = Self.translucent.tagged(.displayP3)
        var processors: [any ImageProcessing] = [ImageProcessors.GaussianBlur(radius: 2), ImageProcessors.Grayscale()]
        processors.append(ImageProcessors.Tint(color: ImageProcessors.Color(red: 0.2, green: 0.4, blue: 1, alpha: 0.6)))
        processors.append(ImageProcessors.ColorControls(saturation: 1.5, brightness: 0.2, contrast: 1.4))
        processors.append(ImageProcessors.Border(width: 2.5, color: ImageProcessors.Color(red: 1, green: 1, blue: 0, alpha: 0.7), cornerRadius: 5))
        processors.append(ImageProcessors.Flip(.vertical))
        processors.append(ImageProcessors.Rotate(.clockwise90))
        for mode in ImageProcessors.BlendMode.allCases {
            processors.append(ImageProcessors.Overlay(image: Self.translucent.applying(.down), blendMode: mode))
        }
        for processor in processors {
            let image = DecodedImage(bitmap: wide, format: .png).processed(by: [processor])
            #expect(image.bitmap.colorSpace == .displayP3, "\(processor.identifier)")
            #expect(processor.process(wide).colorSpace == .displayP3, "\(processor.identifier)")
            #expect(image.bitmap.isPremultiplied, "\(processor.identifier)")
        }
    }

    @Test func tintPaintsTheColourWhereTheImageIs() {
        let color = ImageProcessors.Color(rgba: 0x28c8_5aa0)
        let tinted = ImageProcessors.Tint(color: color).process(Self.translucent)
        let ts = [40.0, 200, 90].map { $0 / 255 }, ta = 160.0 / 255
        let expected = Self.reference(width: 23, height: 17) { x, y in
            let b = Self.straight(Self.translucent, x, y)
            // Source-atop: the colour over the image, at the image's alpha.
            var out: [Double] = []
            for c in 0..<3 { out.append(ts[c] * ta * b[3] + b[c] * b[3] * (1 - ta)) }
            return out + [b[3]]
        }
        Self.expectClose(tinted, expected, "tint")
        // Fully opaque, the tint is a silhouette in the colour.
        let solid = ImageProcessors.Tint(color: ImageProcessors.Color(red: 0, green: 0, blue: 1.0)).process(Self.translucent)
        #expect(solid[22, 16] == (0, 0, Self.translucent[22, 16].a, Self.translucent[22, 16].a))
    }

    @Test func colorControlsFollowTheirFormulas() {
        for (s, b, c) in [(1.0, 0.0, 1.0), (0.0, 0.0, 1.0), (1.6, 0.0, 1.0), (1.0, 0.25, 1.0), (1.0, -0.3, 1.0),
                          (1.0, 0.0, 1.5), (1.0, 0.0, 0.4), (1.3, 0.1, 1.2)] {
            let processed = ImageProcessors.ColorControls(saturation: s, brightness: b, contrast: c).process(Self.translucent)
            let expected = Self.reference(width: 23, height: 17) { x, y in
                let v = Self.straight(Self.translucent, x, y)
                let (r, g, bl) = (v[0], v[1], v[2])
                // CSS saturate(), then brightness added, then contrast around mid-grey.
                var out = [
                    (0.213 + 0.787 * s) * r + (0.715 - 0.715 * s) * g + (0.072 - 0.072 * s) * bl,
                    (0.213 - 0.213 * s) * r + (0.715 + 0.285 * s) * g + (0.072 - 0.072 * s) * bl,
                    (0.213 - 0.213 * s) * r + (0.715 - 0.715 * s) * g + (0.072 + 0.928 * s) * bl,
                ]
                out = out.map { (($0 + b) - 0.5) * c + 0.5 }
                return out.map { min(1, max(0, $0)) * v[3] } + [v[3]]
            }
            Self.expectClose(processed, expected, "saturation \(s), brightness \(b), contrast \(c)")
        }
        // The defaults change nothing.
        #expect(ImageProcessors.ColorControls().process(Self.translucent).difference(to: Self.translucent).maximum <= 1)
    }

    @Test func grayscaleIsTheRec709Luma() {
        let gray = ImageProcessors.Grayscale().process(Self.translucent)
        let expected = Self.reference(width: 23, height: 17) { x, y in
            let v = Self.straight(Self.translucent, x, y)
            let luma = 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]
            return [luma * v[3], luma * v[3], luma * v[3], v[3]]
        }
        Self.expectClose(gray, expected, "grayscale")
        for y in 0..<17 { for x in 0..<23 { #expect(gray[x, y].r == gray[x, y].g && gray[x, y].g == gray[x, y].b) } }
    }

    /// The W3C separable blend functions, on straight components.
    static func blend(_ mode: ImageProcessors.BlendMode, _ cb: Double, _ cs: Double) -> Double {
        switch mode {
        case .normal: cs
        case .multiply: cb * cs
        case .screen: cb + cs - cb * cs
        case .overlay: cb <= 0.5 ? 2 * cb * cs : 1 - 2 * (1 - cb) * (1 - cs)
        }
    }

    @Test func overlaysBlendByTheW3CFormulas() {
        let color = ImageProcessors.Color(rgba: 0xc81e_78be)
        let overlay = Self.translucent.applying(.upMirrored).cropped(x: 0, y: 0, width: 15, height: 12)
        for mode in ImageProcessors.BlendMode.allCases {
            // source: the straight colour and alpha painted over pixel (x, y), if any.
            func check(_ processed: Bitmap, source: (Int, Int) -> [Double]?) {
                let expected = Self.reference(width: 23, height: 17) { x, y in
                    let b = Self.straight(Self.translucent, x, y)
                    guard let s = source(x, y), b[3] > 0 else { return [b[0] * b[3], b[1] * b[3], b[2] * b[3], b[3]] }
                    let (ab, as_) = (b[3], s[3])
                    // Source-atop with blending: αs·αb·((1 − αb)·Cs + αb·B(Cb, Cs)) + (1 − αs)·αb·Cb.
                    var out: [Double] = []
                    for c in 0..<3 {
                        let mixed: Double = (1 - ab) * s[c] + ab * Self.blend(mode, b[c], s[c])
                        let backdrop: Double = (1 - as_) * ab * b[c]
                        out.append(as_ * ab * mixed + backdrop)
                    }
                    return out + [ab]
                }
                Self.expectClose(processed, expected, "\(mode)")
            }
            check(ImageProcessors.Overlay(color: color, blendMode: mode).process(Self.translucent)) { _, _ in
                [200.0 / 255, 30.0 / 255, 120.0 / 255, 190.0 / 255]
            }
            check(ImageProcessors.Overlay(image: overlay, x: 5, y: 3, blendMode: mode).process(Self.translucent)) { x, y in
                let (sx, sy) = (x - 5, y - 3)
                guard sx >= 0, sy >= 0, sx < overlay.width, sy < overlay.height else { return nil }
                return Self.straight(overlay, sx, sy)
            }
        }
        // Multiplying by white and screening with black change nothing.
        for (mode, color) in [(ImageProcessors.BlendMode.multiply, ImageProcessors.Color.white), (.screen, .black)] {
            let opaque = ProcessorTests.photo
            #expect(ImageProcessors.Overlay(color: color, blendMode: mode).process(opaque).difference(to: opaque).maximum <= 1)
        }
    }

    @Test func bordersFrameTheImageAndFollowRoundedCorners() {
        let opaque = ProcessorTests.photo
        let red = ImageProcessors.Color(rgba: 0xff00_00ff)
        let plain = ImageProcessors.Border(width: 3, color: red).process(opaque)
        for y in 0..<opaque.height {
            for x in 0..<opaque.width {
                let inBorder = min(x, y, opaque.width - 1 - x, opaque.height - 1 - y) < 3
                #expect(inBorder ? plain[x, y] == (255, 0, 0, 255) : plain[x, y] == opaque[x, y], "(\(x), \(y))")
            }
        }
        // Rounded: after RoundedCorners of the same radius, the corners stay clear,
        // the straight edges are the colour, the middle is the image.
        let rounded = ImageProcessors.RoundedCorners(radius: 12).process(opaque)
        let framed = ImageProcessors.Border(width: 2, color: red, cornerRadius: 12).process(rounded)
        #expect(framed[0, 0] == (0, 0, 0, 0) && framed[59, 39] == (0, 0, 0, 0))
        #expect(framed[30, 0] == (255, 0, 0, 255) && framed[0, 20] == (255, 0, 0, 255) && framed[59, 20] == (255, 0, 0, 255))
        #expect(framed[30, 2] == opaque[30, 2] && framed[30, 20] == opaque[30, 20])
        // On the arc: the border colour, whole just inside it, antialiased across it.
        #expect(framed[4, 4] == (255, 0, 0, 255))
        #expect(framed[3, 3].a > 0 && framed[3, 3].a < 255 && framed[3, 3].r > framed[3, 3].g)
        #expect(framed.isPremultiplied)
        // A translucent border is painted over the image (source-over).
        let veil = ImageProcessors.Border(width: 1, color: .init(rgba: 0x0000_ff80)).process(opaque)
        let under = opaque[10, 0]
        let expectedRed = Int((Double(under.r) * (1 - 128.0 / 255)).rounded())
        #expect(abs(Int(veil[10, 0].r) - expectedRed) <= 1 && veil[10, 0].b >= 128 && veil[10, 0].a == 255)
    }

    @Test func flipsAndTurnsMovePixelsWhereTheyShould() {
        let image = Self.translucent
        let (w, h) = (image.width, image.height)
        let horizontal = ImageProcessors.Flip(.horizontal).process(image)
        let vertical = ImageProcessors.Flip(.vertical).process(image)
        let clockwise = ImageProcessors.Rotate(.clockwise90).process(image)
        let half = ImageProcessors.Rotate(.halfTurn).process(image)
        let counter = ImageProcessors.Rotate(.counterclockwise90).process(image)
        #expect(clockwise.width == h && clockwise.height == w && counter.width == h && half.width == w)
        for y in 0..<h {
            for x in 0..<w {
                #expect(horizontal[w - 1 - x, y] == image[x, y])
                #expect(vertical[x, h - 1 - y] == image[x, y])
                #expect(half[w - 1 - x, h - 1 - y] == image[x, y])
                // Clockwise: the top row becomes the right column, read downwards.
                #expect(clockwise[h - 1 - y, x] == image[x, y])
                #expect(counter[y, w - 1 - x] == image[x, y])
            }
        }
        let turn = ImageProcessors.Rotate(.clockwise90)
        #expect(turn.process(turn.process(turn.process(turn.process(image)))) == image)
        #expect(ImageProcessors.Rotate(.counterclockwise90).process(clockwise) == image)
        for axis in ImageProcessors.Flip.Axis.allCases {
            let flip = ImageProcessors.Flip(axis)
            #expect(flip.process(flip.process(image)) == image)
        }
    }
}

/// The Gaussian blur against a plain reference: three box means a pixel at a time.
@Suite struct BlurProcessorTests {
    /// Three box blurs of `radii` along rows (then columns, of the rounded result),
    /// edges repeated, each output pixel the mean of its window summed afresh.
    static func reference(_ bitmap: Bitmap, radii: [Int]) -> Bitmap {
        let (w, h) = (bitmap.width, bitmap.height)
        var values = (0..<h).map { y in (0..<w).map { x in
            let p = bitmap[x, y]
            return [Double(p.r), Double(p.g), Double(p.b), Double(p.a)]
        } }
        func pass(_ line: [[Double]], _ r: Int) -> [[Double]] {
            (0..<line.count).map { i in
                var sum = [0.0, 0, 0, 0]
                for k in -r...r {
                    let v = line[min(max(i + k, 0), line.count - 1)]
                    for c in 0..<4 { sum[c] += v[c] }
                }
                return sum.map { $0 / Double(2 * r + 1) }
            }
        }
        func round(_ v: [Double]) -> [Double] { v.map { ($0 + 0.5).rounded(.down) } }
        for y in 0..<h {
            for r in radii where r > 0 { values[y] = pass(values[y], r) }
            values[y] = values[y].map(round)
        }
        for x in 0..<w {
            var column = (0..<h).map { values[$0][x] }
            for r in radii where r > 0 { column = pass(column, r) }
            for y in 0..<h { values[y][x] = round(column[y]) }
        }
        return Bitmap(width: w, height: h, pixels: values.flatMap { $0.flatMap { $0.map { UInt8($0) } } })
    }

    @Test func matchesThreeBoxMeans() {
        for radius in [1.0, 2.5, 6.0] {
            for image in [ProcessorTests.photo, FilterProcessorTests.translucent] {
                let radii = ImageProcessors.GaussianBlur.boxRadii(sigma: radius)
                let blurred = ImageProcessors.GaussianBlur(radius: radius).process(image)
                FilterProcessorTests.expectClose(blurred, Self.reference(image, radii: radii), "radius \(radius)")
            }
        }
        // A stride wider than the row is read as rows of its width.
        let padded = Bitmap(width: 3, height: 2, bytesPerRow: 16, pixels: (0..<32).map { $0 % 4 == 3 ? 255 : UInt8($0 * 3) })
        let tight = Bitmap(width: 3, height: 2, pixels: (0..<2).flatMap { y in (0..<3).flatMap { x in [padded[x, y].r, padded[x, y].g, padded[x, y].b, padded[x, y].a] } })
        #expect(ImageProcessors.GaussianBlur(radius: 1).process(padded) == ImageProcessors.GaussianBlur(radius: 1).process(tight))
    }

    @Test func boxesAddUpToTheGaussiansVariance() {
        for sigma in [0.8, 1.0, 2.0, 3.7, 10.0, 25.0] {
            let radii = ImageProcessors.GaussianBlur.boxRadii(sigma: sigma)
            #expect(radii.count == 3)
            // A box of width w has variance (w² − 1) / 12.
            let variance = radii.reduce(0.0) { total, r in total + Double((2 * r + 1) * (2 * r + 1) - 1) / 12 }
            // Whole-pixel boxes miss small radii by up to a fifth of a pixel.
            #expect(abs(variance.squareRoot() - sigma) <= max(0.2, 0.05 * sigma), "σ \(sigma): boxes \(radii)")
        }
        #expect(ImageProcessors.GaussianBlur(radius: 0).process(ProcessorTests.photo) == ProcessorTests.photo)
        #expect(ImageProcessors.GaussianBlur(radius: -3).radius == 0 && ImageProcessors.GaussianBlur(radius: .nan).radius == 0)
    }

    /// A vertical step from black to white: the blur is symmetric about the step and
    /// follows the Gaussian's integral to within a few levels.
    @Test func aStepEdgeBlursSymmetricallyIntoTheGaussiansIntegral() {
        let (w, h) = (60, 9)
        var pixels: [UInt8] = []
        for _ in 0..<h { for x in 0..<w { pixels += x < 30 ? [0, 0, 0, 255] : [255, 255, 255, 255] } }
        let step = Bitmap(width: w, height: h, pixels: pixels)
        for sigma in [1.5, 3.0, 5.0] {
            let blurred = ImageProcessors.GaussianBlur(radius: sigma).process(step)
            for y in 0..<h {
                for d in 0..<30 {
                    let left = Int(blurred[29 - d, y].r), right = Int(blurred[30 + d, y].r)
                    #expect(abs(left + right - 255) <= 1, "σ \(sigma), row \(y), \(d) from the step: \(left) + \(right)")
                    #expect(blurred[30 + d, y].r == blurred[30 + d, y].g && blurred[30 + d, y].a == 255)
                }
                // Every row alike: nothing moves vertically on a vertical edge.
                #expect((0..<w).allSatisfy { blurred[$0, y] == blurred[$0, 0] })
            }
            for x in 0..<w {
                // The pixel's centre is x + 0.5; the step at 30.
                let expected = 255 * 0.5 * (1 + erf((Double(x) + 0.5 - 30) / (sigma * 2.0.squareRoot())))
                #expect(abs(Double(blurred[x, 4].r) - expected) <= 6, "σ \(sigma), x \(x): \(blurred[x, 4].r) against \(expected)")
            }
            #expect(blurred[27, 4].r > 0 && blurred[32, 4].r < 255)
        }
    }

    @Test func transparentPixelsLendNoColour() {
        // Red next to transparent: blurred, the red fades in alpha but stays red.
        var pixels: [UInt8] = []
        for _ in 0..<5 { for x in 0..<20 { pixels += x < 10 ? [255, 0, 0, 255] : [0, 0, 0, 0] } }
        let blurred = ImageProcessors.GaussianBlur(radius: 2).process(Bitmap(width: 20, height: 5, pixels: pixels))
        for x in 0..<20 {
            let p = blurred[x, 2]
            #expect(p.r == p.a && p.g == 0 && p.b == 0, "x \(x): \(p)")
        }
        #expect(blurred[9, 2].a < 255 && blurred[10, 2].a > 0)
    }
}
