#if os(Linux)
import CLCMS2
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Profiles with device-to-PCS tables (AToB0) beside their colorants and curves:
/// the tables are the profile's conversion, as Little CMS's own transform reads it,
/// which is the reference here.
enum TableProfiles {
    static let colordSRGB = "/usr/share/color/icc/colord/sRGB.icc"

    /// colord's sRGB profile (version 4, colorants and curves) with an AToB0 table of
    /// two grid points a channel that swaps red and green: what a decoder reading
    /// only the colorants and curves takes for sRGB. `version` 2 writes the table as
    /// lut16Type (mft2), as version 2 profiles hold it; 4 as lutAtoBType.
    static func swappingRedAndGreen(version: Double) throws -> Data {
        let colord = try Data(contentsOf: URL(fileURLWithPath: colordSRGB))
        let profile = try #require(colord.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count)) })
        defer { cmsCloseProfile(profile) }
        cmsSetProfileVersion(profile, version)
        let srgb = cmsCreate_sRGBProfile(), xyz = cmsCreateXYZProfile()
        // 16-bit RGB in; XYZ out, 16 bits in the ICC's 1.15 encoding, as the table holds it.
        let rgb16: cmsUInt32Number = (4 << 16) | (3 << 3) | 2, xyz16: cmsUInt32Number = (9 << 16) | (3 << 3) | 2
        let toXYZ = try #require(cmsCreateTransform(srgb, rgb16, xyz, xyz16, cmsUInt32Number(INTENT_RELATIVE_COLORIMETRIC), 0))
        cmsCloseProfile(srgb)
        cmsCloseProfile(xyz)
        defer { cmsDeleteTransform(toXYZ) }
        let pipeline = try #require(cmsPipelineAlloc(nil, 3, 3))
        let table = try #require(cmsStageAllocCLut16bit(nil, 2, 3, 3, nil))
        var cargo = toXYZ
        withUnsafeMutablePointer(to: &cargo) { pointer in
            _ = cmsStageSampleCLut16bit(table, { input, output, cargo in
                var swapped: [cmsUInt16Number] = [input![1], input![0], input![2]]
                cmsDoTransform(cargo!.assumingMemoryBound(to: cmsHTRANSFORM.self).pointee, &swapped, output, 1)
                return 1
            }, pointer, 0)
        }
        // Identity curves either side: the layout both tag types can hold.
        cmsPipelineInsertStage(pipeline, cmsAT_END, cmsStageAllocToneCurves(nil, 3, nil))
        cmsPipelineInsertStage(pipeline, cmsAT_END, table)
        cmsPipelineInsertStage(pipeline, cmsAT_END, cmsStageAllocToneCurves(nil, 3, nil))
        cmsWriteTag(profile, cmsSigAToB0Tag, UnsafeRawPointer(pipeline))
        cmsPipelineFree(pipeline)
        return ColourFixtures.save(profile)
    }

    /// Little CMS's own conversion of 8-bit RGB `pixels` from `profile` to its sRGB,
    /// with the intent and black point compensation Imago asks for.
    static func reference(_ pixels: [UInt8], profile data: Data) throws -> [UInt8] {
        let profile = try #require(data.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count)) })
        defer { cmsCloseProfile(profile) }
        let srgb = cmsCreate_sRGBProfile()
        defer { cmsCloseProfile(srgb) }
        let transform = try #require(cmsCreateTransform(
            profile, imago_lcms_rgb8, srgb, imago_lcms_rgb8, cmsUInt32Number(INTENT_PERCEPTUAL),
            cmsUInt32Number(cmsFLAGS_BLACKPOINTCOMPENSATION)))
        defer { cmsDeleteTransform(transform) }
        var input = pixels, output = [UInt8](repeating: 0, count: pixels.count)
        cmsDoTransform(transform, &input, &output, cmsUInt32Number(pixels.count / 3))
        return output
    }
}

extension ColourManagementTests {
    /// 16×8 pixels of two flat colours, left and right.
    static let twoColours: Bitmap = {
        var pixels: [UInt8] = []
        for _ in 0..<8 {
            for x in 0..<16 { pixels += x < 8 ? [220, 30, 30, 255] : [30, 200, 60, 255] }
        }
        return Bitmap(width: 16, height: 8, pixels: pixels)
    }()

    /// The two colours as an RGB PNG with `profile` in its iCCP chunk.
    static func twoColourPNG(profile: Data) -> Data {
        var scanlines: [UInt8] = []
        for y in 0..<8 {
            scanlines.append(0)
            for x in 0..<16 {
                let p = twoColours[x, y]
                scanlines += [p.r, p.g, p.b]
            }
        }
        let iccp = Array("tables".utf8) + [0, 0] + PNGFile.zlib([UInt8](profile))
        return PNGFile.assemble(header: [0, 0, 0, 16, 0, 0, 0, 8, 8, 2, 0, 0, 0], chunks: [("iCCP", iccp)], scanlines: scanlines)
    }

    /// Mean and largest ΔE2000 of `image` against Little CMS's conversion of `source`.
    func differenceFromLittleCMS(_ image: DecodedImage, source: Bitmap, profile: Data) throws -> (mean: Double, max: Double) {
        let pixels = (0..<source.height).flatMap { y in
            (0..<source.width).flatMap { x in [source[x, y].r, source[x, y].g, source[x, y].b] }
        }
        let reference = try TableProfiles.reference(pixels, profile: profile)
        var total = 0.0, largest = 0.0
        for y in 0..<source.height {
            for x in 0..<source.width {
                let p = image.bitmap[x, y], i = (y * source.width + x) * 3
                let e = deltaE2000((p.r, p.g, p.b), (reference[i], reference[i + 1], reference[i + 2]))
                total += e
                largest = max(largest, e)
            }
        }
        return (total / Double(source.width * source.height), largest)
    }

    /// The table swaps red and green; the colorants and curves say sRGB, which would
    /// leave the pixels as they are.
    @Test(arguments: [2.1, 4.4])
    func aProfilesTablesAreUsedRatherThanItsColorants(version: Double) throws {
        let profile = try TableProfiles.swappingRedAndGreen(version: version)
        let png = try ImageDecoders.PNG().decode(Self.twoColourPNG(profile: profile), options: DecodingOptions())
        #expect(png.notes.isEmpty)
        let (mean, largest) = try differenceFromLittleCMS(png, source: Self.twoColours, profile: profile)
        #expect(mean <= 1 && largest <= 3, "PNG: mean ΔE2000 \(mean), largest \(largest)")
        // Red came out green, and green red (Little CMS: about (96, 239, 96) and (229, 96, 133)).
        let (red, green) = (png.bitmap[2, 2], png.bitmap[12, 2])
        #expect(red.g > 200 && red.r < 130 && green.r > 200 && green.g < 130, "\(red), \(green)")

        // A JPEG's rows are converted as libjpeg makes them, in place.
        let plain = try ImageEncoders.JPEG(quality: 95).encode(Self.twoColours)
        let length = 2 + 14 + profile.count
        var marker = Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)])
        marker += Data("ICC_PROFILE".utf8) + Data([0, 1, 1]) + profile
        let jpeg = try ImageDecoders.JPEG().decode(plain.prefix(2) + marker + plain.dropFirst(2), options: DecodingOptions())
        let source = try ImageDecoders.JPEG().decode(plain, options: DecodingOptions()).bitmap
        let (jpegMean, jpegLargest) = try differenceFromLittleCMS(jpeg, source: source, profile: profile)
        #expect(jpegMean <= 1 && jpegLargest <= 3, "JPEG: mean ΔE2000 \(jpegMean), largest \(jpegLargest)")
    }

    @Test func aProfileWithTablesIsNeverTakenForSRGB() throws {
        let profile = try TableProfiles.swappingRedAndGreen(version: 4.4)
        let opened = try #require(profile.withUnsafeBytes { cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count)) })
        defer { cmsCloseProfile(opened) }
        // Little CMS itself calls it a matrix-shaper: it has the tags of one.
        #expect(cmsIsMatrixShaper(opened) != 0)
        #expect(!ColourManagement.isMatrixShaper(opened))
        #expect(!ColourManagement.isSRGB(opened))
    }
}
#endif
