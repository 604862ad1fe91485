import Foundation

// The two compact placeholders servers send along with an image's URL: a few dozen
// bytes that decode to a blurred, coloured sketch of it, shown while it loads.
// ThumbHash (Evan Wallace's) keeps the aspect ratio and alpha in ~25 bytes; BlurHash
// (Wolt's) is a short string of base-83 digits. Both are cosine transforms of a tiny
// image; these follow the reference implementations bit for bit where they round.

/// ThumbHash placeholders: encode a bitmap to its hash, decode a hash to a small
/// bitmap (at most 32 pixels on the long side, in the original's aspect ratio).
///
/// The format is Evan Wallace's reference (`evanw/thumbhash`): the same bytes for the
/// same pixels, decoded to the same pixels. Hashes travel as base64.
public enum ThumbHash {
    /// The hash of `bitmap`. A bitmap larger than 100 × 100 is first scaled to fit
    /// (the format keeps no more detail than that); colours are read premultiplied,
    /// as the reference composites them.
    public static func encode(_ bitmap: Bitmap) -> [UInt8] {
        let image = bitmap.width > 100 || bitmap.height > 100 ? bitmap.fitted(to: .thumbnail(100)) : bitmap
        let (w, h) = (image.width, image.height)
        let count = w * h
        var premultiplied = [SIMD4<Double>](repeating: .zero, count: count)
        var average = SIMD4<Double>.zero
        for y in 0..<h {
            for x in 0..<w {
                let p = image[x, y]
                let v = SIMD4(Double(p.r), Double(p.g), Double(p.b), Double(p.a)) / 255
                premultiplied[y * w + x] = v
                average += v
            }
        }
        if average.w > 0 {
            average.x /= average.w
            average.y /= average.w
            average.z /= average.w
        }
        let hasAlpha = average.w < Double(count)
        let limit = hasAlpha ? 5.0 : 7.0
        let longest = Double(max(w, h))
        let lx = max(1, Int(jsRound(limit * Double(w) / longest)))
        let ly = max(1, Int(jsRound(limit * Double(h) / longest)))

        // Composite over the average colour, then split into luminance, yellow–blue,
        // red–green and alpha.
        var l = [Double](repeating: 0, count: count), p = l, q = l, a = l
        for i in 0..<count {
            let v = premultiplied[i]
            let r = average.x * (1 - v.w) + v.x
            let g = average.y * (1 - v.w) + v.y
            let b = average.z * (1 - v.w) + v.z
            l[i] = (r + g + b) / 3
            p[i] = (r + g) / 2 - b
            q[i] = r - g
            a[i] = v.w
        }

        func channel(_ values: [Double], _ nx: Int, _ ny: Int) -> (dc: Double, ac: [Double], scale: Double) {
            var dc = 0.0, ac: [Double] = [], scale = 0.0
            var fx = [Double](repeating: 0, count: w)
            for cy in 0..<ny {
                var cx = 0
                while cx * ny < nx * (ny - cy) {
                    var f = 0.0
                    for x in 0..<w { fx[x] = cos(Double.pi / Double(w) * Double(cx) * (Double(x) + 0.5)) }
                    for y in 0..<h {
                        let fy = cos(Double.pi / Double(h) * Double(cy) * (Double(y) + 0.5))
                        for x in 0..<w { f += values[x + y * w] * fx[x] * fy }
                    }
                    f /= Double(count)
                    if cx > 0 || cy > 0 {
                        ac.append(f)
                        scale = max(scale, abs(f))
                    } else {
                        dc = f
                    }
                    cx += 1
                }
            }
            if scale > 0 { ac = ac.map { 0.5 + 0.5 / scale * $0 } }
            return (dc, ac, scale)
        }
        let lc = channel(l, max(3, lx), max(3, ly))
        let pc = channel(p, 3, 3)
        let qc = channel(q, 3, 3)
        let ac = hasAlpha ? channel(a, 5, 5) : (dc: 1, ac: [], scale: 0)

        let isLandscape = w > h
        let header24 = Int(jsRound(63 * lc.dc)) | Int(jsRound(31.5 + 31.5 * pc.dc)) << 6
            | Int(jsRound(31.5 + 31.5 * qc.dc)) << 12 | Int(jsRound(31 * lc.scale)) << 18 | (hasAlpha ? 1 << 23 : 0)
        let header16 = (isLandscape ? ly : lx) | Int(jsRound(63 * pc.scale)) << 3
            | Int(jsRound(63 * qc.scale)) << 9 | (isLandscape ? 1 << 15 : 0)
        var hash: [UInt8] = [
            UInt8(header24 & 255), UInt8((header24 >> 8) & 255), UInt8(header24 >> 16),
            UInt8(header16 & 255), UInt8(header16 >> 8),
        ]
        if hasAlpha { hash.append(UInt8(Int(jsRound(15 * ac.dc)) | Int(jsRound(15 * ac.scale)) << 4)) }
        let start = hash.count
        var index = 0
        for factors in hasAlpha ? [lc.ac, pc.ac, qc.ac, ac.ac] : [lc.ac, pc.ac, qc.ac] {
            for f in factors {
                if start + index / 2 >= hash.count { hash.append(0) }
                hash[start + index / 2] |= UInt8(Int(jsRound(15 * f)) << ((index & 1) * 4))
                index += 1
            }
        }
        return hash
    }

    /// The hash of `bitmap` in base64, padded, as the reference's demo prints it.
    public static func encodeBase64(_ bitmap: Bitmap) -> String {
        Data(encode(bitmap)).base64EncodedString()
    }

    /// The placeholder a base64 hash (padded or not) stands for; `ImagoError.invalidHash`
    /// when it is not base64 or not a ThumbHash.
    public static func decode(base64 text: String) throws(ImagoError) -> Bitmap {
        var padded = text.trimmingCharacters(in: .whitespaces)
        if padded.count % 4 != 0 { padded += String(repeating: "=", count: 4 - padded.count % 4) }
        guard let data = Data(base64Encoded: padded) else {
            throw .invalidHash(kind: "ThumbHash", reason: "'\(text.prefix(64))' is not base64")
        }
        return try decode([UInt8](data))
    }

    /// The placeholder `hash` stands for: at most 32 pixels on its long side, in the
    /// original's aspect ratio, alpha premultiplied. `ImagoError.invalidHash` when the
    /// bytes are too few for what their header announces.
    public static func decode(_ hash: [UInt8]) throws(ImagoError) -> Bitmap {
        guard hash.count >= 5 else {
            throw .invalidHash(kind: "ThumbHash", reason: "\(hash.count) bytes, fewer than the 5 of its header")
        }
        let header24 = Int(hash[0]) | Int(hash[1]) << 8 | Int(hash[2]) << 16
        let header16 = Int(hash[3]) | Int(hash[4]) << 8
        let lDC = Double(header24 & 63) / 63
        let pDC = Double((header24 >> 6) & 63) / 31.5 - 1
        let qDC = Double((header24 >> 12) & 63) / 31.5 - 1
        let lScale = Double((header24 >> 18) & 31) / 31
        let hasAlpha = header24 >> 23 != 0
        let pScale = Double((header16 >> 3) & 63) / 63
        let qScale = Double((header16 >> 9) & 63) / 63
        let isLandscape = header16 >> 15 != 0
        let lx = max(3, isLandscape ? (hasAlpha ? 5 : 7) : header16 & 7)
        let ly = max(3, isLandscape ? header16 & 7 : (hasAlpha ? 5 : 7))
        if hasAlpha && hash.count < 6 {
            throw .invalidHash(kind: "ThumbHash", reason: "its header announces alpha but the alpha byte is missing")
        }
        let aDC = hasAlpha ? Double(hash[5] & 15) / 15 : 1
        let aScale = hasAlpha ? Double(hash[5] >> 4) / 15 : 0

        // The factors, four bits each; saturation boosted by 1.25 for the quantisation.
        let start = hasAlpha ? 6 : 5
        func factorCount(_ nx: Int, _ ny: Int) -> Int {
            (0..<ny).reduce(0) { total, cy in total + (0..<nx).filter { cx in (cx > 0 || cy > 0) && cx * ny < nx * (ny - cy) }.count }
        }
        let needed = factorCount(lx, ly) + 2 * factorCount(3, 3) + (hasAlpha ? factorCount(5, 5) : 0)
        guard hash.count >= start + (needed + 1) / 2 else {
            throw .invalidHash(kind: "ThumbHash", reason: "\(hash.count) bytes, fewer than the \(start + (needed + 1) / 2) its header announces")
        }
        var index = 0
        func factors(_ nx: Int, _ ny: Int, _ scale: Double) -> [Double] {
            var ac: [Double] = []
            for cy in 0..<ny {
                var cx = cy > 0 ? 0 : 1
                while cx * ny < nx * (ny - cy) {
                    let nibble = (hash[start + index / 2] >> ((index & 1) * 4)) & 15
                    ac.append((Double(nibble) / 7.5 - 1) * scale)
                    index += 1
                    cx += 1
                }
            }
            return ac
        }
        let lAC = factors(lx, ly, lScale)
        let pAC = factors(3, 3, pScale * 1.25)
        let qAC = factors(3, 3, qScale * 1.25)
        let aAC = hasAlpha ? factors(5, 5, aScale) : []

        let ratio = approximateAspectRatio(hash)
        let w = Int(jsRound(ratio > 1 ? 32 : 32 * ratio))
        let h = Int(jsRound(ratio > 1 ? 32 / ratio : 32))
        guard w > 0, h > 0 else {
            throw .invalidHash(kind: "ThumbHash", reason: "its header gives the image no width or height")
        }
        let nx = max(lx, hasAlpha ? 5 : 3), ny = max(ly, hasAlpha ? 5 : 3)
        var fx = [Double](repeating: 0, count: nx), fy = [Double](repeating: 0, count: ny)
        var pixels = [UInt8](repeating: 0, count: w * h * 4)
        var i = 0
        for y in 0..<h {
            for x in 0..<w {
                var l = lDC, p = pDC, q = qDC, a = aDC
                for cx in 0..<nx { fx[cx] = cos(Double.pi / Double(w) * (Double(x) + 0.5) * Double(cx)) }
                for cy in 0..<ny { fy[cy] = cos(Double.pi / Double(h) * (Double(y) + 0.5) * Double(cy)) }
                var j = 0
                for cy in 0..<ly {
                    var cx = cy > 0 ? 0 : 1
                    let fy2 = fy[cy] * 2
                    while cx * ly < lx * (ly - cy) {
                        l += lAC[j] * fx[cx] * fy2
                        j += 1
                        cx += 1
                    }
                }
                j = 0
                for cy in 0..<3 {
                    var cx = cy > 0 ? 0 : 1
                    let fy2 = fy[cy] * 2
                    while cx < 3 - cy {
                        let f = fx[cx] * fy2
                        p += pAC[j] * f
                        q += qAC[j] * f
                        j += 1
                        cx += 1
                    }
                }
                if hasAlpha {
                    j = 0
                    for cy in 0..<5 {
                        var cx = cy > 0 ? 0 : 1
                        let fy2 = fy[cy] * 2
                        while cx < 5 - cy {
                            a += aAC[j] * fx[cx] * fy2
                            j += 1
                            cx += 1
                        }
                    }
                }
                let b = l - 2 / 3 * p
                let r = (3 * l - b + q) / 2
                let g = r - q
                // Truncated, as the reference's byte array stores them.
                pixels[i] = UInt8(max(0, 255 * min(1, r)))
                pixels[i + 1] = UInt8(max(0, 255 * min(1, g)))
                pixels[i + 2] = UInt8(max(0, 255 * min(1, b)))
                pixels[i + 3] = UInt8(max(0, 255 * min(1, a)))
                i += 4
            }
        }
        pixels.withUnsafeMutableBytes { $0.premultiplyRGBA(count: w * h) }
        return Bitmap(width: w, height: h, pixels: pixels)
    }

    /// The original image's width over its height, as the hash records it (to within
    /// its 3-bit precision); 0 for a hash too short to say.
    public static func approximateAspectRatio(_ hash: [UInt8]) -> Double {
        guard hash.count >= 5 else { return 0 }
        let hasAlpha = hash[2] & 0x80 != 0, isLandscape = hash[4] & 0x80 != 0
        let lx = isLandscape ? (hasAlpha ? 5 : 7) : Int(hash[3] & 7)
        let ly = isLandscape ? Int(hash[3] & 7) : (hasAlpha ? 5 : 7)
        return ly == 0 ? 0 : Double(lx) / Double(ly)
    }
}

/// BlurHash placeholders: encode a bitmap to its hash string, decode a hash string to
/// a bitmap of the size asked for.
///
/// The format is Wolt's reference (`woltapp/blurhash`): `components` cosine terms
/// across and down, in linear light, written as base-83 digits.
public enum BlurHash {
    /// The hash of `bitmap` with `x` × `y` components (each clamped to 1...9; 4 × 3 is
    /// the reference's usual choice). A bitmap larger than 100 pixels on a side is
    /// first scaled to fit: the hash keeps no more detail than that. Alpha is ignored,
    /// as the format has none (colours are read with it divided out).
    public static func encode(_ bitmap: Bitmap, components: (x: Int, y: Int) = (4, 3)) -> String {
        let image = bitmap.width > 100 || bitmap.height > 100 ? bitmap.fitted(to: .thumbnail(100)) : bitmap
        let nx = min(9, max(1, components.x)), ny = min(9, max(1, components.y))
        let (w, h) = (image.width, image.height)
        var linear = [SIMD4<Double>](repeating: .zero, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                let p = image[x, y]
                func straight(_ v: UInt8) -> Int {
                    p.a == 255 || p.a == 0 ? Int(v) : min(255, (Int(v) * 255 + Int(p.a) / 2) / Int(p.a))
                }
                linear[y * w + x] = SIMD4(linearValue(straight(p.r)), linearValue(straight(p.g)), linearValue(straight(p.b)), 0)
            }
        }
        var factors: [SIMD4<Double>] = []
        for j in 0..<ny {
            for i in 0..<nx {
                let normalisation = i == 0 && j == 0 ? 1.0 : 2.0
                var sum = SIMD4<Double>.zero
                for y in 0..<h {
                    let fy: Double = cos(Double.pi * Double(j) * Double(y) / Double(h))
                    for x in 0..<w {
                        let fx: Double = cos(Double.pi * Double(i) * Double(x) / Double(w))
                        sum += (fx * fy) * linear[y * w + x]
                    }
                }
                factors.append(sum * (normalisation / Double(w * h)))
            }
        }
        var hash = base83((nx - 1) + (ny - 1) * 9, length: 1)
        let ac = factors.dropFirst()
        let maximum: Double
        if ac.isEmpty {
            maximum = 1
            hash += base83(0, length: 1)
        } else {
            let actual = ac.map { max(abs($0.x), abs($0.y), abs($0.z)) }.max()!
            let quantised = Int(max(0, min(82, (actual * 166 - 0.5).rounded(.down))))
            maximum = Double(quantised + 1) / 166
            hash += base83(quantised, length: 1)
        }
        let dc = factors[0]
        hash += base83(sRGBValue(dc.x) << 16 + sRGBValue(dc.y) << 8 + sRGBValue(dc.z), length: 4)
        for f in ac {
            func quantise(_ v: Double) -> Int {
                Int(max(0, min(18, (signedPower(v / maximum, 0.5) * 9 + 9.5).rounded(.down))))
            }
            hash += base83(quantise(f.x) * 19 * 19 + quantise(f.y) * 19 + quantise(f.z), length: 2)
        }
        return hash
    }

    /// The placeholder `hash` stands for, `width` × `height` pixels (each clamped to
    /// 1...512: decode small and let the view scale it up), opaque. `punch` above 1
    /// strengthens the colours' variation, as the reference's `punch`.
    /// `ImagoError.invalidHash` when the string is not a BlurHash.
    public static func decode(_ hash: String, width: Int = 32, height: Int = 32, punch: Double = 1) throws(ImagoError) -> Bitmap {
        let digits = Array(hash.utf8)
        guard digits.count >= 6 else {
            throw .invalidHash(kind: "BlurHash", reason: "'\(hash.prefix(64))' has \(digits.count) characters, fewer than 6")
        }
        func value(_ range: Range<Int>) throws(ImagoError) -> Int {
            var v = 0
            for index in range {
                guard let digit = alphabetIndex[digits[index]] else {
                    throw .invalidHash(kind: "BlurHash", reason: "'\(hash.prefix(64))' has a character outside base 83 at offset \(index)")
                }
                v = v * 83 + digit
            }
            return v
        }
        let size = try value(0..<1)
        let nx = size % 9 + 1, ny = size / 9 + 1
        guard digits.count == 4 + 2 * nx * ny else {
            throw .invalidHash(kind: "BlurHash", reason: "'\(hash.prefix(64))' has \(digits.count) characters; its \(nx) × \(ny) components need \(4 + 2 * nx * ny)")
        }
        let maximum = Double(try value(1..<2) + 1) / 166 * (punch.isFinite ? max(1, punch) : 1)
        var colors: [SIMD4<Double>] = []
        let dc = try value(2..<6)
        colors.append(SIMD4(linearValue(dc >> 16), linearValue((dc >> 8) & 255), linearValue(dc & 255), 0))
        for index in 1..<nx * ny {
            let v = try value(4 + index * 2 ..< 6 + index * 2)
            func unquantise(_ q: Int) -> Double { signedPower(Double(q - 9) / 9, 2) * maximum }
            colors.append(SIMD4(unquantise(v / (19 * 19)), unquantise((v / 19) % 19), unquantise(v % 19), 0))
        }
        let w = min(512, max(1, width)), h = min(512, max(1, height))
        let cosX = (0..<nx).map { i in (0..<w).map { x in cos(Double.pi * Double(x) * Double(i) / Double(w)) } }
        let cosY = (0..<ny).map { j in (0..<h).map { y in cos(Double.pi * Double(y) * Double(j) / Double(h)) } }
        var pixels = [UInt8](repeating: 255, count: w * h * 4)
        for y in 0..<h {
            for x in 0..<w {
                var c = SIMD4<Double>.zero
                for j in 0..<ny {
                    for i in 0..<nx { c += colors[i + j * nx] * (cosX[i][x] * cosY[j][y]) }
                }
                let o = (y * w + x) * 4
                pixels[o] = UInt8(sRGBValue(c.x))
                pixels[o + 1] = UInt8(sRGBValue(c.y))
                pixels[o + 2] = UInt8(sRGBValue(c.z))
            }
        }
        return Bitmap(width: w, height: h, pixels: pixels)
    }

    /// The component counts a hash names (across, down); nil when its first
    /// character is not a base-83 digit.
    public static func components(of hash: String) -> (x: Int, y: Int)? {
        guard let first = hash.utf8.first, let size = alphabetIndex[first] else { return nil }
        return (size % 9 + 1, size / 9 + 1)
    }

    private static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~".utf8)
    private static let alphabetIndex: [UInt8: Int] = Dictionary(uniqueKeysWithValues: alphabet.enumerated().map { ($1, $0) })

    private static func base83(_ value: Int, length: Int) -> String {
        var divisor = 1
        for _ in 1..<max(1, length) { divisor *= 83 }
        var text: [UInt8] = []
        for _ in 0..<length {
            text.append(alphabet[(value / divisor) % 83])
            divisor /= 83
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// An sRGB byte in linear light.
    private static func linearValue(_ value: Int) -> Double {
        let v = Double(value) / 255
        return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4)
    }

    /// Linear light as an sRGB byte, rounded as the reference rounds.
    private static func sRGBValue(_ value: Double) -> Int {
        let v = max(0, min(1, value))
        return v <= 0.0031308 ? Int(v * 12.92 * 255 + 0.5) : Int((1.055 * pow(v, 1 / 2.4) - 0.055) * 255 + 0.5)
    }

    private static func signedPower(_ value: Double, _ exponent: Double) -> Double {
        (value < 0 ? -1 : 1) * pow(abs(value), exponent)
    }
}

/// JavaScript's `Math.round`: halves go up, towards +∞ (Swift's `rounded()` takes
/// them away from zero), as the ThumbHash reference rounds.
private func jsRound(_ value: Double) -> Double {
    (value + 0.5).rounded(.down)
}
