#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The AVIF decoder against files written by libavif's `avifenc` (aom) from small
/// PNGs (`Fixtures/avif/make_fixtures.sh`), each checked against `avifdec`'s 8-bit
/// decode with dav1d. Opaque files must match exactly (same library, same AV1
/// decoder, same YUV conversion); alpha may differ by 1 where Imago's bitmap is
/// premultiplied by libavif and the reference by Imago's PNG reader, and 10-bit data
/// by 2, which avifdec scales to 8 bits on another path (libyuv's) than the RGB
/// conversion Imago asks for.
@Suite struct AVIFDecoderTests {
    static let cases: [String: Int] = [
        "still-420.avif": 0, "lossless-444.avif": 0, "ten-bit.avif": 2, "twelve-bit.avif": 0,
        "alpha.avif": 1, "irot1-imir1.avif": 0,
    ]

    @Test(arguments: AVIFDecoderTests.cases.keys.sorted())
    func decodesLikeTheReference(_ name: String) throws {
        let tolerance = try #require(Self.cases[name])
        let image = try ImageDecoders.AVIF().decode(try Fixture.data("avif/" + name), options: DecodingOptions())
        let reference = try Fixture.reference("avif/" + name.replacingOccurrences(of: ".avif", with: ".ref.png"))
        #expect(image.format == .avif && image.frames.count == 1)
        try #require(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)×\(image.height)")
        let difference = image.bitmap.difference(to: reference)
        #expect(difference.maximum <= tolerance, "\(name): off by up to \(difference.maximum)")
        #expect(image.bitmap.isPremultiplied)
    }

    @Test func everyFixtureHasACase() throws {
        for name in try Fixture.files("avif", suffix: ".avif") where name != "animated.avif" {
            #expect(Self.cases[name] != nil, "\(name) has no expected decode")
        }
    }

    @Test func alphaIsKept() throws {
        let image = try ImageDecoders.AVIF().decode(try Fixture.data("avif/alpha.avif"), options: DecodingOptions())
        #expect(image.bitmap.hasAlpha)
        let opaque = try ImageDecoders.AVIF().decode(try Fixture.data("avif/still-420.avif"), options: DecodingOptions())
        #expect(!opaque.bitmap.hasAlpha)
    }

    /// Three frames at a timescale of 10 with durations 1, 3 and 1.
    @Test func sequencesDecodeEveryFrameWithItsDuration() throws {
        let image = try ImageDecoders.AVIF().decode(try Fixture.data("avif/animated.avif"), options: DecodingOptions())
        #expect(image.frames.count == 3 && image.loopCount == 0)
        #expect(image.frames.map(\.duration) == [0.1, 0.3, 0.1])
        for index in 0..<3 {
            let reference = try Fixture.reference("avif/animated.\(index).ref.png")
            #expect(image.frames[index].bitmap.difference(to: reference).maximum == 0, "frame \(index)")
        }
        // The canvas counts once against the pixel limit; the frame count has its
        // own limit, from the header.
        #expect(try ImageDecoders.AVIF().decode(try Fixture.data("avif/animated.avif"), options: DecodingOptions(maximumPixelCount: 40 * 24)).frameCount == 3)
        #expect(throws: ImagoError.tooManyFrames(count: 3, limit: 2)) {
            try ImageDecoders.AVIF().decode(try Fixture.data("avif/animated.avif"), options: DecodingOptions(maximumFrameCount: 2))
        }
    }

    @Test func transformsAreReportedAndCanBeLeftAlone() throws {
        let data = try Fixture.data("avif/irot1-imir1.avif")
        let upright = try ImageDecoders.AVIF().decode(data, options: DecodingOptions())
        #expect(upright.orientation == .rightMirrored && upright.width == 24 && upright.height == 40)
        let stored = try ImageDecoders.AVIF().decode(data, options: DecodingOptions(appliesOrientation: false))
        #expect(stored.width == 40 && stored.height == 24)
    }

    /// Every irot/imir pair against the same turn done step by step on a bitmap whose
    /// pixels say where they came from.
    @Test func everyTransformMapsToItsOrientation() {
        let source = Bitmap.coordinates(width: 3, height: 2)
        func turnAnticlockwise(_ b: Bitmap) -> Bitmap { b.applying(.left) }
        func flipVertically(_ b: Bitmap) -> Bitmap { b.applying(.downMirrored) }
        func flipHorizontally(_ b: Bitmap) -> Bitmap { b.applying(.upMirrored) }
        for turns in 0..<4 {
            for mirror in [nil, 0, 1] as [Int?] {
                var expected = source
                for _ in 0..<turns { expected = turnAnticlockwise(expected) }
                if mirror == 0 { expected = flipVertically(expected) }
                if mirror == 1 { expected = flipHorizontally(expected) }
                let orientation = ImageDecoders.AVIF.orientation(quarterTurnsAnticlockwise: turns, mirror: mirror)
                #expect(source.applying(orientation) == expected, "irot \(turns), imir \(String(describing: mirror))")
            }
        }
    }

    @Test func registryAndSniffingFindAVIF() throws {
        let data = try Fixture.data("avif/still-420.avif")
        #expect(ImageFormat.detect(data) == .avif)
        #expect(try ImageDecoders.Registry().decode(data).format == .avif)
        #expect(ImageFormat.detect(try Fixture.data("avif/animated.avif")) == .avif)
    }

    // MARK: Bad input

    @Test(arguments: ["still-420.avif", "alpha.avif", "animated.avif", "ten-bit.avif"])
    func truncatedFilesFail(_ name: String) throws {
        let data = try Fixture.data("avif/" + name)
        for length in Set([0, 12, 40, data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            let error = ImageDecoders.AVIF().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.avif) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    @Test(arguments: ["still-420.avif", "animated.avif"])
    func damagedFilesNeverCrash(_ name: String) throws {
        let data = try Fixture.data("avif/" + name)
        for offset in stride(from: 0, to: data.count, by: 11) {
            for value: UInt8 in [0, 0x80, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = ImageDecoders.AVIF().failure(damaged, limit: 1 << 16) {
                    switch error {
                    case .decodingFailed(format: .avif, _, _, _), .imageTooLarge: break
                    default: Issue.record("\(name) byte \(offset) = \(value): \(error)")
                    }
                }
            }
        }
    }

    /// A still's thumbnail is converted in bands of rows (1,024 for these 64 px wide
    /// images, so three bands) into the streaming resampler: the same bitmap as the
    /// full decode fitted, with 4:2:0 and 4:2:2 chroma filtered across the bands' edges
    /// as across the whole image.
    @Test(arguments: ["bands/tall-420.avif", "bands/tall-422.avif"])
    func aThumbnailConvertedInBandsIsTheFullDecodeFitted(_ name: String) throws {
        let data = try Fixture.data("avif/" + name)
        let full = try ImageDecoders.AVIF().decode(data, options: DecodingOptions())
        #expect(full.width == 64 && full.height == 2100)
        for target in [TargetSize.thumbnail(700), TargetSize(width: 40, height: 40, contentMode: .aspectFill), TargetSize(width: 31, height: 1999)] {
            let thumbnail = try ImageDecoders.AVIF().decode(data, options: DecodingOptions(targetSize: target))
            #expect(thumbnail.bitmap == full.bitmap.fitted(to: target), "\(name) at \(target)")
        }
    }

    /// libavif opens an AV1 decoder for each tile of a grid and keeps them all until
    /// the image is made: this 50 KB file of 1,024 tiles (`Fixtures/make_grid.py`)
    /// held 475 MB to make a 2048² image. The decoders count against the budget
    /// before any is opened.
    @Test func everyTileOfAGridCountsAgainstTheBudget() throws {
        let data = try Fixture.data("avif/slow/many-tiles.avif")
        var options = DecodingOptions()
        options.memoryBudget = 256 << 20
        do {
            _ = try ImageDecoders.AVIF().decode(data, options: options)
            Issue.record("a grid of 1,024 tiles was decoded within 256 MiB")
        } catch {
            guard case .overMemoryBudget(format: .avif, let bytes, let budget) = error else { Issue.record("\(error)"); return }
            #expect(bytes > 1024 * 400_000 && budget == 256 << 20, "counted \(bytes) bytes")
        }
        // A photo's one tile is well within the same budget.
        #expect(try ImageDecoders.AVIF().decode(try Fixture.data("avif/still-420.avif"), options: options).width > 0)
    }

    /// libavif, libheif and libjxl decode only at full size, so a thumbnail's budget
    /// would refuse a phone's photo; unless one is set, they get the full-size budget.
    @Test func fullSizeCodecsGetTheFullSizeBudgetUnlessOneIsSet() throws {
        var thumbnail = DecodingOptions(targetSize: TargetSize(width: 256, height: 256))
        let photo = 4032 * 3024 * 11  // a 12-megapixel HEIC's planes and pixels
        #expect(throws: ImagoError.self) { try thumbnail.checkMemory(photo, format: .heic) }
        try thumbnail.checkFullSizeMemory(photo, format: .heic)
        thumbnail.memoryBudget = 64 << 20
        #expect(throws: ImagoError.overMemoryBudget(format: .heic, bytes: photo, budget: 64 << 20)) {
            try thumbnail.checkFullSizeMemory(photo, format: .heic)
        }
    }

    @Test func libavifsWordIsKept() throws {
        let data = try Fixture.data("avif/still-420.avif")
        let error = try #require(ImageDecoders.AVIF().failure(data.prefix(data.count / 2)))
        #expect(error.codecMessage?.library == "libavif")
    }
}
#endif

#if os(Linux)
/// The `Accept` header names AVIF and WebP (this build decodes both), and an AVIF
/// served over HTTP loads through the whole pipeline.
@Suite struct AcceptHeaderTests {
    @Test func acceptNamesTheNegotiatedFormatsThisBuildDecodes() {
        #expect(ImageFormat.acceptHeader == "image/avif,image/webp,image/jxl,image/*;q=0.8")
    }

    @Test func theLoaderSendsItAndDecodesTheAVIFItGets() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let loader = ImageLoader(
            configuration: .init(dataLoader: DefaultDataLoader(network: URLSessionDataLoader())), cache: ImageCache())
        server.route("/photo", data: try Fixture.data("avif/still-420.avif"), headers: ["Content-Type": "image/avif"])
        let task = loader.task(with: ImageRequest(url: server.url("/photo")))
        let response = try await (withTimeLimit(120) { await task.value } ?? .failure(.cancelled)).get()
        #expect(response.image.format == .avif && response.image.width == 40)
        #expect(server.requests(for: "/photo").first?.header("accept") == "image/avif,image/webp,image/jxl,image/*;q=0.8")
    }
}
#endif
