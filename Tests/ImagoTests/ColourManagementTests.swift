#if os(Linux)
import CLCMS2
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Tagged images made by Pillow (Debian's python3-pil) with profiles from colord-data
/// and profiles Little CMS builds here, and Pillow's ImageCms conversions of them to
/// sRGB as the reference.
enum ColourFixtures {
    static let python = "/usr/bin/python3"

    /// The folder of images and references, made once per test run.
    static let folder: Result<URL, ColourFixtureError> = Result { () throws(ColourFixtureError) in
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-colour-\(getpid())")
        atexit {
            try? FileManager.default.removeItem(at: FileManager.default.temporaryDirectory.appendingPathComponent("imago-colour-\(getpid())"))
        }
        do {
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try displayP3().write(to: folder.appendingPathComponent("p3.icc"))
            try cmyk().write(to: folder.appendingPathComponent("cmyk.icc"))
            try gamma18().write(to: folder.appendingPathComponent("gamma18.icc"))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: python)
            process.arguments = [
                Fixture.root.appendingPathComponent("colour/make-colour-fixtures.py").path, folder.path,
                folder.appendingPathComponent("p3.icc").path, folder.appendingPathComponent("cmyk.icc").path,
                folder.appendingPathComponent("gamma18.icc").path,
            ]
            let errors = Pipe()
            process.standardError = errors
            try process.run()
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else { throw ColourFixtureError(message: message) }
        } catch let error as ColourFixtureError {
            throw error
        } catch {
            throw ColourFixtureError(message: "\(error)")
        }
        return folder
    }

    static func data(_ name: String) throws -> Data {
        try Data(contentsOf: folder.get().appendingPathComponent(name))
    }

    /// Display P3: the P3 primaries, D65, sRGB's curve.
    static func displayP3() -> Data {
        rgbProfile(primaries: [0.680, 0.320, 0.265, 0.690, 0.150, 0.060], curve: srgbCurve())
    }

    /// sRGB's primaries with a pure 1.8 power curve: what gAMA 1/1.8 alone means.
    static func gamma18() -> Data {
        rgbProfile(primaries: [0.64, 0.33, 0.30, 0.60, 0.15, 0.06], curve: cmsBuildGamma(nil, 1.8))
    }

    static func srgbCurve() -> OpaquePointer? {
        var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        return cmsBuildParametricToneCurve(nil, 4, &parameters)
    }

    static func rgbProfile(primaries p: [Double], curve: OpaquePointer?) -> Data {
        var white = cmsCIExyY(x: 0.3127, y: 0.3290, Y: 1)
        var triple = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: p[0], y: p[1], Y: 1), Green: cmsCIExyY(x: p[2], y: p[3], Y: 1), Blue: cmsCIExyY(x: p[4], y: p[5], Y: 1))
        var curves: [OpaquePointer?] = [curve, curve, curve]
        let profile = cmsCreateRGBProfile(&white, &triple, &curves)!
        cmsFreeToneCurve(curve)
        defer { cmsCloseProfile(profile) }
        return save(profile)
    }

    /// A CMYK profile whose table is not the naive conversion (its inks are warm),
    /// so a decode that ignored it would show.
    static func cmyk() -> Data {
        let profile = cmsCreateProfilePlaceholder(nil)!
        defer { cmsCloseProfile(profile) }
        // Version 2: Little CMS writes a table-only AToB0 as lut16Type there, not in v4.
        cmsSetProfileVersion(profile, 2.1)
        cmsSetDeviceClass(profile, cmsSigOutputClass)
        cmsSetColorSpace(profile, cmsSigCmykData)
        cmsSetPCS(profile, cmsSigLabData)
        let srgb = cmsCreate_sRGBProfile()
        let lab = cmsCreateLab4Profile(nil)
        // Float RGB in, 16-bit Lab in version 2's encoding out.
        let toLab = cmsCreateTransform(srgb, TYPE_RGB_DBL, lab, TYPE_LabV2_16, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), 0)!
        cmsCloseProfile(srgb)
        cmsCloseProfile(lab)
        defer { cmsDeleteTransform(toLab) }
        let pipeline = cmsPipelineAlloc(nil, 4, 3)!
        let table = cmsStageAllocCLut16bit(nil, 9, 4, 3, nil)!
        var cargo = toLab
        withUnsafeMutablePointer(to: &cargo) { pointer in
            _ = cmsStageSampleCLut16bit(table, { input, output, cargo in
                let ink = (0..<4).map { Double(input![$0]) / 65535 }
                var rgb: [Double] = [
                    (1 - ink[0]) * (1 - ink[3]), (1 - ink[1]) * (1 - ink[3]) * 0.93, (1 - ink[2]) * (1 - ink[3]) * 0.85,
                ]
                let transform = cargo!.assumingMemoryBound(to: cmsHTRANSFORM.self).pointee
                cmsDoTransform(transform, &rgb, output, 1)
                return 1
            }, pointer, 0)
        }
        cmsPipelineInsertStage(pipeline, cmsAT_BEGIN, table)
        cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline))
        cmsPipelineFree(pipeline)
        var d50 = cmsD50_XYZ().pointee
        cmsWriteTag(profile, cmsSigMediaWhitePointTag, &d50)
        return save(profile)
    }

    static func save(_ profile: cmsHPROFILE) -> Data {
        var size: cmsUInt32Number = 0
        cmsSaveProfileToMem(profile, nil, &size)
        var data = Data(count: Int(size))
        _ = data.withUnsafeMutableBytes { cmsSaveProfileToMem(profile, $0.baseAddress, &size) }
        return data
    }

    static let TYPE_RGB_DBL: cmsUInt32Number = (4 << 16) | (1 << 22) | (3 << 3) | 0  // PT_RGB, float, 3 channels, 8 bytes (0)
    static let TYPE_LabV2_16: cmsUInt32Number = (30 << 16) | (3 << 3) | 2  // PT_LabV2, 3 channels, 2 bytes
}

struct ColourFixtureError: Error, CustomStringConvertible {
    let message: String
    var description: String { "the colour fixtures could not be made: \(message)" }
}

/// CIEDE2000 between two sRGB colours (8-bit), over Lab with D65 white.
func deltaE2000(_ a: (UInt8, UInt8, UInt8), _ b: (UInt8, UInt8, UInt8)) -> Double {
    func lab(_ c: (UInt8, UInt8, UInt8)) -> (Double, Double, Double) {
        func linear(_ v: UInt8) -> Double {
            let x = Double(v) / 255
            return x <= 0.04045 ? x / 12.92 : pow((x + 0.055) / 1.055, 2.4)
        }
        let (r, g, bl) = (linear(c.0), linear(c.1), linear(c.2))
        let x = (0.4124 * r + 0.3576 * g + 0.1805 * bl) / 0.95047
        let y = 0.2126 * r + 0.7152 * g + 0.0722 * bl
        let z = (0.0193 * r + 0.1192 * g + 0.9505 * bl) / 1.08883
        func f(_ t: Double) -> Double { t > 216.0 / 24389 ? cbrt(t) : (24389.0 / 27 * t + 16) / 116 }
        return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))
    }
    let (l1, a1, b1) = lab(a), (l2, a2, b2) = lab(b)
    let c1 = hypot(a1, b1), c2 = hypot(a2, b2), cMean = (c1 + c2) / 2
    let g = 0.5 * (1 - sqrt(pow(cMean, 7) / (pow(cMean, 7) + pow(25, 7))))
    let a1p = (1 + g) * a1, a2p = (1 + g) * a2
    let c1p = hypot(a1p, b1), c2p = hypot(a2p, b2)
    func hue(_ b: Double, _ a: Double) -> Double {
        if a == 0 && b == 0 { return 0 }
        let h = atan2(b, a) * 180 / .pi
        return h < 0 ? h + 360 : h
    }
    let h1p = hue(b1, a1p), h2p = hue(b2, a2p)
    let dL = l2 - l1, dC = c2p - c1p
    var dh = 0.0
    if c1p * c2p != 0 {
        dh = h2p - h1p
        if dh > 180 { dh -= 360 } else if dh < -180 { dh += 360 }
    }
    let dH = 2 * sqrt(c1p * c2p) * sin(dh * .pi / 360)
    let lMean = (l1 + l2) / 2, cpMean = (c1p + c2p) / 2
    var hMean = h1p + h2p
    if c1p * c2p != 0 {
        if abs(h1p - h2p) > 180 { hMean += h1p + h2p < 360 ? 360 : -360 }
        hMean /= 2
    }
    let t = 1 - 0.17 * cos((hMean - 30) * .pi / 180) + 0.24 * cos(2 * hMean * .pi / 180)
        + 0.32 * cos((3 * hMean + 6) * .pi / 180) - 0.20 * cos((4 * hMean - 63) * .pi / 180)
    let dTheta = 30 * exp(-pow((hMean - 275) / 25, 2))
    let rc = 2 * sqrt(pow(cpMean, 7) / (pow(cpMean, 7) + pow(25, 7)))
    let sl = 1 + 0.015 * pow(lMean - 50, 2) / sqrt(20 + pow(lMean - 50, 2))
    let sc = 1 + 0.045 * cpMean, sh = 1 + 0.015 * cpMean * t
    let rt = -sin(2 * dTheta * .pi / 180) * rc
    return sqrt(pow(dL / sl, 2) + pow(dC / sc, 2) + pow(dH / sh, 2) + rt * (dC / sc) * (dH / sh))
}

@Suite struct ColourManagementTests {
    func decode(_ name: String, options: DecodingOptions = DecodingOptions()) throws -> DecodedImage {
        let data = try ColourFixtures.data(name)
        let format = ImageFormat.detect(data)
        let decoder: any ImageDecoding = switch format {
        case .jpeg: ImageDecoders.JPEG()
        case .png: ImageDecoders.PNG()
        case .webp: ImageDecoders.WebP()
        case .avif: ImageDecoders.AVIF()
        case .heic: ImageDecoders.HEIF()
        case .jxl: ImageDecoders.JXL()
        default: ImageDecoders.TIFF()
        }
        return try decoder.decode(data, options: options)
    }

    /// Mean and largest ΔE2000 of the decoded image against the reference conversion.
    func difference(_ image: DecodedImage, reference name: String) throws -> (mean: Double, max: Double) {
        let reference = [UInt8](try ColourFixtures.data(name))
        let bitmap = image.bitmap
        #expect(reference.count == bitmap.width * bitmap.height * 3)
        var total = 0.0, largest = 0.0
        for y in 0..<bitmap.height {
            for x in 0..<bitmap.width {
                let p = bitmap[x, y]
                let i = (y * bitmap.width + x) * 3
                let e = deltaE2000((p.r, p.g, p.b), (reference[i], reference[i + 1], reference[i + 2]))
                total += e
                largest = max(largest, e)
            }
        }
        return (total / Double(bitmap.width * bitmap.height), largest)
    }

    @Test(arguments: [
        ("p3.jpg", "p3-jpg.ref"), ("adobe.jpg", "adobe-jpg.ref"), ("prophoto.png", "prophoto-png.ref"),
        ("adobe.webp", "adobe-webp.ref"), ("prophoto.tiff", "prophoto-tiff.ref"), ("cmyk.jpg", "cmyk-jpg.ref"),
        ("gamma18.png", "gamma18-png.ref"), ("cicp.png", "cicp-png.ref"),
        ("prophoto.avif", "prophoto-png.ref"), ("prophoto.heic", "prophoto-png.ref"),
    ])
    func taggedImagesMatchTheReferenceConversion(file: String, reference: String) throws {
        let image = try decode(file)
        let (mean, largest) = try difference(image, reference: reference)
        #expect(mean <= 1, "\(file): mean ΔE2000 \(mean)")
        #expect(largest <= 3, "\(file): largest ΔE2000 \(largest)")
        #expect(image.notes.isEmpty)
        // And the conversion did something: the untagged reading is far off.
        if !file.hasPrefix("cmyk") {
            let untagged = try decode(file.hasSuffix("jpg") ? "untagged.jpg" : "untagged.png")
            #expect(try difference(untagged, reference: reference).mean > 1.5, "\(file) looks unconverted")
        }
    }

    @Test func aCMYKProfileIsUsedRatherThanTheNaiveConversion() throws {
        let image = try decode("cmyk.jpg")
        // Without its profile the file would decode with Adobe's naive rule.
        let naive = DecodingOptions()
        let data = try ColourFixtures.data("cmyk.jpg")
        let stripped = JPEGAPP2.removing(from: data)
        let plain = try ImageDecoders.JPEG().decode(stripped, options: naive)
        #expect(try difference(plain, reference: "cmyk-jpg.ref").mean > 1.5)
        #expect(image.bitmap != plain.bitmap)
    }

    @Test func untaggedAndSRGBTaggedImagesAreLeftByteForByte() throws {
        let untagged = try decode("untagged.png")
        let tagged = try decode("srgb.png")
        #expect(tagged.bitmap.pixels == untagged.bitmap.pixels)
        #expect(try decode("srgb.jpg").bitmap.pixels == decode("untagged.jpg").bitmap.pixels)
        // The PNG is lossless: its pixels are the source's, as Pillow wrote them.
        let png = try ColourFixtures.data("untagged.png")
        #expect(png.count > 0)
        #expect(untagged.bitmap[0, 0] == (0, 0, 0, 255))
        #expect(untagged.bitmap[untagged.width - 1, 0] == (255, 255, 255, 255))
    }

    @Test func aDamagedProfileIsIgnoredWithANote() throws {
        let image = try decode("damaged.jpg")
        #expect(image.bitmap.pixels == (try decode("untagged.jpg")).bitmap.pixels)
        #expect(image.notes.count == 1)
        #expect(image.notes.first?.contains("damaged") == true)
    }

    @Test func aThumbnailIsConvertedToo() throws {
        let options = DecodingOptions(targetSize: TargetSize(width: 24, height: 16))
        let tagged = try decode("adobe.jpg", options: options)
        let untagged = try decode("untagged.jpg", options: options)
        #expect(tagged.width == 24 && untagged.width == 24)
        #expect(tagged.bitmap.pixels != untagged.bitmap.pixels)
        // A saturated green: Adobe RGB's is greener than sRGB can show, so clipped.
        let full = try decode("adobe.jpg")
        #expect(full.bitmap.pixels.count == full.width * full.height * 4)
    }

    @Test func aFullDecodeConvertedBandByBandMatchesTheWholeImageConverted() throws {
        // 2,000 px wide: libjpeg's rows are converted some 16 at a time as they come.
        let plain = try ImageEncoders.JPEG(quality: 90).encode(InterlacedPNG.picture(width: 2000, height: 70))
        let profile = ColourFixtures.displayP3()
        let length = 2 + 14 + profile.count
        var marker = Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)])
        marker += Data("ICC_PROFILE".utf8) + Data([0, 1, 1]) + profile
        let tagged = try ImageDecoders.JPEG().decode(plain.prefix(2) + marker + plain.dropFirst(2), options: DecodingOptions())
        let untagged = try ImageDecoders.JPEG().decode(plain, options: DecodingOptions())
        let whole = ColourManagement.convert(untagged.bitmap, description: .icc(profile)).0
        #expect(tagged.bitmap.pixels != untagged.bitmap.pixels)
        #expect(tagged.bitmap.pixels == whole.pixels)
    }

    @Test func sRGBIsRecognisedWhateverTheProfileIsCalled() throws {
        let colord = try Data(contentsOf: URL(fileURLWithPath: "/usr/share/color/icc/colord/sRGB.icc"))
        let builtIn = ColourFixtures.save(cmsCreate_sRGBProfile())
        for data in [colord, builtIn] {
            guard case .none = ColourManagement.plan(for: .icc(data)) else {
                Issue.record("an sRGB profile was taken for another")
                continue
            }
        }
        guard case .transform = ColourManagement.plan(for: .icc(ColourFixtures.displayP3())) else {
            Issue.record("Display P3 was taken for sRGB")
            return
        }
    }
}

/// The tone mapping README describes, written out for a gray (R = G = B) signal `e`
/// (0…1): light relative to 203 cd/m², a knee at 0.5, extended Reinhard above it
/// reaching 1 at 1000 cd/m², the sRGB curve.
func documentedToneMapping(_ e: Double, hlg: Bool) -> Double {
    let nits: Double
    if hlg {
        let (a, b, c) = (0.17883277, 0.28466892, 0.55991073)
        let scene = e <= 0.5 ? e * e / 3 : (exp((e - c) / a) + b) / 12
        nits = 1000 * pow(scene, 1.2)
    } else {
        let (m1, m2) = (2610.0 / 16384, 2523.0 / 4096 * 128)
        let (c1, c2, c3) = (3424.0 / 4096, 2413.0 / 4096 * 32, 2392.0 / 4096 * 32)
        let p = pow(e, 1 / m2)
        nits = 10000 * pow(max(p - c1, 0) / (c2 - c3 * p), 1 / m1)
    }
    let l = nits / 203
    var y = l
    if l > 0.5 {
        let m = (1000.0 / 203 - 0.5) / 0.5
        let x = min((l - 0.5) / 0.5, m)
        y = 0.5 + 0.5 * x * (1 + x / (m * m)) / (1 + x)
    }
    let v = y <= 0.0031308 ? 12.92 * y : 1.055 * pow(y, 1 / 2.4) - 0.055
    return v * 255
}

extension ColourManagementTests {
    // The HEIF files are heif-enc's with an nclx colr box put in (see the fixture script).
    @Test(arguments: ["pq.avif", "hlg.avif", "pq.heic", "hlg.heic"])
    func hdrImagesAreToneMappedToSRGB(file: String) throws {
        let data = try ColourFixtures.data(file)
        let decoder: any ImageDecoding = file.hasSuffix(".heic") ? ImageDecoders.HEIF() : ImageDecoders.AVIF()
        let image = try decoder.decode(data, options: DecodingOptions())
        #expect(image.width == 256)
        let hlg = file.hasPrefix("hlg")
        var previous = 0
        for x in 0..<256 {
            let p = image.bitmap[x, 4]
            #expect(p.r == p.g && p.g == p.b || abs(Int(p.r) - Int(p.b)) <= 1, "\(file) x \(x): gray stays gray")
            // 10 bits of signal: the code the encoder kept.
            let code = (Double(x) / 255 * 1023).rounded() / 1023
            let expected = documentedToneMapping(code, hlg: hlg)
            #expect(abs(Double(p.g) - expected) <= 3, "\(file) x \(x): \(p.g), expected \(expected)")
            #expect(Int(p.g) >= previous - 1, "\(file) x \(x): the ramp goes down")
            previous = Int(p.g)
        }
        // Reference white (203 cd/m²: PQ 0.58, HLG 0.75) is a light gray, not white, not dark.
        let white = Int(image.bitmap[hlg ? 191 : 148, 4].g)
        #expect((215...235).contains(white), "\(file): reference white at \(white)")
        #expect(image.bitmap[255, 4].g >= 250)
    }
}

/// JPEG data without its APP2 (ICC) markers.
enum JPEGAPP2 {
    static func removing(from data: Data) -> Data {
        let bytes = [UInt8](data)
        var out: [UInt8] = [0xFF, 0xD8]
        var i = 2
        while i + 4 <= bytes.count, bytes[i] == 0xFF {
            let marker = bytes[i + 1]
            if marker == 0xDA { break }
            let length = Int(bytes[i + 2]) << 8 | Int(bytes[i + 3])
            if marker != 0xE2 { out += bytes[i..<(i + 2 + length)] }
            i += 2 + length
        }
        out += bytes[i...]
        return Data(out)
    }
}

extension ColourManagementTests {
    /// A 16-bit PNG tagged PQ or HLG (cICP) is tone mapped from its 16 bits. Its ramp
    /// runs over the part of the PQ range where one 8-bit code is a step of one and a
    /// half output levels, so a decode that reduced it to 8 bits first would miss by
    /// up to 1.6 levels.
    @Test(arguments: [false, true])
    func sixteenBitHDRPNGsAreToneMappedFromTheirSixteenBits(hlg: Bool) throws {
        let width = 256
        let codes = (0..<width).map { UInt16(((0.45 + 0.15 * Double($0) / Double(width - 1)) * 65535).rounded()) }
        var scanlines: [UInt8] = []
        for _ in 0..<4 {
            scanlines.append(0)  // filter: none
            for code in codes { scanlines += [UInt8(code >> 8), UInt8(code & 0xFF)] }
        }
        // 16-bit gray; cICP: BT.2020 primaries, PQ (16) or HLG (18), RGB, full range.
        let header: [UInt8] = [0, 0, 1, 0, 0, 0, 0, 4, 16, 0, 0, 0, 0]
        let data = PNGFile.assemble(header: header, chunks: [("cICP", [9, hlg ? 18 : 16, 0, 1])], scanlines: scanlines)
        let image = try ImageDecoders.PNG().decode(data, options: DecodingOptions())
        #expect(image.width == width && image.height == 4)
        var worst = 0.0
        for (x, code) in codes.enumerated() {
            let p = image.bitmap[x, 2]
            // Gray within one level: BT.2020 to BT.709 in float rounds channels apart.
            #expect(max(p.r, p.g, p.b) - min(p.r, p.g, p.b) <= 1 && p.a == 255, "x \(x): gray stays gray and opaque")
            worst = max(worst, abs(Double(p.g) - documentedToneMapping(Double(code) / 65535, hlg: hlg)))
        }
        #expect(worst <= 1, "the largest difference from the documented mapping: \(worst) levels")
    }

    /// With 16-bit alpha, interlaced: alpha comes down to 8 bits and premultiplies
    /// the mapped colour.
    @Test func sixteenBitHDRPNGsKeepTheirAlpha() throws {
        let code: UInt16 = 0x9000, alpha: UInt16 = 0x8080
        // 8×8 RGBA, 16 bits, Adam7: every pixel the same, so each pass's rows are alike.
        var scanlines: [UInt8] = []
        for (x0, y0, dx, dy) in InterlacedPNG.passes {
            for _ in stride(from: y0, to: 8, by: dy) {
                scanlines.append(0)
                for _ in stride(from: x0, to: 8, by: dx) {
                    for value in [code, code, code, alpha] { scanlines += [UInt8(value >> 8), UInt8(value & 0xFF)] }
                }
            }
        }
        let header: [UInt8] = [0, 0, 0, 8, 0, 0, 0, 8, 16, 6, 0, 0, 1]
        let data = PNGFile.assemble(header: header, chunks: [("cICP", [9, 16, 0, 1])], scanlines: scanlines)
        let image = try ImageDecoders.PNG().decode(data, options: DecodingOptions())
        let expected = documentedToneMapping(Double(code) / 65535, hlg: false) * 128 / 255
        for y in 0..<8 {
            for x in 0..<8 {
                let p = image.bitmap[x, y]
                #expect(p.a == 128 && abs(Double(p.g) - expected) <= 1, "(\(x), \(y)): \(p), expected \(expected) at alpha 128")
            }
        }
    }
}
#endif
