#if os(Linux)
import CLCMS2
import Foundation

/// A matrix-shaper profile's conversion to sRGB in tables: each channel's curve to
/// linear light (256 values), one 3×3 matrix from the profile's colorants to sRGB's
/// (both adapted to D50, as ICC profiles store them), clipping, and sRGB's curve in
/// 16,384 steps back to 8 bits. For these profiles every intent is the same and black
/// point compensation changes nothing (both black points are zero), so the result is
/// Little CMS's to rounding, at a fraction of the cost.
///
/// Fixed point, as Little CMS's own 8-bit matrix-shaper path: Swift's float-to-integer
/// conversions check for NaN and overflow at every pixel, which cost more than the
/// arithmetic.
struct MatrixShaper: Sendable {
    /// What each 8-bit value of red (256 entries), then green, then blue adds to the
    /// output's linear red, green and blue, in 1/65536: the curve and the matrix's
    /// column at once, packed as three 21-bit fields (red lowest) of one 64-bit word,
    /// so a pixel is three look-ups and two scalar additions, and each output is its
    /// field shifted out. Red's shares carry an offset that keeps every field's sum
    /// from 0 up (no borrow between fields) and the rounding of its last two bits.
    let contributions: [UInt64]
    /// sRGB's 8-bit value of each field's sum over 4: linear light (i - offset) /
    /// 16384, clipped to 0...1 by the table itself, so no pixel is clamped.
    let encode: [UInt8]
    static let steps = 16384

    init?(_ profile: cmsHPROFILE, destination: cmsHPROFILE) {
        guard ColourManagement.isMatrixShaper(profile) else { return nil }
        func colorants(_ p: cmsHPROFILE) -> [[Double]]? {
            var result: [[Double]] = []
            for tag in [cmsSigRedColorantTag, cmsSigGreenColorantTag, cmsSigBlueColorantTag] {
                guard let xyz = cmsReadTag(p, tag)?.assumingMemoryBound(to: cmsCIEXYZ.self).pointee else { return nil }
                result.append([xyz.X, xyz.Y, xyz.Z])
            }
            return result
        }
        guard let mine = colorants(profile), let theirs = colorants(destination) else { return nil }
        var curves: [OpaquePointer] = []
        for tag in [cmsSigRedTRCTag, cmsSigGreenTRCTag, cmsSigBlueTRCTag] {
            guard let curve = cmsReadTag(profile, tag) else { return nil }
            curves.append(OpaquePointer(curve))
        }
        // sRGB's matrix (its colorants as columns), inverted, times the profile's.
        let (a, b, c) = (theirs[0][0], theirs[1][0], theirs[2][0])
        let (d, e, f) = (theirs[0][1], theirs[1][1], theirs[2][1])
        let (g, h, i) = (theirs[0][2], theirs[1][2], theirs[2][2])
        let determinant = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        guard abs(determinant) > 1e-9 else { return nil }
        let inverse: [[Double]] = [
            [e * i - f * h, c * h - b * i, b * f - c * e],
            [f * g - d * i, a * i - c * g, c * d - a * f],
            [d * h - e * g, b * g - a * h, a * e - b * d],
        ].map { $0.map { $0 / determinant } }
        var matrix: [Int] = []
        for row in 0..<3 {
            for column in 0..<3 {
                let value = (0..<3).reduce(0.0) { $0 + inverse[row][$1] * mine[column][$1] }
                guard value.isFinite, abs(value) < 64 else { return nil }
                matrix.append(Int((value * 16384).rounded()))
            }
        }
        // Linear light in 1/65536 times the matrix in 1/16384, over 2^14: each share
        // in 1/65536 of the output, which fits an Int32 for any matrix below 64.
        var shares: [[Int]] = []
        for curve in curves {
            shares.append((0..<256).map { value in
                Int((min(max(cmsEvalToneCurveFloat(curve, Float(value) / 255), 0), 1) * 65536).rounded())
            })
        }
        func share(_ input: Int, _ value: Int, _ output: Int) -> Int { (matrix[3 * output + input] * shares[input][value]) >> 14 }
        // The offset: the lowest sum any output can reach, below zero, as a multiple of 4.
        var lowest = 0, highest = 0
        for output in 0..<3 {
            let low = (0..<3).reduce(0) { sum, input in sum + (0..<256).map { share(input, $0, output) }.min()! }
            let high = (0..<3).reduce(0) { sum, input in sum + (0..<256).map { share(input, $0, output) }.max()! }
            lowest = min(lowest, low); highest = max(highest, high)
        }
        let offset = (-lowest + 3) / 4 * 4
        // Sums past 21 bits would carry into the next field: a matrix no display
        // profile has (linear light 32 over white); Little CMS converts those.
        guard offset + highest + 2 < 1 << 21 else { return nil }
        var contributions: [UInt64] = []
        for input in 0..<3 {
            for value in 0..<256 {
                var word: Int64 = 0
                for output in 0..<3 {
                    let field = Int64(share(input, value, output) + (input == 0 ? offset + 2 : 0))
                    word = word &+ field &<< Int64(21 * output)
                }
                contributions.append(UInt64(bitPattern: word))
            }
        }
        self.contributions = contributions
        let curve = (0...Self.steps).map { step in
            let v = Float(step) / Float(Self.steps)
            let e: Float = v <= 0.0031308 ? v * 12.92 : 1.055 * powf(v, 1 / 2.4) - 0.055
            return UInt8(max(0, min(255, (e * 255).rounded())))
        }
        encode = (0...(offset + highest + 2) >> 2).map { curve[min(max($0 - offset / 4, 0), Self.steps)] }
    }

    /// Premultiplied RGBA rows `stride` bytes apart to packed premultiplied RGBA.
    ///
    /// A pixel is read and written as one 32-bit word, and an opaque one (a photo's
    /// every pixel) skips unpremultiplying: three vector look-ups and adds, three
    /// clamped look-ups of sRGB's curve. `source` and `out` may be the same memory.
    func convert(_ source: UnsafeRawBufferPointer, width: Int, height: Int, stride: Int, into out: UnsafeMutableRawBufferPointer) {
        guard let from = source.baseAddress, let to = out.baseAddress, width > 0, height > 0 else { return }
        contributions.withUnsafeBufferPointer { table in
            encode.withUnsafeBufferPointer { encode in
                let (t, e) = (table.baseAddress!, encode.baseAddress!)
                for y in 0..<height {
                    let row = from + y &* stride, outRow = to + y &* width &* 4
                    for x in 0..<width {
                        let pixel = UInt32(littleEndian: row.loadUnaligned(fromByteOffset: x &* 4, as: UInt32.self))
                        let converted = pixel >= 0xFF00_0000 ? Self.opaque(pixel, t, e) : Self.translucent(pixel, t, e)
                        outRow.storeBytes(of: converted.littleEndian, toByteOffset: x &* 4, as: UInt32.self)
                    }
                }
            }
        }
    }

    /// `count` packed RGBA pixels with straight alpha converted in place, alpha kept:
    /// every pixel as an opaque one, so a translucent colour loses nothing to
    /// premultiplication; the same work a pixel as `convert`'s opaque path.
    func convertStraight(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
        guard let base = pixels.baseAddress, count > 0 else { return }
        contributions.withUnsafeBufferPointer { table in
            encode.withUnsafeBufferPointer { encode in
                let (t, e) = (table.baseAddress!, encode.baseAddress!)
                for i in 0..<count {
                    let pixel = UInt32(littleEndian: base.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
                    let converted = Self.opaque(pixel, t, e) & 0x00FF_FFFF | pixel & 0xFF00_0000
                    base.storeBytes(of: converted.littleEndian, toByteOffset: i &* 4, as: UInt32.self)
                }
            }
        }
    }

    /// An opaque pixel (R, G, B, 255 from the low byte up) converted.
    @inline(__always)
    private static func opaque(_ pixel: UInt32, _ t: UnsafePointer<UInt64>, _ e: UnsafePointer<UInt8>) -> UInt32 {
        // Each input channel's share of the three outputs, summed field by field;
        // 1/65536 of linear light to the encoding table's 1/16384.
        let sum = t[Int(pixel & 0xFF)] &+ t[256 &+ Int((pixel >> 8) & 0xFF)] &+ t[512 &+ Int((pixel >> 16) & 0xFF)]
        let r = e[Int(truncatingIfNeeded: (sum >> 2) & 0x7FFFF)]
        let g = e[Int(truncatingIfNeeded: (sum >> 23) & 0x7FFFF)]
        let b = e[Int(truncatingIfNeeded: sum >> 44)]
        return UInt32(r) | UInt32(g) << 8 | UInt32(b) << 16 | 0xFF00_0000
    }

    /// A pixel with some transparency: unpremultiplied, converted, premultiplied again.
    private static func translucent(_ pixel: UInt32, _ t: UnsafePointer<UInt64>, _ e: UnsafePointer<UInt8>) -> UInt32 {
        let alpha = pixel >> 24
        guard alpha != 0 else { return 0 }
        var (r, g, b) = (pixel & 0xFF, (pixel >> 8) & 0xFF, (pixel >> 16) & 0xFF)
        r = min(255, (r * 255 + alpha / 2) / alpha); g = min(255, (g * 255 + alpha / 2) / alpha); b = min(255, (b * 255 + alpha / 2) / alpha)
        let converted = opaque(r | g << 8 | b << 16 | 0xFF00_0000, t, e)
        let (or, og, ob) = (converted & 0xFF, (converted >> 8) & 0xFF, (converted >> 16) & 0xFF)
        return (or * alpha + 127) / 255 | ((og * alpha + 127) / 255) << 8 | ((ob * alpha + 127) / 255) << 16 | alpha << 24
    }
}
#endif
