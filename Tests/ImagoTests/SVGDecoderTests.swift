#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The SVG decoder against `rsvg-convert` (the same librsvg and cairo), at the
/// document's size and at a target size: shapes, a gradient, a `viewBox` scaled;
/// references to files are not followed, broken documents get a typed error, and a
/// huge declared size is drawn within the pixel limit.
@Suite struct SVGDecoderTests {
    static let shapes = """
        <?xml version="1.0" encoding="UTF-8"?>
        <!-- basic shapes -->
        <svg xmlns="http://www.w3.org/2000/svg" width="64" height="48">
          <rect x="4" y="4" width="30" height="20" fill="#c03020"/>
          <circle cx="44" cy="30" r="14" fill="rgba(20,80,200,0.6)"/>
          <ellipse cx="16" cy="36" rx="12" ry="6" fill="#208040" fill-opacity="0.8"/>
          <path d="M2 46 L30 30 L60 46 Z" fill="none" stroke="green" stroke-width="2"/>
          <line x1="0" y1="0" x2="63" y2="47" stroke="black" stroke-width="1.5" stroke-linecap="round"/>
        </svg>
        """

    static let gradient = """
        <svg xmlns="http://www.w3.org/2000/svg" width="50" height="30">
          <defs>
            <linearGradient id="g" x1="0" y1="0" x2="1" y2="1">
              <stop offset="0" stop-color="#ff0000"/>
              <stop offset="0.5" stop-color="#00ff00" stop-opacity="0.5"/>
              <stop offset="1" stop-color="#0000ff"/>
            </linearGradient>
            <radialGradient id="r"><stop offset="0" stop-color="white"/><stop offset="1" stop-color="black" stop-opacity="0"/></radialGradient>
          </defs>
          <rect width="50" height="30" fill="url(#g)"/>
          <circle cx="25" cy="15" r="12" fill="url(#r)"/>
        </svg>
        """

    /// Text in the system's sans-serif font (fontconfig's choice, as for rsvg-convert).
    static let text = """
        <svg xmlns="http://www.w3.org/2000/svg" width="80" height="24">
          <text x="4" y="18" font-family="sans-serif" font-size="16" fill="#203080">Imago</text>
        </svg>
        """

    /// Drawn in a 8×4 user space, declared 32×16.
    static let viewBox = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 8 4" width="32" height="16">
          <rect width="4" height="4" fill="blue"/><circle cx="6" cy="2" r="1.5" fill="orange"/>
        </svg>
        """

    /// `rsvg-convert`'s drawing of `svg` (at `width` × `height` when given), read back
    /// premultiplied by Imago's PNG decoder.
    static func reference(_ svg: String, width: Int? = nil, height: Int? = nil, in folder: URL? = nil) throws -> Bitmap {
        let directory = folder ?? FileManager.default.temporaryDirectory.appendingPathComponent("imago-svg-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { if folder == nil { try? FileManager.default.removeItem(at: directory) } }
        let input = directory.appendingPathComponent("document.svg"), output = directory.appendingPathComponent("reference.png")
        try Data(svg.utf8).write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/rsvg-convert")
        process.arguments = (width.map { ["-w", String($0)] } ?? []) + (height.map { ["-h", String($0)] } ?? []) + ["-o", output.path, input.path]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "rsvg-convert failed")
        return try ImageDecoders.PNG().decode(try Data(contentsOf: output), options: DecodingOptions()).bitmap
    }

    /// `bitmap` as it comes back from a PNG that `rsvg-convert` wrote of the same
    /// surface: cairo's unpremultiplying (`(c × 255 + a / 2) / a`, zero where a is zero)
    /// and then the PNG decoder's premultiplying. The same pixels go the same way into
    /// the same bytes, so a drawing equal to librsvg's compares exactly.
    static func throughPNG(_ bitmap: Bitmap) -> Bitmap {
        var pixels = [UInt8](repeating: 0, count: bitmap.width * bitmap.height * 4)
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap[x, y], a = UInt32(p.a), i = (y * bitmap.width + x) * 4
                guard a > 0 else { continue }
                func straight(_ c: UInt8) -> UInt8 { UInt8(min(255, (UInt32(c) * 255 + a / 2) / a)) }
                pixels[i] = straight(p.r); pixels[i + 1] = straight(p.g); pixels[i + 2] = straight(p.b); pixels[i + 3] = p.a
            }
        }
        pixels.withUnsafeMutableBytes { $0.premultiplyRGBA(count: bitmap.width * bitmap.height) }
        return Bitmap(width: bitmap.width, height: bitmap.height, pixels: pixels)
    }

    /// One of the documents above, by the name the parameterised tests give.
    static func document(named name: String) -> String {
        [("shapes", shapes), ("gradient", gradient), ("viewBox", viewBox), ("text", text)].first { $0.0 == name }!.1
    }

    static func decode(_ svg: String, _ options: DecodingOptions = DecodingOptions()) throws -> DecodedImage {
        try ImageDecoders.Registry.shared.decode(Data(svg.utf8), options: options)
    }

    @Test(arguments: ["shapes", "gradient", "viewBox", "text"])
    func drawsAsRsvgConvertAtTheDocumentsSize(_ name: String) throws {
        let svg = Self.document(named: name)
        let image = try Self.decode(svg)
        let reference = try Self.reference(svg)
        #expect(image.format == .svg && image.frameCount == 1 && image.orientation == .up)
        try #require(image.width == reference.width && image.height == reference.height, "\(image.width)×\(image.height)")
        let difference = Self.throughPNG(image.bitmap).difference(to: reference)
        #expect(difference.maximum == 0, "\(name): off by up to \(difference.maximum), \(difference.total) in all")
        #expect(image.bitmap.isPremultiplied)
        // Drawn, not blank: the reference has colour where the image must.
        #expect(image.bitmap.hasAlpha || name != "shapes")
        if name == "text" {
            let inked = stride(from: 3, to: image.bitmap.pixels.count, by: 4).filter { image.bitmap.pixels[$0] > 128 }.count
            #expect(inked > 40, "the glyphs are drawn (\(inked) pixels)")
        }
    }

    @Test func theViewBoxIsScaledToTheTargetSize() throws {
        // 32×16 declared, fitted into 128×128: 128×64, enlarged since a vector has the detail.
        let image = try Self.decode(Self.viewBox, DecodingOptions(targetSize: .thumbnail(128)))
        try #require(image.width == 128 && image.height == 64, "\(image.width)×\(image.height)")
        let reference = try Self.reference(Self.viewBox, width: 128, height: 64)
        #expect(Self.throughPNG(image.bitmap).difference(to: reference).maximum == 0)
        #expect(image.bitmap[16, 32] == (0, 0, 255, 255))
        // Shrunk too, and filled: the box's shape, the middle kept.
        let small = try Self.decode(Self.shapes, DecodingOptions(targetSize: .thumbnail(32)))
        #expect(small.width == 32 && small.height == 24)
        #expect(Self.throughPNG(small.bitmap).difference(to: try Self.reference(Self.shapes, width: 32, height: 24)).maximum == 0)
        let filled = try Self.decode(Self.shapes, DecodingOptions(targetSize: TargetSize(width: 20, height: 20, contentMode: .aspectFill)))
        #expect(filled.width == 20 && filled.height == 20)
    }

    @Test func isSniffedFromItsRootElement() {
        let documents = [
            "\u{FEFF}<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
            "<?xml version=\"1.0\"?>\n<!-- made by hand -->\n<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
            "<?xml version=\"1.0\"?><!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\"><svg/>",
            "<!DOCTYPE svg [ <!ENTITY a \"b\"> ]><svg:svg xmlns:svg=\"http://www.w3.org/2000/svg\"/>",
        ]
        for document in documents { #expect(ImageFormat.detect(Array(document.utf8)) == .svg, "\(document)") }
        let others = [
            "<html><body><svg xmlns=\"http://www.w3.org/2000/svg\"/></body></html>",
            "<?xml version=\"1.0\"?><rss><svg/></rss>",
            "<!-- <svg> in a comment -->",
            "<svgfoo/>",
        ]
        for document in others { #expect(ImageFormat.detect(Array(document.utf8)) == nil, "\(document)") }
    }

    /// A red PNG beside the document, referenced by an absolute `file:` URL:
    /// `rsvg-convert`, given the document as a file, draws it (so the reference is a
    /// working one); Imago, reading from memory with no base, does not.
    @Test func filesTheDocumentReferencesAreNotRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-svg-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let red = Bitmap(width: 4, height: 4, pixels: [UInt8](repeating: 0, count: 64).enumerated().map { $0.offset % 4 == 0 || $0.offset % 4 == 3 ? 255 : 0 })
        let png = folder.appendingPathComponent("red.png")
        try ImageEncoders.PNG().encode(red).write(to: png)
        let svg = """
            <svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="8" height="8">
              <image x="0" y="0" width="8" height="8" href="\(png.absoluteString)"/>
              <image x="0" y="0" width="8" height="8" xlink:href="file:///etc/passwd"/>
            </svg>
            """
        let followed = try Self.reference(svg, in: folder)
        #expect(followed[4, 4] == (255, 0, 0, 255), "rsvg-convert should draw the referenced file")
        let image = try Self.decode(svg)
        #expect(image.width == 8 && image.height == 8)
        #expect(!image.bitmap.pixels.contains { $0 != 0 }, "a referenced file was drawn")
        // What librsvg always reads, a data: URL, still draws.
        let inline = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"8\" height=\"8\"><image width=\"8\" height=\"8\" href=\"data:image/png;base64,"
            + (try Data(contentsOf: png)).base64EncodedString() + "\"/></svg>"
        #expect(try Self.decode(inline).bitmap[4, 4] == (255, 0, 0, 255))
    }

    @Test(arguments: [
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><rect width=\"5\"",
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\"><g></svg>",
        "<svg \u{0}\u{1}\u{2} garbage",
        "<svg xmlns=\"http://www.w3.org/2000/svg\"/>",
    ])
    func brokenDocumentsGetATypedError(_ svg: String) {
        #expect(ImageFormat.detect(Array(svg.utf8)) == .svg)
        let error = #expect(throws: ImagoError.self) { try Self.decode(svg) }
        #expect(error?.isDecodingFailure(.svg) == true, "\(String(describing: error))")
    }

    @Test func aHugeDeclaredSizeIsDrawnWithinThePixelLimit() throws {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"2000000\" height=\"1000000\"><rect width=\"100%\" height=\"100%\" fill=\"red\"/></svg>"
        let image = try Self.decode(svg, DecodingOptions(maximumPixelCount: 20_000))
        #expect(image.width == 200 && image.height == 100, "\(image.width)×\(image.height)")
        #expect(image.bitmap[100, 50] == (255, 0, 0, 255))
        // The memory budget bounds it too, and cairo's largest side: never more than asked.
        var budgeted = DecodingOptions()
        budgeted.memoryBudget = 4 * 80_000
        let small = try Self.decode(svg, budgeted)
        // The raster gets what the document's tree (two elements) leaves of the budget.
        #expect(small.width * small.height * 4 + 2 * ImageDecoders.SVG.bytesPerElement <= 4 * 80_000)
        #expect(small.width * small.height > 75_000 && abs(small.width - 2 * small.height) <= 1, "\(small.width)×\(small.height)")
        #expect(ImageDecoders.SVG.rasterSize(intrinsicWidth: 1e12, intrinsicHeight: 1, options: DecodingOptions()) == (32767, 1))
        let thumbnail = try Self.decode(svg, DecodingOptions(targetSize: .thumbnail(64)))
        #expect(thumbnail.width == 64 && thumbnail.height == 32)
    }

    /// Groups of ten `<use>` of the group before, `levels` deep: 10^levels elements drawn.
    static func useBomb(levels: Int) -> String {
        var svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" width=\"10\" height=\"10\"><defs><rect id=\"a0\" width=\"1\" height=\"1\" fill=\"red\"/>"
        for level in 1...levels {
            svg += "<g id=\"a\(level)\">" + String(repeating: "<use xlink:href=\"#a\(level - 1)\"/>", count: 10) + "</g>"
        }
        return svg + "</defs><use xlink:href=\"#a\(levels)\"/></svg>"
    }

    static func referenced(_ svg: String) -> Int {
        Array(svg.utf8).withUnsafeBufferPointer { SVGReferences.referencedElements(in: $0) }
    }

    @Test func referencesThatMultiplyAreRefusedBeforeLibrsvgDraws() throws {
        // librsvg would walk 500,000 references (seconds of a core) before refusing this.
        let bomb = Self.useBomb(levels: 11)
        #expect(Self.referenced(bomb) > SVGReferences.limit)
        let error = #expect(throws: ImagoError.self) { try Self.decode(bomb) }
        guard case .decodingFailed(.svg, let reason, nil, _)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(reason.contains("references"))
        // Ten thousand is a document librsvg draws (counted about five times over:
        // what <defs> holds counts as drawn too, and the groups and uses on the way).
        let modest = Self.useBomb(levels: 4)
        #expect(Self.referenced(modest) > 10_000 && Self.referenced(modest) < 60_000)
        #expect(try Self.decode(modest).bitmap[0, 0] == (255, 0, 0, 255))
        // Counted as librsvg follows them: three uses of one rectangle add three.
        let three = "<svg xmlns=\"http://www.w3.org/2000/svg\"><defs><rect id=\"r\"/></defs><use href=\"#r\"/><use href=\"#r\"/><svg:use xmlns:svg=\"http://www.w3.org/2000/svg\" xlink:href='#r'/></svg>"
        #expect(Self.referenced(three) == 3)
        #expect(Self.referenced(Self.shapes) == 0)
        // A cycle ends the count (librsvg draws nothing of it); references in
        // comments and CDATA are not references.
        let cycle = "<svg><g id=\"a\"><use href=\"#b\"/></g><g id=\"b\"><use href=\"#a\"/></g><!-- <use href=\"#a\"/> --><![CDATA[<use href=\"#a\"/>]]></svg>"
        #expect(Self.referenced(cycle) < 10)
        let drawn = try Self.decode(cycle.replacingOccurrences(of: "<svg>", with: "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"4\" height=\"4\">"))
        #expect(drawn.bitmap.hasAlpha)
    }

    /// librsvg's tree for a document of many elements takes more memory than its
    /// raster (1.6 GB for 900,000 rectangles in a 25 MB file): each element counts
    /// against the memory budget, before librsvg reads the document.
    @Test func aDocumentWhoseTreeWouldNotFitTheBudgetIsRefusedBeforeLibrsvgReadsIt() throws {
        let svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"100\" height=\"100\">"
            + String(repeating: "<rect width=\"100\" height=\"100\"/>", count: 40_000) + "</svg>"
        var options = DecodingOptions(targetSize: .thumbnail(64))
        let bytes = 40_001 * ImageDecoders.SVG.bytesPerElement
        #expect(throws: ImagoError.overMemoryBudget(format: .svg, bytes: bytes, budget: DecodingOptions.defaultThumbnailMemoryBudget)) {
            try Self.decode(svg, options)
        }
        options.memoryBudget = 256 << 20
        let image = try Self.decode(svg, options)
        #expect(image.width == 64 && image.height == 64 && image.bitmap[0, 0].a == 255)
    }

    @Test func aDeadlineThatHasPassedStopsTheDecode() {
        var options = DecodingOptions()
        options.timeout = 0
        #expect(throws: ImagoError.decodingTimedOut(format: .svg, seconds: 0)) { try Self.decode(Self.gradient, options) }
    }

    /// A thousand canvas-wide blurs, each some 0.08 s of librsvg's work here: over a
    /// minute drawn to the end. With a deadline the render is stopped at librsvg's
    /// next call on its context after it.
    static let slowDocument = """
        <svg xmlns="http://www.w3.org/2000/svg" width="1000" height="1000">
        <filter id="f" filterUnits="userSpaceOnUse" x="0" y="0" width="1000" height="1000"><feGaussianBlur stdDeviation="20"/></filter>
        \((0..<1000).map { "<rect x=\"\($0)\" width=\"5\" height=\"1000\" fill=\"blue\" filter=\"url(#f)\"/>" }.joined())
        </svg>
        """

    @Test func aDeadlinePassingWhileLibrsvgDrawsStopsTheRender() {
        var options = DecodingOptions()
        options.timeout = 0.3
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: ImagoError.decodingTimedOut(format: .svg, seconds: 0.3)) { try Self.decode(Self.slowDocument, options) }
        let elapsed = clock.now - start
        print("a render of a thousand blurs with a 0.3 s deadline: stopped after \(elapsed)")
        // A loaded machine may take several times longer per element; drawn to the
        // end the document takes over a minute.
        #expect(elapsed < .seconds(20))
    }

    @Test(arguments: ["shapes", "gradient", "viewBox", "text"])
    func aWatchedRenderDrawsTheSameBytes(_ name: String) throws {
        let svg = Self.document(named: name)
        var watched = DecodingOptions()
        watched.timeout = 600
        #expect(try Self.decode(svg, watched).bitmap == Self.decode(svg).bitmap)
    }
}
#endif
