#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What a JPEG's start-of-frame marker says about how it was coded, read without
/// libjpeg: the SOF marker (0xC0 baseline, 0xC2 progressive) and the first
/// component's sampling byte (0x22 for 4:2:0, 0x11 for 4:4:4).
private func jpegFrameCoding(_ data: Data) -> (marker: UInt8, lumaSampling: UInt8)? {
    let bytes = [UInt8](data)
    var i = 2
    while i + 11 < bytes.count, bytes[i] == 0xFF {
        let marker = bytes[i + 1]
        if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
            return (marker, bytes[i + 11])
        }
        i += 2 + (Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
    }
    return nil
}

extension Bitmap {
    /// Every pixel the same premultiplied (r, g, b, a).
    fileprivate static func uniform(width: Int, height: Int, _ pixel: [UInt8]) -> Bitmap {
        Bitmap(width: width, height: height, pixels: Array([[UInt8]](repeating: pixel, count: width * height).joined()))
    }

    /// Opaque ramps of 8 levels a pixel (then flat), gentle enough that lossy codecs
    /// reproduce them closely even in a 3×5 image; `bytesPerRow` lets rows be padded.
    fileprivate static func gradient(width: Int, height: Int, bytesPerRow: Int? = nil) -> Bitmap {
        let stride = bytesPerRow ?? width * 4
        var pixels = [UInt8](repeating: 0xEE, count: stride * height)
        for y in 0..<height {
            for x in 0..<width {
                let i = y * stride + x * 4
                pixels[i] = UInt8(60 + min(x, 16) * 8)
                pixels[i + 1] = UInt8(40 + min(y, 16) * 8)
                pixels[i + 2] = 128
                pixels[i + 3] = 255
            }
        }
        return Bitmap(width: width, height: height, bytesPerRow: stride, pixels: pixels)
    }

    /// The largest difference in alpha to `other`.
    fileprivate func alphaDifference(to other: Bitmap) -> Int {
        var maximum = 0
        for y in 0..<height {
            for x in 0..<width {
                maximum = max(maximum, abs(Int(self[x, y].a) - Int(other[x, y].a)))
            }
        }
        return maximum
    }
}

@Suite struct EncoderTests {
    static func decode(_ data: Data) throws -> Bitmap {
        try ImageDecoders.Registry.shared.decode(data).bitmap
    }

    static func corpusBitmap(_ path: String) throws -> Bitmap {
        try decode(try Corpus.data(path))
    }

    static let kodak = "photos/kodak/kodim05.png"

    // MARK: Round trips

    @Test(Corpus.available) func everyEncoderRoundTripsPhotosAtTheirSize() throws {
        let encoders: [any ImageEncoding] = [ImageEncoders.PNG(), ImageEncoders.JPEG(), ImageEncoders.WebP(), ImageEncoders.WebP(lossless: true)]
        for path in [Self.kodak, "jpeg/exif-orientation/Landscape_1.jpg"] {
            let source = try Self.corpusBitmap(path)
            for encoder in encoders {
                let data = try encoder.encode(source)
                #expect(ImageFormat.detect(data) == encoder.format, "\(path) as \(encoder)")
                let image = try ImageDecoders.Registry.shared.decode(data)
                #expect(image.format == encoder.format)
                #expect(image.width == source.width && image.height == source.height, "\(path) as \(encoder)")
            }
        }
    }

    /// Measured on kodim05 (768×512) with libjpeg-turbo 2.1.5: 37.8 dB and 190 KB at
    /// quality 90 (4:4:4), 27.7 dB and 49 KB at quality 30. The floors sit about
    /// 2.5 dB below, room for a codec update without letting a real regression
    /// (wrong colour conversion, lost chroma) through.
    @Test(Corpus.available) func jpegQualityTradesSizeForFidelity() throws {
        let source = try Self.corpusBitmap(Self.kodak)
        let high = try ImageEncoders.JPEG(quality: 90).encode(source)
        let low = try ImageEncoders.JPEG(quality: 30).encode(source)
        let highPSNR = try Self.decode(high).psnr(to: source)
        let lowPSNR = try Self.decode(low).psnr(to: source)
        #expect(highPSNR >= 35, "quality 90: \(highPSNR) dB")
        #expect(lowPSNR >= 25 && lowPSNR < highPSNR - 5, "quality 30: \(lowPSNR) dB")
        #expect(low.count * 3 < high.count, "\(low.count) bytes at 30, \(high.count) at 90")
    }

    /// Measured on kodim05 with libwebp 1.2.4: 35.0 dB and 95 KB at quality 80,
    /// 29.4 dB and 45 KB at quality 30 (JPEG at 85 gives 34.6 dB in 131 KB).
    @Test(Corpus.available) func webpLossyQualityTradesSizeForFidelity() throws {
        let source = try Self.corpusBitmap(Self.kodak)
        let high = try ImageEncoders.WebP(quality: 80).encode(source)
        let low = try ImageEncoders.WebP(quality: 30).encode(source)
        let highPSNR = try Self.decode(high).psnr(to: source)
        let lowPSNR = try Self.decode(low).psnr(to: source)
        #expect(highPSNR >= 33, "quality 80: \(highPSNR) dB")
        #expect(lowPSNR >= 27 && lowPSNR < highPSNR - 3, "quality 30: \(lowPSNR) dB")
        #expect(low.count * 3 / 2 < high.count, "\(low.count) bytes at 30, \(high.count) at 80")
    }

    @Test(Corpus.available) func higherQualityMeansALargerFile() throws {
        let source = try Self.corpusBitmap(Self.kodak)
        let jpeg = try [5, 20, 40, 60, 75, 85, 90, 95, 100].map { try ImageEncoders.JPEG(quality: $0).encode(source).count }
        #expect(jpeg == jpeg.sorted() && Set(jpeg).count == jpeg.count, "\(jpeg)")
        let webp = try [0, 25, 50, 75, 90, 100].map { try ImageEncoders.WebP(quality: Float($0)).encode(source).count }
        #expect(webp == webp.sorted() && Set(webp).count == webp.count, "\(webp)")
    }

    @Test(Corpus.available) func webpLosslessIsExactOnOpaqueImages() throws {
        for source in [try Self.corpusBitmap(Self.kodak), Bitmap.coordinates(width: 16, height: 16)] {
            let decoded = try Self.decode(try ImageEncoders.WebP(lossless: true).encode(source))
            #expect(decoded.difference(to: source).maximum == 0)
        }
    }

    /// Alpha comes back exact. Colour comes back within 1: the bitmap is premultiplied,
    /// the file straight, and libwebp premultiplies on decoding with a fixed-point
    /// multiply that can land one below Imago's rounded one. Measured: basn6a08 off
    /// by at most 1 (772 of 4096 channel values differ), tbbn3p08 (only alpha 0 and
    /// 255) exact. PNG, decoded with Imago's own premultiply, round-trips exactly,
    /// which shows the un-premultiplying loses nothing.
    @Test(Corpus.available) func webpLosslessKeepsAlphaImages() throws {
        for name in ["basn6a08.png", "tbbn3p08.png"] {
            let source = try Self.corpusBitmap("png/pngsuite/\(name)")
            let decoded = try Self.decode(try ImageEncoders.WebP(lossless: true).encode(source))
            #expect(decoded.alphaDifference(to: source) == 0, "\(name)")
            #expect(decoded.difference(to: source).maximum <= 1, "\(name)")
            #expect(decoded.isPremultiplied)
            let png = try Self.decode(try ImageEncoders.PNG().encode(source))
            #expect(png.difference(to: source).maximum == 0, "\(name) through PNG")
        }
    }

    // MARK: Alpha

    /// Lossy WebP codes alpha losslessly by default (alpha_quality 100), so
    /// transparency survives exactly even where the colour does not.
    @Test(Corpus.available) func webpKeepsTransparency() throws {
        for lossless in [false, true] {
            for name in ["basn6a08.png", "tbbn3p08.png"] {
                let source = try Self.corpusBitmap("png/pngsuite/\(name)")
                #expect(source[0, 0] == (0, 0, 0, 0))
                let decoded = try Self.decode(try ImageEncoders.WebP(lossless: lossless).encode(source))
                #expect(decoded[0, 0] == (0, 0, 0, 0), "\(name), lossless: \(lossless)")
                #expect(decoded.alphaDifference(to: source) == 0, "\(name), lossless: \(lossless)")
            }
        }
    }

    /// Half clear, half opaque red: far from the edge, the clear half must come out as
    /// the background. Measured: exactly the background at quality 85.
    @Test func jpegFlattensTransparencyOntoTheBackground() throws {
        var pixels: [UInt8] = []
        for _ in 0..<64 {
            for x in 0..<64 { pixels += x < 32 ? [0, 0, 0, 0] : [200, 0, 0, 255] }
        }
        let bitmap = Bitmap(width: 64, height: 64, pixels: pixels)
        for (background, expected) in [(nil, (255, 255, 255)), (ImageEncoders.JPEG.Color(red: 0, green: 128, blue: 255), (0, 128, 255))] {
            let encoder = background.map { ImageEncoders.JPEG(background: $0) } ?? ImageEncoders.JPEG()
            let decoded = try Self.decode(try encoder.encode(bitmap))
            #expect(decoded.hasAlpha == false)
            for (x, y) in [(4, 4), (8, 32), (12, 60)] {
                let p = decoded[x, y]
                #expect(abs(Int(p.r) - expected.0) <= 2 && abs(Int(p.g) - expected.1) <= 2 && abs(Int(p.b) - expected.2) <= 2,
                        "\(p) for background \(expected)")
            }
            let red = decoded[56, 32]
            #expect(abs(Int(red.r) - 200) <= 3 && red.g <= 3 && red.b <= 3, "\(red)")
        }
    }

    /// A half-transparent colour composites by out = c + (255 − a) × bg / 255; a flat
    /// image at quality 100 (4:4:4) comes back within rounding of YCbCr (measured: off
    /// by at most 1).
    @Test func jpegCompositesTranslucentPixels() throws {
        let bitmap = Bitmap.uniform(width: 16, height: 16, [100, 50, 0, 128])
        for (background, expected) in [(ImageEncoders.JPEG.Color.white, (227, 177, 127)), (.black, (100, 50, 0)),
                                       (ImageEncoders.JPEG.Color(red: 10, green: 20, blue: 30), (105, 60, 15))] {
            let p = try Self.decode(try ImageEncoders.JPEG(quality: 100, background: background).encode(bitmap))[8, 8]
            #expect(abs(Int(p.r) - expected.0) <= 1 && abs(Int(p.g) - expected.1) <= 1 && abs(Int(p.b) - expected.2) <= 1,
                    "\(p), expected \(expected)")
        }
    }

    /// A real alpha image flattened by the encoder matches the same compositing done
    /// here, to within JPEG's error. Measured on basn6a08: 47.7 dB at quality 95
    /// (38.9 dB at 85).
    @Test(Corpus.available) func jpegOfAnAlphaImageMatchesItsCompositeOverWhite() throws {
        let source = try Self.corpusBitmap("png/pngsuite/basn6a08.png")
        var composite = source.pixels
        for i in stride(from: 0, to: composite.count, by: 4) {
            let a = Int(composite[i + 3])
            for c in 0..<3 { composite[i + c] = UInt8(Int(composite[i + c]) + ((255 - a) * 255 + 127) / 255) }
            composite[i + 3] = 255
        }
        let reference = Bitmap(width: source.width, height: source.height, pixels: composite)
        let psnr = try Self.decode(try ImageEncoders.JPEG(quality: 95).encode(source)).psnr(to: reference)
        #expect(psnr >= 44, "\(psnr) dB")
    }

    // MARK: Options

    /// 4:2:0 below quality 90 and 4:4:4 from 90; baseline unless progressive is asked.
    @Test func jpegSubsamplingAndProgressionFollowTheSettings() throws {
        let bitmap = Bitmap.gradient(width: 40, height: 24)
        let cases: [(ImageEncoders.JPEG, marker: UInt8, sampling: UInt8)] = [
            (ImageEncoders.JPEG(quality: 89), 0xC0, 0x22),
            (ImageEncoders.JPEG(quality: 90), 0xC0, 0x11),
            (ImageEncoders.JPEG(), 0xC0, 0x22),
            (ImageEncoders.JPEG(quality: 95, progressive: true), 0xC2, 0x11),
            (ImageEncoders.JPEG(quality: 50, progressive: true), 0xC2, 0x22),
        ]
        for (encoder, marker, sampling) in cases {
            let coding = try #require(jpegFrameCoding(try encoder.encode(bitmap)))
            #expect(coding.marker == marker && coding.lumaSampling == sampling, "quality \(encoder.quality)")
        }
    }

    @Test func qualitiesAreClamped() {
        #expect(ImageEncoders.JPEG(quality: 0).quality == 1)
        #expect(ImageEncoders.JPEG(quality: 250).quality == 100)
        var jpeg = ImageEncoders.JPEG()
        #expect(jpeg.quality == 85)
        jpeg.quality = -3
        #expect(jpeg.quality == 1)
        #expect(ImageEncoders.WebP(quality: -1).quality == 0)
        #expect(ImageEncoders.WebP(quality: 101).quality == 100)
        var webp = ImageEncoders.WebP()
        #expect(webp.quality == 80 && webp.lossless == false)
        webp.quality = 1000
        #expect(webp.quality == 100)
    }

    // MARK: Sizes

    /// Odd sizes stress the codecs' block padding (8×8 and 16×16 macroblocks, 2×2
    /// chroma); padded rows check that the encoders honour bytesPerRow.
    @Test func oddSizesRoundTrip() throws {
        let bitmaps = [
            Bitmap.gradient(width: 1, height: 1), Bitmap.gradient(width: 3, height: 5),
            Bitmap.gradient(width: 1, height: 1000), Bitmap.gradient(width: 1000, height: 1),
            Bitmap.gradient(width: 17, height: 9), Bitmap.gradient(width: 7, height: 3, bytesPerRow: 40),
        ]
        let encoders: [any ImageEncoding] = [
            ImageEncoders.PNG(), ImageEncoders.JPEG(), ImageEncoders.JPEG(quality: 95, progressive: true), ImageEncoders.WebP(), ImageEncoders.WebP(lossless: true),
        ]
        for bitmap in bitmaps {
            for encoder in encoders {
                let decoded = try Self.decode(try encoder.encode(bitmap))
                let size = "\(bitmap.width)×\(bitmap.height) as \(encoder)"
                #expect(decoded.width == bitmap.width && decoded.height == bitmap.height, "\(size)")
                guard decoded.width == bitmap.width && decoded.height == bitmap.height else { continue }
                let difference = decoded.difference(to: bitmap)
                let lossless = encoder is ImageEncoders.PNG || (encoder as? ImageEncoders.WebP)?.lossless == true
                #expect(lossless ? difference.maximum == 0 : difference.mean < 4, "\(size): \(difference)")
            }
        }
        // JPEG reads padded rows in place, without the copy the other encoders make.
        let padded = Bitmap.gradient(width: 7, height: 3, bytesPerRow: 40)
        let compact = Bitmap.gradient(width: 7, height: 3)
        #expect(try ImageEncoders.JPEG().encode(padded) == ImageEncoders.JPEG().encode(compact))
    }

    /// A 1×1 image keeps its colour; the smallest case of every block-padding path.
    @Test func aSinglePixelKeepsItsColour() throws {
        let pixel = Bitmap.uniform(width: 1, height: 1, [30, 140, 220, 255])
        for encoder in [ImageEncoders.JPEG(quality: 95) as any ImageEncoding, ImageEncoders.WebP(quality: 95), ImageEncoders.WebP(lossless: true), ImageEncoders.PNG()] {
            let p = try Self.decode(try encoder.encode(pixel))[0, 0]
            #expect(abs(Int(p.r) - 30) <= 3 && abs(Int(p.g) - 140) <= 3 && abs(Int(p.b) - 220) <= 3 && p.a == 255, "\(encoder): \(p)")
        }
    }

    /// Noise at quality 100 compresses to more than the shim's first guess at the
    /// output size (3/8 byte a pixel), so the output buffer must grow, intact.
    @Test func jpegOutputBufferGrows() throws {
        var generator = SystemRandomNumberGenerator()
        var pixels = [UInt8](repeating: 255, count: 256 * 256 * 4)
        for i in pixels.indices where i % 4 != 3 { pixels[i] = UInt8.random(in: 0...255, using: &generator) }
        let noise = Bitmap(width: 256, height: 256, pixels: pixels)
        let data = try ImageEncoders.JPEG(quality: 100).encode(noise)
        #expect(data.count > 256 * 256 * 3 / 8 + 4096)
        #expect(try Self.decode(data).psnr(to: noise) > 30)
    }

    // MARK: Failures

    /// Past each format's size limit the codec refuses, and the refusal comes back as
    /// `encodingFailed` with its reason; for JPEG this is libjpeg's error longjmp,
    /// landed by the shim.
    @Test func oversizedBitmapsFailWithAReason() throws {
        let wide = Bitmap.uniform(width: 65_501, height: 1, [0, 0, 0, 255])
        #expect {
            try ImageEncoders.JPEG().encode(wide)
        } throws: { error in
            guard case .encodingFailed(.jpeg, let reason, let codec) = error as? ImagoError else { return false }
            return reason.contains("65500") && codec == .init(library: "libjpeg-turbo", message: reason)
        }
        let webpWide = Bitmap.uniform(width: 16_384, height: 1, [0, 0, 0, 255])
        for lossless in [false, true] {
            #expect {
                try ImageEncoders.WebP(lossless: lossless).encode(webpWide)
            } throws: { error in
                guard case .encodingFailed(.webp, let reason, let codec) = error as? ImagoError else { return false }
                return reason.contains("16383") && codec == .init(library: "libwebp", message: "VP8_ENC_ERROR_BAD_DIMENSION")
            }
        }
        // The encoders are stateless: a failure leaves them working.
        #expect(try ImageEncoders.JPEG().encode(Bitmap.gradient(width: 8, height: 8)).count > 0)
    }

    // MARK: Choosing an encoder

    @Test func pathExtensionsNameFormats() {
        let cases: [(String, ImageFormat?)] = [
            ("png", .png), ("PNG", .png), (".png", .png), ("jpg", .jpeg), ("JPEG", .jpeg), ("jpe", .jpeg),
            ("jfif", .jpeg), ("webp", .webp), ("WebP", .webp), ("gif", .gif), ("avif", .avif), ("heic", .heic),
            ("heif", .heic), ("bmp", .bmp), ("tif", .tiff), ("tiff", .tiff), ("ico", .ico), ("svg", .svg),
            ("", nil), (".", nil), ("txt", nil), ("jpgx", nil), ("pngg", nil), ("..png", nil),
        ]
        for (ext, format) in cases {
            #expect(ImageFormat(pathExtension: ext) == format, "\(ext)")
        }
        #expect(ImageFormat(pathExtension: ("photo.JPG" as NSString).pathExtension) == .jpeg)
    }

    @Test func encodersAreFoundForWritableFormats() throws {
        for format in ImageFormat.allCases {
            let encoder = ImageEncoders.encoder(for: format)
            if [.png, .jpeg, .webp].contains(format) {
                #expect(encoder?.format == format, "\(format)")
            } else {
                #expect(encoder == nil, "\(format)")
            }
        }
        #expect(ImageEncoders.encoder(for: .png) is ImageEncoders.PNG)
        #expect((ImageEncoders.encoder(for: .jpeg) as? ImageEncoders.JPEG)?.quality == 85)
        #expect((ImageEncoders.encoder(for: .jpeg, quality: 40) as? ImageEncoders.JPEG)?.quality == 40)
        #expect((ImageEncoders.encoder(for: .jpeg, quality: 400) as? ImageEncoders.JPEG)?.quality == 100)
        #expect((ImageEncoders.encoder(for: .webp) as? ImageEncoders.WebP)?.quality == 80)
        let webp = try #require(ImageEncoders.encoder(for: .webp, quality: 40) as? ImageEncoders.WebP)
        #expect(webp.quality == 40 && webp.lossless == false)
        #expect((ImageEncoders.encoder(for: .webp, quality: 0) as? ImageEncoders.WebP)?.quality == 1)
        #expect(ImageEncoders.encoder(for: .png, quality: 10) is ImageEncoders.PNG)
    }
}
#endif
