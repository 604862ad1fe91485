#if os(Linux)
import CLCMS2
import Foundation

/// What a file says about the colours its values stand for, as a decoder finds it.
///
/// Untagged images have none and are taken as sRGB, as browsers take them.
enum ColourDescription: Hashable, Sendable {
    /// An embedded ICC profile (JPEG APP2, PNG `iCCP`, WebP `ICCP`, TIFF, AVIF/HEIF `colr`).
    case icc(Data)
    /// ITU-T H.273 code points (PNG `cICP`, AVIF/HEIF `nclx`): colour primaries and
    /// transfer characteristics. The matrix is the codec's business.
    case cicp(primaries: Int, transfer: Int)
    /// PNG's `gAMA` (the file gamma, e.g. 1/2.2) with its `cHRM` chromaticities (white,
    /// red, green, blue as x, y pairs) when there is one.
    case gamma(Double, chromaticities: [Double]?)

    /// H.273 transfer characteristics that need tone mapping rather than a profile.
    static let pq = 16, hlg = 18

    /// Whether the description asks for high-dynamic-range tone mapping (PQ or HLG).
    var isHDR: Bool {
        if case .cicp(_, let transfer) = self { return transfer == Self.pq || transfer == Self.hlg }
        return false
    }

    /// The same, with a profile's bytes copied. The plan cache keeps this copy, made
    /// in its own frame: Swift keeps an enum's case in spare bits of the reference it
    /// holds, which hides the kept bytes from LeakSanitizer, and the fuzzers' leak
    /// check passes over what this frame allocates alone (`Fuzz/lsan-suppressions.txt`).
    @inline(never)
    func copiedForCache() -> ColourDescription {
        guard case .icc(let profile) = self else { return self }
        return .icc(profile.withUnsafeBytes { Data($0) })
    }
}

/// Converts decoded pixels to sRGB with Little CMS.
///
/// A transform is made once per profile and kept (a bounded number of them), so an
/// image pays only for its own pixels. Profiles equal to sRGB (by their colorants and
/// curves, whatever they are called) and untagged images are left as they are, byte
/// for byte, at the cost of a dictionary look-up. A profile Little CMS cannot read, or
/// one that does not fit the pixels (a CMYK profile on an RGB image), is ignored: the
/// image decodes as untagged and says so in `DecodedImage.notes`.
enum ColourManagement {
    /// The pixels a transform reads.
    enum Input: Hashable, Sendable {
        /// 8-bit RGBA, alpha premultiplied (what `Bitmap` holds).
        case rgba
        /// 8-bit CMYK; `inverted` when 0 is full ink (Adobe's JPEGs).
        case cmyk(inverted: Bool)
    }

    /// What to do with an image's pixels.
    enum Plan: Sendable {
        /// Nothing: untagged, or sRGB already.
        case none
        /// A Little CMS transform.
        case transform(ColourTransform)
        /// PQ or HLG, tone mapped to SDR.
        case toneMap(HDRToneMapping)
        /// The description could not be used; the note says why.
        case ignored(String)
    }

    private struct Key: Hashable {
        let description: ColourDescription
        let input: Input
    }

    private static let lock = Lock()
    nonisolated(unsafe) private static var plans: [Key: Plan] = [:]
    nonisolated(unsafe) private static var order: [Key] = []
    /// Transforms kept: a page of photos from a few cameras, and the odd stray.
    static let cacheLimit = 32

    /// The plan for pixels of `input` described by `description`; made once per
    /// description and kept.
    static func plan(for description: ColourDescription?, input: Input = .rgba) -> Plan {
        guard let description else { return .none }
        let key = Key(description: description, input: input)
        if let plan = lock.withLock({ plans[key] }) { return plan }
        let plan = makePlan(description, input: input)
        let kept = Key(description: description.copiedForCache(), input: input)
        lock.withLock {
            if plans[kept] == nil {
                if order.count >= cacheLimit { plans[order.removeFirst()] = nil }
                order.append(kept)
            }
            plans[kept] = plan
        }
        return plan
    }

    /// `bitmap` in sRGB, with a note when its description had to be ignored.
    static func convert(_ bitmap: Bitmap, description: ColourDescription?) -> (Bitmap, note: String?) {
        switch plan(for: description) {
        case .none: (bitmap, nil)
        case .ignored(let note): (bitmap, note)
        case .transform(let transform): (transform.apply(bitmap), nil)
        case .toneMap(let mapping): (mapping.apply(bitmap), nil)
        }
    }

    /// The image converted to sRGB: the first frame now, the others as they are
    /// decoded. A note about an ignored profile is added to `notes`.
    static func convert(_ image: DecodedImage, description: ColourDescription?) -> DecodedImage {
        switch plan(for: description) {
        case .none:
            return image
        case .ignored(let note):
            var image = image
            image.notes.append(note)
            return image
        case .transform, .toneMap:
            let apply = { @Sendable (bitmap: Bitmap) in convert(bitmap, description: description).0 }
            var converted = DecodedImage(
                firstFrame: .init(bitmap: apply(image.bitmap), duration: image.firstFrame.duration),
                animation: image.animation.map { $0.mapped(width: $0.width, height: $0.height, apply) },
                loopCount: image.loopCount, format: image.format, orientation: image.orientation, isPartial: image.isPartial)
            converted.notes = image.notes
            return converted
        }
    }

    private static func makePlan(_ description: ColourDescription, input: Input) -> Plan {
        switch description {
        case .icc(let data):
            guard let profile = data.withUnsafeBytes({ cmsOpenProfileFromMem($0.baseAddress, cmsUInt32Number($0.count)) }) else {
                return .ignored("the embedded ICC profile is damaged and was ignored")
            }
            defer { cmsCloseProfile(profile) }
            return plan(profile, input: input, what: "the embedded ICC profile")
        case .cicp(let primaries, let transfer):
            if description.isHDR {
                return HDRToneMapping(primaries: primaries, transfer: transfer).map { .toneMap($0) }
                    ?? .ignored("CICP colour primaries \(primaries) are not supported for HDR and were ignored")
            }
            guard input == .rgba else { return .ignored("CICP colours do not describe CMYK pixels") }
            let isSRGBPrimaries = primaries == 1 || primaries == 2
            // Unspecified, sRGB, and the video curves an image display treats as sRGB's.
            let isSRGBTransfer = [1, 2, 6, 13, 14, 15].contains(transfer)
            if isSRGBPrimaries && isSRGBTransfer { return .none }
            guard let chromaticities = cicpPrimaries[primaries] else {
                return .ignored("CICP colour primaries \(primaries) are not supported and were ignored")
            }
            let curve: OpaquePointer?
            switch transfer {
            case 1, 2, 6, 13, 14, 15: curve = sRGBCurve()
            case 4: curve = cmsBuildGamma(nil, 2.2)
            case 5: curve = cmsBuildGamma(nil, 2.8)
            case 8: curve = cmsBuildGamma(nil, 1)
            default: return .ignored("CICP transfer characteristics \(transfer) are not supported and were ignored")
            }
            guard let profile = rgbProfile(chromaticities, curve: curve) else { return .ignored("CICP colours could not be described") }
            defer { cmsCloseProfile(profile) }
            return plan(profile, input: input, what: "the CICP colours")
        case .gamma(let gamma, let chromaticities):
            guard input == .rgba, gamma > 0 else { return .ignored("the PNG gamma \(gamma) is not usable and was ignored") }
            let isSRGBPrimaries = chromaticities.map { zip($0, sRGBChromaticities).allSatisfy { abs($0 - $1) < 0.0015 } } ?? true
            // 1/2.2 is how most writers say "sRGB" in a gAMA chunk; browsers take it so.
            if isSRGBPrimaries && abs(gamma - 1 / 2.2) < 0.0005 { return .none }
            guard let profile = rgbProfile(chromaticities ?? sRGBChromaticities, curve: cmsBuildGamma(nil, 1 / gamma)) else {
                return .ignored("the PNG gamma and chromaticities do not describe colours and were ignored")
            }
            defer { cmsCloseProfile(profile) }
            return plan(profile, input: input, what: "the PNG gamma and chromaticities")
        }
    }

    private static func plan(_ profile: cmsHPROFILE, input: Input, what: String) -> Plan {
        let space = cmsGetColorSpace(profile)
        let format: cmsUInt32Number
        switch (input, space) {
        case (.rgba, cmsSigRgbData):
            if isSRGB(profile) { return .none }
            // Matrix and curves (Display P3, Adobe RGB, ProPhoto, CICP, gAMA/cHRM):
            // Imago's own tables, as browsers do it; Little CMS's 8-bit path took
            // 35 ns a pixel here, five times the decode.
            if let shaper = MatrixShaper(profile, destination: sRGB.profile) { return .transform(ColourTransform(shaper)) }
            format = imago_lcms_rgba8_premultiplied
        case (.rgba, cmsSigGrayData):
            // A gray image's profile: libjpeg and libpng hand gray as R = G = B, so the
            // table is looked up by the red value.
            format = imago_lcms_gray8
        case (.cmyk(let inverted), cmsSigCmykData):
            format = inverted ? imago_lcms_cmyk8_inverted : imago_lcms_cmyk8
        default:
            return .ignored("\(what) does not match the image's colour model and was ignored")
        }
        // Perceptual when the profile has tables for it (a photo's gamut squeezed as its
        // author meant); else relative colorimetric. Black point compensation, as
        // Chrome and Firefox apply it. No cache: the transform is shared by threads.
        let intent = cmsIsIntentSupported(profile, cmsUInt32Number(INTENT_PERCEPTUAL), cmsUInt32Number(LCMS_USED_AS_INPUT)) != 0
            ? INTENT_PERCEPTUAL : INTENT_RELATIVE_COLORIMETRIC
        var flags = cmsUInt32Number(cmsFLAGS_BLACKPOINTCOMPENSATION | cmsFLAGS_NOCACHE)
        if format == imago_lcms_rgba8_premultiplied { flags |= cmsUInt32Number(cmsFLAGS_COPY_ALPHA) }
        let output = format == imago_lcms_gray8 ? imago_lcms_rgb8 : format == imago_lcms_rgba8_premultiplied ? format : imago_lcms_rgba8
        guard let transform = cmsCreateTransform(profile, format, sRGB.profile, output, cmsUInt32Number(intent), flags) else {
            return .ignored("\(what) could not be used and was ignored")
        }
        if format == imago_lcms_rgba8_premultiplied {
            // And one for straight alpha, which decoders convert before premultiplying.
            guard let straight = cmsCreateTransform(
                profile, imago_lcms_rgba8, sRGB.profile, imago_lcms_rgba8, cmsUInt32Number(intent), flags)
            else {
                cmsDeleteTransform(transform)
                return .ignored("\(what) could not be used and was ignored")
            }
            return .transform(ColourTransform(transform, straight: straight))
        }
        if format == imago_lcms_gray8 {
            // 256 gray levels are the whole input: a table, and no transform kept.
            var levels = (0...255).map { UInt8($0) }
            var table = [UInt8](repeating: 0, count: 256 * 3)
            cmsDoTransform(transform, &levels, &table, 256)
            cmsDeleteTransform(transform)
            return .transform(ColourTransform(grayTable: table))
        }
        return .transform(ColourTransform(transform, input: input))
    }

    /// Whether `profile` converts by its colorants and curves alone.
    ///
    /// A profile may carry device-to-PCS tables (AToB or DToB) beside its matrix and
    /// curves; the ICC specification, Chrome's skcms and Little CMS's own transform
    /// all use the tables then, and the colorants are only a summary that can say
    /// something else entirely. Such a profile is never a matrix-shaper here, so it
    /// goes through Little CMS, which reads the tables for the intent used.
    static func isMatrixShaper(_ profile: cmsHPROFILE) -> Bool {
        guard cmsIsMatrixShaper(profile) != 0 else { return false }
        let tables = [cmsSigAToB0Tag, cmsSigAToB1Tag, cmsSigAToB2Tag, cmsSigDToB0Tag, cmsSigDToB1Tag, cmsSigDToB2Tag]
        return !tables.contains { cmsIsTag(profile, $0) != 0 }
    }

    /// Whether `profile` is sRGB in all but name: a matrix-shaper with sRGB's colorants
    /// (adapted to D50, as ICC profiles store them) and curves, within what 8 bits can
    /// show.
    static func isSRGB(_ profile: cmsHPROFILE) -> Bool {
        guard cmsGetColorSpace(profile) == cmsSigRgbData, isMatrixShaper(profile) else { return false }
        for (colorant, curve) in [(cmsSigRedColorantTag, cmsSigRedTRCTag), (cmsSigGreenColorantTag, cmsSigGreenTRCTag),
                                  (cmsSigBlueColorantTag, cmsSigBlueTRCTag)] {
            guard let mine = cmsReadTag(profile, colorant)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee,
                  let theirs = cmsReadTag(sRGB.profile, colorant)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee,
                  abs(mine.X - theirs.X) < 0.002, abs(mine.Y - theirs.Y) < 0.002, abs(mine.Z - theirs.Z) < 0.002,
                  let tone = cmsReadTag(profile, curve).map({ OpaquePointer($0) })
            else { return false }
            for step in 0...32 {
                let x = Float(step) / 32
                if abs(cmsEvalToneCurveFloat(tone, x) - sRGBDecode(x)) > 0.5 / 255 { return false }
            }
        }
        return true
    }

    /// sRGB's electro-optical curve: an encoded value to linear light.
    static func sRGBDecode(_ v: Float) -> Float {
        v <= 0.04045 ? v / 12.92 : powf((v + 0.055) / 1.055, 2.4)
    }

    /// The sRGB profile, made once: every transform's destination.
    ///
    /// `@unchecked Sendable`: the profile is only read once made.
    private final class Profile: @unchecked Sendable {
        let profile: cmsHPROFILE
        init(_ profile: cmsHPROFILE) { self.profile = profile }
    }
    private static let sRGBProfile = Profile(cmsCreate_sRGBProfile())
    private static var sRGB: Profile { sRGBProfile }

    private static func sRGBCurve() -> OpaquePointer? {
        var parameters: [Double] = [2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045]
        return cmsBuildParametricToneCurve(nil, 4, &parameters)
    }

    /// White, red, green, blue as x, y pairs.
    static let sRGBChromaticities: [Double] = [0.3127, 0.3290, 0.64, 0.33, 0.30, 0.60, 0.15, 0.06]

    /// H.273 colour primaries (white, red, green, blue as x, y pairs).
    static let cicpPrimaries: [Int: [Double]] = [
        1: sRGBChromaticities,
        2: sRGBChromaticities,
        // BT.2020 and BT.2100.
        9: [0.3127, 0.3290, 0.708, 0.292, 0.170, 0.797, 0.131, 0.046],
        // DCI-P3 with D65 white: Display P3.
        12: [0.3127, 0.3290, 0.680, 0.320, 0.265, 0.690, 0.150, 0.060],
        // SMPTE 170M and 240M.
        6: [0.3127, 0.3290, 0.630, 0.340, 0.310, 0.595, 0.155, 0.070],
        7: [0.3127, 0.3290, 0.630, 0.340, 0.310, 0.595, 0.155, 0.070],
        // BT.470 B/G.
        5: [0.3127, 0.3290, 0.64, 0.33, 0.29, 0.60, 0.15, 0.06],
    ]

    /// A matrix-shaper profile for `chromaticities` with `curve` on every channel (the
    /// curve is freed here).
    private static func rgbProfile(_ chromaticities: [Double], curve: OpaquePointer?) -> cmsHPROFILE? {
        guard let curve, chromaticities.count == 8, chromaticities.allSatisfy({ $0.isFinite && $0 > 0 && $0 < 1 }) else {
            if let curve { cmsFreeToneCurve(curve) }
            return nil
        }
        defer { cmsFreeToneCurve(curve) }
        let c = chromaticities
        var white = cmsCIExyY(x: c[0], y: c[1], Y: 1)
        var primaries = cmsCIExyYTRIPLE(
            Red: cmsCIExyY(x: c[2], y: c[3], Y: 1), Green: cmsCIExyY(x: c[4], y: c[5], Y: 1), Blue: cmsCIExyY(x: c[6], y: c[7], Y: 1))
        var curves: [OpaquePointer?] = [curve, curve, curve]
        return cmsCreateRGBProfile(&white, &primaries, &curves)
    }
}

/// A Little CMS transform to sRGB, shared by every image with the same profile.
///
/// `@unchecked Sendable`: made without lcms2's cache (`cmsFLAGS_NOCACHE`), a transform
/// may be used by several threads at once, and it is never changed once made.
final class ColourTransform: @unchecked Sendable {
    private let transform: cmsHTRANSFORM?
    /// For RGB: the same conversion of straight-alpha pixels (`applyStraight`).
    private let straight: cmsHTRANSFORM?
    private let input: ColourManagement.Input
    /// For a gray profile: R, G, B for each of the 256 gray levels.
    private let grayTable: [UInt8]
    private let shaper: MatrixShaper?

    init(_ transform: cmsHTRANSFORM, input: ColourManagement.Input) {
        self.transform = transform
        straight = nil
        self.input = input
        grayTable = []
        shaper = nil
    }

    init(_ transform: cmsHTRANSFORM, straight: cmsHTRANSFORM) {
        self.transform = transform
        self.straight = straight
        input = .rgba
        grayTable = []
        shaper = nil
    }

    init(grayTable: [UInt8]) {
        transform = nil
        straight = nil
        input = .rgba
        self.grayTable = grayTable
        shaper = nil
    }

    init(_ shaper: MatrixShaper) {
        transform = nil
        straight = nil
        input = .rgba
        grayTable = []
        self.shaper = shaper
    }

    deinit {
        if let transform { cmsDeleteTransform(transform) }
        if let straight { cmsDeleteTransform(straight) }
    }

    /// Converts `count` packed RGBA pixels with straight alpha in place, alpha kept:
    /// each colour at full precision, whatever its alpha.
    func applyStraight(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        guard let base = pixels.baseAddress, count > 0 else { return }
        if let shaper {
            shaper.convertStraight(pixels, count: count)
        } else if let straight {
            cmsDoTransform(straight, base, base, cmsUInt32Number(count))
        } else if transform == nil {
            let p = pixels.bindMemory(to: UInt8.self)
            grayTable.withUnsafeBufferPointer { table in
                for i in stride(from: 0, to: count * 4, by: 4) {
                    let level = Int(p[i]) * 3
                    p[i] = table[level]; p[i + 1] = table[level + 1]; p[i + 2] = table[level + 2]
                }
            }
        }
    }

    /// A new bitmap of `bitmap`'s pixels in sRGB (premultiplied RGBA in, and out).
    func apply(_ bitmap: Bitmap) -> Bitmap {
        let (width, height, stride) = (bitmap.width, bitmap.height, bitmap.bytesPerRow)
        // Nothing in the fill throws.
        return try! Bitmap.make(width: width, height: height) { out in
            bitmap.pixels.withUnsafeBytes { source in
                if let shaper {
                    shaper.convert(source, width: width, height: height, stride: stride, into: out)
                    return
                }
                if transform == nil {
                    let o = out.bindMemory(to: UInt8.self)
                    grayTable.withUnsafeBufferPointer { table in
                        for y in 0..<height {
                            var s = y * stride, d = y * width * 4
                            for _ in 0..<width {
                                let a = source[s + 3]
                                // Premultiplied gray scales the same for every channel,
                                // so only opaque pixels go through the table exactly.
                                let level = Int(a == 255 || a == 0 ? source[s] : UInt8(min(255, (Int(source[s]) * 255 + Int(a) / 2) / Int(a))))
                                let scale = Int(a)
                                for c in 0..<3 {
                                    let v = Int(table[level * 3 + c])
                                    o[d + c] = a == 255 ? UInt8(v) : UInt8((v * scale + 127) / 255)
                                }
                                o[d + 3] = a
                                s += 4; d += 4
                            }
                        }
                    }
                    return
                }
                cmsDoTransformLineStride(
                    transform, source.baseAddress, out.baseAddress, cmsUInt32Number(width), cmsUInt32Number(height),
                    cmsUInt32Number(stride), cmsUInt32Number(width * 4), 0, 0)
            }
        }
    }

    /// Converts `count` premultiplied RGBA pixels, packed, in place: for a decoder
    /// that converts in its own buffer rather than into a copy (a full-size decode,
    /// where a copy's allocation and page faults cost as much as the conversion).
    func applyInPlace(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        if let shaper {
            // Each pixel is read before it is written, at the same place.
            shaper.convert(UnsafeRawBufferPointer(pixels), width: count, height: 1, stride: count * 4, into: pixels)
        } else if let transform, let base = pixels.baseAddress {
            cmsDoTransform(transform, base, base, cmsUInt32Number(count))
        } else {
            let copy = Bitmap(width: count, height: 1, pixels: Array(UnsafeRawBufferPointer(pixels)))
            let converted = apply(copy)
            converted.pixels.withUnsafeBytes { pixels.copyMemory(from: $0) }
        }
    }

    /// Converts CMYK pixels (four bytes each) to opaque sRGB RGBA in place.
    func applyCMYK(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        guard let transform, let base = pixels.baseAddress else { return }
        // lcms2 converts in place when input and output are the same size, as here.
        cmsDoTransform(transform, base, base, cmsUInt32Number(count))
        let p = pixels.bindMemory(to: UInt8.self)
        var i = 3
        for _ in 0..<count {
            p[i] = 255
            i += 4
        }
    }
}

extension ColourManagement.Plan {
    /// Whether the plan changes pixels.
    var converts: Bool {
        switch self {
        case .transform, .toneMap: true
        case .none, .ignored: false
        }
    }

    /// Converts `count` packed RGBA pixels with straight alpha in place, alpha kept,
    /// then premultiplies them: what a decoder whose codec hands over straight alpha
    /// does with its pixels, and then passes no description on to
    /// `ColourManagement.convert` (a plan that does not convert only premultiplies,
    /// and leaves the rest to it, with its note).
    ///
    /// Premultiplied 8-bit values keep only as many levels of a translucent pixel as
    /// its alpha (at alpha 8, nine), and a curve steep in the dark (gamma 1.0,
    /// ProPhoto's) spreads that loss over tens of levels; converted first, each colour
    /// is exact and premultiplying rounds once.
    func convertAndPremultiply(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        switch self {
        case .transform(let transform): transform.applyStraight(pixels, count: count)
        case .toneMap(let mapping): mapping.applyStraight(pixels, count: count)
        case .none, .ignored: break
        }
        pixels.premultiplyRGBA(count: count)
    }
}
#endif
