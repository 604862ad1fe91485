#if os(Linux)
import Foundation

/// High-dynamic-range pixels (PQ or HLG, ITU-R BT.2100) brought down to 8-bit sRGB.
///
/// The mapping, the one described in README's "Colour" section:
/// 1. The signal becomes light relative to HDR reference white, 203 cd/m² (BT.2408):
///    PQ through its EOTF (SMPTE ST 2084), HLG through its inverse OETF and the
///    BT.2100 OOTF for a 1000 cd/m² display (system gamma 1.2).
/// 2. Linear light goes from the file's primaries (BT.2020, P3, BT.709) to BT.709's.
/// 3. Luminance Y is tone mapped: below 0.5 (of reference white) it is kept; above,
///    it is compressed with an extended Reinhard curve that meets the lower part with
///    the same slope and reaches 1 at 1000 cd/m² (4.93 × reference white), the peak
///    mastered content rarely exceeds. Colours keep their ratios (each channel scaled
///    by Y′/Y); what is still outside sRGB is clipped.
/// 4. The sRGB curve encodes the result in 8 bits.
///
/// So SDR-range content (up to reference white) stays close to how an SDR display
/// shows it, highlights roll off instead of clipping, and nothing reads as black.
///
/// `@unchecked Sendable`: its tables are made once in `init` and only read after.
final class HDRToneMapping: @unchecked Sendable {
    static let referenceWhite: Float = 203
    static let peak: Float = 1000
    static let knee: Float = 0.5

    let transfer: Int
    /// Source primaries' linear RGB to BT.709's, row by row.
    private let matrix: [Float]
    /// Linear light (relative to reference white) for each 16-bit code; for HLG, scene
    /// light before the OOTF.
    private let linear16: [Float]
    /// The same for 8-bit codes.
    private let linear8: [Float]
    /// sRGB-encoded 8-bit values of linear light 0…1 in 4096 steps.
    private let encode: [UInt8]

    init?(primaries: Int, transfer: Int) {
        guard transfer == ColourDescription.pq || transfer == ColourDescription.hlg else { return nil }
        self.transfer = transfer
        switch primaries {
        case 9: matrix = [1.6605, -0.5876, -0.0728, -0.1246, 1.1329, -0.0083, -0.0182, -0.1006, 1.1187]
        case 12: matrix = [1.2249, -0.2247, 0, -0.0420, 1.0419, 0, -0.0197, -0.0786, 1.0979]
        case 1, 2: matrix = [1, 0, 0, 0, 1, 0, 0, 0, 1]
        default: return nil
        }
        let isPQ = transfer == ColourDescription.pq
        func signal(_ e: Float) -> Float { isPQ ? Self.pq(e) : Self.hlgInverseOETF(e) }
        linear16 = (0...65535).map { (code: Int) -> Float in signal(Float(code) / 65535) }
        linear8 = (0...255).map { (code: Int) -> Float in signal(Float(code) / 255) }
        encode = (0..<4096).map { (step: Int) -> UInt8 in
            let v = Float(step) / 4095
            let e: Float = v <= 0.0031308 ? v * 12.92 : 1.055 * powf(v, 1 / 2.4) - 0.055
            return UInt8(max(0, min(255, (e * 255).rounded())))
        }
    }

    /// SMPTE ST 2084: signal to cd/m², over reference white.
    static func pq(_ e: Float) -> Float {
        let m1: Float = 2610 / 16384, m2: Float = 2523 / 4096 * 128
        let c1: Float = 3424 / 4096, c2: Float = 2413 / 4096 * 32, c3: Float = 2392 / 4096 * 32
        let p = powf(max(e, 0), 1 / m2)
        return powf(max(p - c1, 0) / (c2 - c3 * p), 1 / m1) * 10000 / referenceWhite
    }

    /// BT.2100 HLG inverse OETF: signal to scene light 0…1.
    static func hlgInverseOETF(_ e: Float) -> Float {
        let a: Float = 0.17883277, b: Float = 0.28466892, c: Float = 0.55991073
        return e <= 0.5 ? e * e / 3 : (expf((e - c) / a) + b) / 12
    }

    /// Y (relative to reference white) to the displayable 0…1.
    static func toneMap(_ y: Float) -> Float {
        guard y > knee else { return y }
        let top = peak / referenceWhite
        let m = (top - knee) / (1 - knee)
        let x = min((y - knee) / (1 - knee), m)
        return knee + (1 - knee) * (x * (1 + x / (m * m)) / (1 + x))
    }

    /// One pixel's linear light (relative to reference white) to 8-bit sRGB.
    @inline(__always)
    private func map(_ r: Float, _ g: Float, _ b: Float) -> (UInt8, UInt8, UInt8) {
        var (r, g, b) = (r, g, b)
        if transfer == ColourDescription.hlg {
            // OOTF on scene luminance (BT.2020's weights), for a 1000 cd/m² display.
            let ys = 0.2627 * r + 0.6780 * g + 0.0593 * b
            let gain = ys > 0 ? Self.peak * powf(ys, 0.2) / Self.referenceWhite : 0
            r *= gain; g *= gain; b *= gain
        }
        let m = matrix
        let r7 = m[0] * r + m[1] * g + m[2] * b
        let g7 = m[3] * r + m[4] * g + m[5] * b
        let b7 = m[6] * r + m[7] * g + m[8] * b
        let y = max(0, 0.2126 * r7 + 0.7152 * g7 + 0.0722 * b7)
        let scale = y > 0 ? Self.toneMap(y) / y : 0
        func out(_ v: Float) -> UInt8 { encode[Int(max(0, min(1, v * scale)) * 4095 + 0.5)] }
        return (out(r7), out(g7), out(b7))
    }

    /// 16-bit RGBA with straight alpha (`rowLength` values a row) to 8-bit RGBA,
    /// premultiplied, into `out`.
    func render(_ source: UnsafePointer<UInt16>, width: Int, height: Int, rowLength: Int, into out: UnsafeMutableRawBufferPointer) {
        let o = out.bindMemory(to: UInt8.self)
        linear16.withUnsafeBufferPointer { lut in
            for y in 0..<height {
                var s = y * rowLength, d = y * width * 4
                for _ in 0..<width {
                    let (r, g, b) = map(lut[Int(source[s])], lut[Int(source[s + 1])], lut[Int(source[s + 2])])
                    let a = UInt32(source[s + 3] >> 8)
                    o[d] = r; o[d + 1] = g; o[d + 2] = b; o[d + 3] = UInt8(a)
                    if a != 255 {
                        o[d] = UInt8((UInt32(r) * a + 127) / 255)
                        o[d + 1] = UInt8((UInt32(g) * a + 127) / 255)
                        o[d + 2] = UInt8((UInt32(b) * a + 127) / 255)
                    }
                    s += 4; d += 4
                }
            }
        }
    }

    /// `count` packed 8-bit RGBA pixels with straight alpha, PQ or HLG codes, mapped
    /// in place; alpha kept.
    func applyStraight(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        let p = pixels.bindMemory(to: UInt8.self)
        linear8.withUnsafeBufferPointer { lut in
            for i in stride(from: 0, to: count * 4, by: 4) {
                (p[i], p[i + 1], p[i + 2]) = map(lut[Int(p[i])], lut[Int(p[i + 1])], lut[Int(p[i + 2])])
            }
        }
    }

    /// An 8-bit bitmap (premultiplied) whose values are PQ or HLG codes, mapped.
    func apply(_ bitmap: Bitmap) -> Bitmap {
        let (width, height, stride) = (bitmap.width, bitmap.height, bitmap.bytesPerRow)
        return try! Bitmap.make(width: width, height: height) { out in
            let o = out.bindMemory(to: UInt8.self)
            bitmap.pixels.withUnsafeBufferPointer { p in
                linear8.withUnsafeBufferPointer { lut in
                    for y in 0..<height {
                        var s = y * stride, d = y * width * 4
                        for _ in 0..<width {
                            let a = Int(p[s + 3])
                            func code(_ v: UInt8) -> Int { a == 255 || a == 0 ? Int(v) : min(255, (Int(v) * 255 + a / 2) / a) }
                            let (r, g, b) = map(lut[code(p[s])], lut[code(p[s + 1])], lut[code(p[s + 2])])
                            o[d] = UInt8((Int(r) * a + 127) / 255)
                            o[d + 1] = UInt8((Int(g) * a + 127) / 255)
                            o[d + 2] = UInt8((Int(b) * a + 127) / 255)
                            o[d + 3] = UInt8(a)
                            s += 4; d += 4
                        }
                    }
                }
            }
        }
    }
}
#endif
