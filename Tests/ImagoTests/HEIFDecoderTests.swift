#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The HEIF decoder against files written by libheif's `heif-enc` (x265) from small
/// PNGs (`Fixtures/heic/make_fixtures.sh`), each checked against `heif-convert`'s
/// decode: the same library and HEVC decoder, so opaque files match exactly; alpha
/// may differ by 1 (premultiplied here, straight in the reference PNG).
@Suite struct HEIFDecoderTests {
    static let cases: [String: Int] = ["still.heic": 0, "lossless.heic": 0, "alpha.heic": 1]

    @Test(arguments: HEIFDecoderTests.cases.keys.sorted())
    func decodesLikeTheReference(_ name: String) throws {
        let tolerance = try #require(Self.cases[name])
        let image = try ImageDecoders.HEIF().decode(try Fixture.data("heic/" + name), options: DecodingOptions())
        let reference = try Fixture.reference("heic/" + name.replacingOccurrences(of: ".heic", with: ".ref.png"))
        #expect(image.format == .heic)
        try #require(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)×\(image.height)")
        let difference = image.bitmap.difference(to: reference)
        #expect(difference.maximum <= tolerance, "\(name): off by up to \(difference.maximum)")
        #expect(image.bitmap.isPremultiplied)
    }

    @Test func everyFixtureHasACase() throws {
        for name in try Fixture.files("heic", suffix: ".heic") {
            #expect(Self.cases[name] != nil, "\(name) has no expected decode")
        }
    }

    @Test func alphaIsKeptAndSniffingFindsHEIC() throws {
        let alpha = try Fixture.data("heic/alpha.heic")
        #expect(ImageFormat.detect(alpha) == .heic)
        #expect(try ImageDecoders.Registry().decode(alpha).bitmap.hasAlpha)
        #expect(try !ImageDecoders.HEIF().decode(try Fixture.data("heic/still.heic"), options: DecodingOptions()).bitmap.hasAlpha)
    }

    /// A thumbnail is resampled from libheif's pixels without a full-size copy, to
    /// the bitmap a full decode fitted afterwards would give.
    @Test(arguments: ["still.heic", "alpha.heic", "lossless.heic"])
    func aThumbnailIsTheFullDecodeFitted(_ name: String) throws {
        let data = try Fixture.data("heic/" + name)
        let full = try ImageDecoders.HEIF().decode(data, options: DecodingOptions())
        for target in [TargetSize.thumbnail(20), TargetSize(width: 10, height: 10, contentMode: .aspectFill)] {
            let thumbnail = try ImageDecoders.HEIF().decode(data, options: DecodingOptions(targetSize: target))
            #expect(thumbnail.bitmap == full.bitmap.fitted(to: target), "\(name) at \(target)")
        }
    }

    @Test func hugeImagesAreRefusedFromTheHeader() throws {
        #expect(throws: ImagoError.imageTooLarge(width: 40, height: 24, frames: 1, limit: 500)) {
            try ImageDecoders.HEIF().decode(try Fixture.data("heic/still.heic"), options: DecodingOptions(maximumPixelCount: 500))
        }
    }

    @Test(arguments: ["still.heic", "alpha.heic"])
    func truncatedFilesFail(_ name: String) throws {
        let data = try Fixture.data("heic/" + name)
        for length in Set([0, 12, 40, data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            let error = ImageDecoders.HEIF().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.heic) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    /// A grid of 576 tiles, all one 256 px tile of noise (`Fixtures/heic/slow/make_grid.py`):
    /// 6144 × 6144, some five seconds of libheif's decoding on a 2 GHz core. It stops at
    /// its deadline, a tile later at most, where libheif alone would decode to the end.
    @Test func aGridStopsAtItsDeadline() throws {
        let data = try Fixture.data("heic/slow/grid.heic")
        var options = DecodingOptions()
        options.timeout = 0.2
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: ImagoError.decodingTimedOut(format: .heic, seconds: 0.2)) {
            try ImageDecoders.HEIF().decode(data, options: options)
        }
        let elapsed = clock.now - start
        print("a 576-tile HEIF grid with a 0.2 s deadline: stopped after \(elapsed)")
        // A loaded machine takes longer for each tile; the whole grid is seconds.
        #expect(elapsed < .seconds(2))
    }

    /// libheif holds the grid's whole image in planes, the pixels it makes from them
    /// and Imago's copy: 11 bytes a pixel, counted before anything is decoded.
    @Test func aGridIsCountedAgainstTheBudget() throws {
        var options = DecodingOptions()
        options.memoryBudget = 128 << 20
        #expect(throws: ImagoError.overMemoryBudget(format: .heic, bytes: 6144 * 6144 * 11, budget: 128 << 20)) {
            try ImageDecoders.HEIF().decode(try Fixture.data("heic/slow/grid.heic"), options: options)
        }
    }

    /// A fuzz-found file whose 40×24 image has an alpha plane coded as 11273×40937: it
    /// took 1.4 GB and seconds to decode; the plane is refused before it is allocated.
    @Test func anAlphaPlaneLargerThanTheImageIsRefused() throws {
        let data = try Fixture.data("heic/regression/slow-alpha.heic")
        guard case .decodingFailed(format: .heic, _, let codec, _)? = ImageDecoders.HEIF().failure(data) else {
            Issue.record("the oversized alpha plane was not refused")
            return
        }
        #expect(codec?.message.contains("11273x40937") == true, "\(String(describing: codec))")
    }

    /// A fuzz-found file whose grid is derived from itself: libheif recursed until the
    /// process ran out of threads and aborted. Refused before libheif sees it.
    @Test(arguments: ["grid-cycle.heic", "grid-cycle-long-box.heic", "alpha-grid-cycle.heic"])
    func aGridDerivedFromItselfIsRefused(_ name: String) throws {
        let data = try Fixture.data("heic/regression/" + name)
        guard case .decodingFailed(format: .heic, let reason, _, _)? = ImageDecoders.HEIF().failure(data) else {
            Issue.record("the self-derived grid was not refused")
            return
        }
        #expect(reason == "image 2 is derived from itself")
    }

    /// `meta` holding an `iref` (version 0) with the given `dimg` references.
    static func container(_ references: [(from: UInt16, to: [UInt16])]) -> [UInt8] {
        func be(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * (count - 1 - $0))) } }
        func box(_ type: String, _ body: [UInt8]) -> [UInt8] { be(body.count + 8, 4) + Array(type.utf8) + body }
        let dimgs = references.flatMap { box("dimg", be(Int($0.from), 2) + be($0.to.count, 2) + $0.to.flatMap { be(Int($0), 2) }) }
        return box("ftyp", Array("heicmif1".utf8)) + box("meta", [0, 0, 0, 0] + box("hdlr", [UInt8](repeating: 0, count: 24)) + box("iref", [0, 0, 0, 0] + dimgs))
    }

    @Test func derivationReferencesAreChecked() {
        func problem(_ references: [(from: UInt16, to: [UInt16])]) -> String? {
            Self.container(references).withUnsafeBufferPointer { HEIFReferences.problem(in: $0) }
        }
        #expect(problem([(1, [2, 3, 4, 5])]) == nil, "a grid of four tiles")
        #expect(problem([(1, [2, 3]), (4, [1, 5])]) == nil, "an overlay of a grid")
        #expect(problem([(1, [1])]) == "image 1 is derived from itself")
        #expect(problem([(1, [2]), (2, [3]), (3, [1])])?.contains("derived from itself") == true)
        #expect(problem([(1, [2]), (2, [3]), (3, [4]), (4, [5]), (5, [6])]) == "derived images are nested more than 4 deep")
        #expect([UInt8]().withUnsafeBufferPointer { HEIFReferences.problem(in: $0) } == nil)
        let cut = Array(Self.container([(1, [1])]).dropLast(3))
        #expect(cut.withUnsafeBufferPointer { HEIFReferences.problem(in: $0) } == nil, "a reference cut short names nothing")
        // A reference box claiming more bytes than its container has is read as far
        // as it goes, as libheif reads it (found by fuzzing).
        var long = Self.container([(1, [1])])
        long[long.count - 11] += 2
        #expect(long.withUnsafeBufferPointer { HEIFReferences.problem(in: $0) } == "image 1 is derived from itself")
    }

    @Test func damagedFilesNeverCrash() throws {
        let data = try Fixture.data("heic/still.heic")
        for offset in stride(from: 0, to: data.count, by: 11) {
            for value: UInt8 in [0, 0x80, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = ImageDecoders.HEIF().failure(damaged, limit: 1 << 16) {
                    switch error {
                    case .decodingFailed(format: .heic, _, _, _), .imageTooLarge: break
                    default: Issue.record("byte \(offset) = \(value): \(error)")
                    }
                }
            }
        }
    }
}

/// libheif and libavif are opened when an image needs them, not at start-up.
@Suite struct CodecLibraryLoadingTests {
    @Test func aMissingLibraryIsATypedErrorNamingThePackage() {
        #expect {
            _ = try SharedLibrary(["libimago-no-such-codec.so"], format: .heic, package: "libno-such-codec1")
        } throws: { error in
            guard case ImagoError.decodingFailed(.heic, let reason, let codec?, _) = error else { return false }
            return reason.contains("libno-such-codec1") && codec.message.contains("libimago-no-such-codec.so")
        }
    }

    @Test func aMissingFunctionIsATypedError() throws {
        let library = try SharedLibrary(["libheif.so", "libheif.so.1"], format: .heic, package: "libheif1")
        #expect {
            let _: @convention(c) () -> Void = try library.function("heif_no_such_function", format: .heic)
        } throws: { error in
            guard case ImagoError.decodingFailed(.heic, let reason, nil, _) = error else { return false }
            return reason.contains("heif_no_such_function")
        }
    }
}
#endif
