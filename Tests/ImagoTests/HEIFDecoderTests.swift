#if os(Linux)
import Foundation
import Testing
@testable import Imago

/// The HEIF decoder against files written by libheif's `heif-enc` (x265) from small
/// PNGs (`Fixtures/heic/make_fixtures.sh`), each checked against `heif-convert`'s
/// decode: the same library and HEVC decoder, so opaque files match exactly; alpha
/// may differ by 1 (premultiplied here, straight in the reference PNG).
@Suite struct HEIFDecoderTests {
    static let cases: [String: Int] = ["still.heic": 0, "lossless.heic": 0, "alpha.heic": 1]

    @Test(arguments: HEIFDecoderTests.cases.keys.sorted())
    func decodesLikeTheReference(_ name: String) throws {
        let tolerance = try #require(Self.cases[name])
        let image = try HEIFDecoder().decode(try Fixture.data("heic/" + name), options: DecodingOptions())
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
        #expect(try ImageDecoderRegistry().decode(alpha).bitmap.hasAlpha)
        #expect(try !HEIFDecoder().decode(try Fixture.data("heic/still.heic"), options: DecodingOptions()).bitmap.hasAlpha)
    }

    @Test func hugeImagesAreRefusedFromTheHeader() throws {
        #expect(throws: ImagoError.imageTooLarge(width: 40, height: 24, frames: 1, limit: 500)) {
            try HEIFDecoder().decode(try Fixture.data("heic/still.heic"), options: DecodingOptions(maximumPixelCount: 500))
        }
    }

    @Test(arguments: ["still.heic", "alpha.heic"])
    func truncatedFilesFail(_ name: String) throws {
        let data = try Fixture.data("heic/" + name)
        for length in Set([0, 12, 40, data.count / 10, data.count / 2, data.count * 9 / 10, data.count - 1]) {
            let error = HEIFDecoder().failure(data.prefix(length))
            #expect(error?.isDecodingFailure(.heic) == true, "\(name) cut to \(length): \(String(describing: error))")
        }
    }

    /// A fuzz-found file whose 40×24 image has an alpha plane coded as 11273×40937: it
    /// took 1.4 GB and seconds to decode; the plane is refused before it is allocated.
    @Test func anAlphaPlaneLargerThanTheImageIsRefused() throws {
        let data = try Fixture.data("heic/regression/slow-alpha.heic")
        guard case .decodingFailed(format: .heic, _, let codec)? = HEIFDecoder().failure(data) else {
            Issue.record("the oversized alpha plane was not refused")
            return
        }
        #expect(codec?.message.contains("11273x40937") == true, "\(String(describing: codec))")
    }

    @Test func damagedFilesNeverCrash() throws {
        let data = try Fixture.data("heic/still.heic")
        for offset in stride(from: 0, to: data.count, by: 11) {
            for value: UInt8 in [0, 0x80, 0xFF] {
                var damaged = data
                damaged[offset] = value
                if let error = HEIFDecoder().failure(damaged, limit: 1 << 16) {
                    switch error {
                    case .decodingFailed(format: .heic, _, _), .imageTooLarge: break
                    default: Issue.record("byte \(offset) = \(value): \(error)")
                    }
                }
            }
        }
    }
}
#endif
