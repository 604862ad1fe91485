#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago decode` on the formats added beside JPEG, PNG, GIF and WebP: one fixture of
/// each decodes and is named by its format; a truncated one gets one line and exit 1.
@Suite struct DecodeCommandFormatsTests {
    @Test func everyNewFormatDecodesThroughTheTool() async throws {
        let files = ["bmp/rle8.bmp", "bmp/icon.ico", "bmp/cursor.cur", "tiff/orientation-6.tif",
                     "avif/animated.avif", "heic/alpha.heic", "svg/shapes.svg", "jxl/animated.jxl",
                     "jxl/orientation-6.jxl"].map { Fixture.url($0).path }
        let result = try await Tool.run(["decode"] + files)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let lines = result.stdoutLines
        try #require(lines.count == 9)
        #expect(lines[0].contains("BMP 23×13"))
        #expect(lines[1].contains("ICO 48×48") && lines[2].contains("ICO 32×32"))
        #expect(lines[3].contains("TIFF 17×29"))
        #expect(lines[4].contains("AVIF 40×24, 3 frames"))
        #expect(lines[5].contains("HEIC 40×24"))
        #expect(lines[6].contains("SVG 64×48"))
        #expect(lines[7].contains("JPEG XL 20×12, 3 frames"))
        #expect(lines[8].contains("JPEG XL 24×40") && lines[8].contains("orientation 6"))
    }

    @Test func aTruncatedFileGetsOneLineAndExitOne() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-formats-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var cut: [String] = []
        for name in ["bmp/rgb24.bmp", "tiff/rgb8-lzw.tif", "avif/still-420.avif", "heic/still.heic",
                     "jxl/lossy.jxl", "svg/shapes.svg"] {
            let data = try Fixture.data(name)
            let url = folder.appendingPathComponent((name as NSString).lastPathComponent)
            try data.prefix(data.count / 2).write(to: url)
            cut.append(url.path)
        }
        let result = try await Tool.run(["decode"] + cut)
        #expect(result.status == 1)
        #expect(result.stderrLines.count == cut.count, "\(result.stderr)")
    }
}
#endif
