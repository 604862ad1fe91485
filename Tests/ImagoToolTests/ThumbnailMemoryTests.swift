#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The sanitizers' allocators and shadow memory make a process's peak meaningless.
private let underSanitizer = ProcessInfo.processInfo.environment["IMAGO_SANITIZER"] != nil

/// Thumbnails of huge files, measured in a fresh `imago` process: its peak stays far
/// below the full-size canvas.
@Suite struct ThumbnailMemoryTests {
    /// A 256 px thumbnail of an 11000² PNG (an all-black image whose rows compress
    /// to almost nothing): its canvas would be 484 MB; the process peaks far lower.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aPNGThumbnailOfAnElevenThousandPixelSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("huge.png")
        try await offThePool { try Self.hugeBlackPNG.write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of an 11000² PNG (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest; its canvas is 461 MB)")
        #expect(peak < 128 * 1024)
    }

    /// A 256 px thumbnail of an 11000² TIFF in Deflate strips of 16 rows.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aTIFFThumbnailOfAnElevenThousandPixelSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("huge.tif")
        try await offThePool { try Self.blackTIFF(width: 11_000, height: 11_000, rowsPerStrip: 16).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of an 11000² TIFF in 688 strips (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    /// A 256 px thumbnail of an animation on an 11000² canvas (957 MB when libwebp
    /// composited it at full size) peaks far lower.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aWebPAnimationThumbnailOnAnElevenThousandPixelCanvasStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("canvas.webp")
        try await offThePool { try Self.largeCanvasWebP(side: 11_000, frameSide: 1000).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of a 4-frame animated WebP on an 11000² canvas (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    /// A 256 px thumbnail of a two-frame GIF whose frames cover an 11000² screen
    /// (the full-size canvas alone would be 484 MB).
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aGIFThumbnailOfAnElevenThousandPixelScreenStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("screen.gif")
        try await offThePool { try Self.solidGIF(side: 11_000, colours: [1, 2]).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of a 2-frame GIF covering an 11000² screen (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    /// The tool refusing that file as a thumbnail peaks near its rest (libavif
    /// scaling it took 684 MB).
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func anAVIFClaimingElevenThousandPixelsSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("lying.avif")
        try Self.lyingAVIF(side: 11_000).write(to: file)
        let (rest, peak) = try await Self.peaks(of: file, refused: true)
        print("peak RSS of a 256 px thumbnail of a \(Self.size(of: file)) AVIF whose ispe claims 11000² over a 40×24 frame: \(peak / 1024) MB (\(rest / 1024) MB at rest), refused")
        #expect(peak < 128 * 1024)
    }

    /// The tool's peak RSS in KB at rest and making a 256 px thumbnail of `file`,
    /// which must decode (or, with `refused`, must fail).
    static func peaks(of file: URL, refused: Bool = false) async throws -> (rest: Int, peak: Int) {
        let rest = try await Tool.peakMemoryAtRest()
        return (rest, try await Tool.peakMemory(decoding: file, thumbnail: 256, refused: refused))
    }
}
#endif
