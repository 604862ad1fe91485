import Foundation

/// The form a sized or processed image takes in the disk tier: lossless, about as
/// compact as PNG for photos, and many times cheaper to write and read back.
///
/// A variant is written on every cold load of a thumbnail, in the decoding queue, so
/// what it costs to encode is paid by the cold load itself: PNG's deflate would add
/// about half again to a thumbnail's decode, a lossy JPEG would change the pixels a
/// second load shows. The operations are those of QOI (a run of the previous pixel,
/// a look-up in a table of 64 recent pixels, a small difference from the previous
/// pixel, or the pixel itself), applied to the bitmap's premultiplied RGBA as it is,
/// so nothing is lost to un-premultiplying. Since real QOI holds straight alpha, the
/// files carry a magic of their own and are never taken for QOI.
///
/// Layout: "imgv", a version byte, the source format's name (a length byte, then
/// UTF-8), width and height (UInt32, big-endian), then the operations, then seven
/// zero bytes and a one. Version 1 is an sRGB bitmap; version 2, a bitmap in another
/// colour space, whose name (a length byte, then UTF-8) follows the format's, so
/// that every sRGB variant written before stays readable.
enum VariantCodec {
    private static let magic: [UInt8] = Array("imgv".utf8)
    private static let sRGBVersion: UInt8 = 1
    private static let taggedVersion: UInt8 = 2
    private static let end: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]

    private static let opIndex: UInt8 = 0x00
    private static let opDiff: UInt8 = 0x40
    private static let opLuma: UInt8 = 0x80
    private static let opRun: UInt8 = 0xC0
    private static let opRGB: UInt8 = 0xFE
    private static let opRGBA: UInt8 = 0xFF

    /// Whether `data` is a variant in this form (older variants were PNG or JPEG).
    static func isVariant(_ data: Data) -> Bool {
        data.count >= magic.count && data.prefix(magic.count).elementsEqual(magic)
    }

    /// The first frame of `image`, encoded.
    static func encode(_ image: DecodedImage) -> Data {
        let bitmap = image.bitmap
        let width = bitmap.width, height = bitmap.height
        var out = [UInt8]()
        // The worst case is five bytes a pixel (every pixel a literal RGBA).
        out.reserveCapacity(32 + width * height * 5 + end.count)
        out += magic
        out.append(bitmap.colorSpace == .sRGB ? sRGBVersion : taggedVersion)
        let name = Array(image.format.rawValue.utf8)
        out.append(UInt8(name.count))
        out += name
        if bitmap.colorSpace != .sRGB {
            let space = Array(bitmap.colorSpace.rawValue.utf8)
            out.append(UInt8(space.count))
            out += space
        }
        for value in [UInt32(width), UInt32(height)] {
            out += [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        }
        bitmap.pixels.withUnsafeBufferPointer { pixels in
            var table = [UInt32](repeating: 0, count: 64)
            var previous: UInt32 = 0xFF00_0000  // r, g, b = 0, a = 255, as QOI starts
            var run = 0
            for y in 0..<height {
                var i = y * bitmap.bytesPerRow
                for _ in 0..<width {
                    let r = pixels[i], g = pixels[i + 1], b = pixels[i + 2], a = pixels[i + 3]
                    i += 4
                    let pixel = UInt32(r) | UInt32(g) << 8 | UInt32(b) << 16 | UInt32(a) << 24
                    if pixel == previous {
                        run += 1
                        if run == 62 {
                            out.append(opRun | UInt8(run - 1))
                            run = 0
                        }
                        continue
                    }
                    if run > 0 {
                        out.append(opRun | UInt8(run - 1))
                        run = 0
                    }
                    let slot = hash(r, g, b, a)
                    if table[slot] == pixel {
                        out.append(opIndex | UInt8(slot))
                    } else {
                        table[slot] = pixel
                        if a == UInt8(previous >> 24) {
                            let dr = Int(Int8(bitPattern: r &- UInt8(previous & 0xFF)))
                            let dg = Int(Int8(bitPattern: g &- UInt8(previous >> 8 & 0xFF)))
                            let db = Int(Int8(bitPattern: b &- UInt8(previous >> 16 & 0xFF)))
                            let drg = dr - dg, dbg = db - dg
                            if (-2...1).contains(dr) && (-2...1).contains(dg) && (-2...1).contains(db) {
                                out.append(opDiff | UInt8(dr + 2) << 4 | UInt8(dg + 2) << 2 | UInt8(db + 2))
                            } else if (-32...31).contains(dg) && (-8...7).contains(drg) && (-8...7).contains(dbg) {
                                out.append(opLuma | UInt8(dg + 32))
                                out.append(UInt8(drg + 8) << 4 | UInt8(dbg + 8))
                            } else {
                                out += [opRGB, r, g, b]
                            }
                        } else {
                            out += [opRGBA, r, g, b, a]
                        }
                    }
                    previous = pixel
                }
            }
            if run > 0 { out.append(opRun | UInt8(run - 1)) }
        }
        out += end
        return Data(out)
    }

    /// The image in `data`; nil when it is not a whole, well-formed variant or holds
    /// more than `maximumPixelCount` pixels.
    static func decode(_ data: Data, maximumPixelCount: Int) -> DecodedImage? {
        data.withUnsafeBytes { decode($0, maximumPixelCount: maximumPixelCount) }
    }

    // A warm thumbnail load is mostly this loop, so it keeps the pixel packed in one
    // word (stored whole, runs as repeated stores) and its table in a fixed buffer:
    // byte-by-byte stores into an array made it half of a warm `imago fetch`'s CPU.
    private static func decode(_ input: UnsafeRawBufferPointer, maximumPixelCount: Int) -> DecodedImage? {
        guard input.count > 6, input.starts(with: magic), input[4] == sRGBVersion || input[4] == taggedVersion else { return nil }
        var p = 6 + Int(input[5])
        guard input.count >= p + 8 + end.count,
              let format = ImageFormat(rawValue: String(decoding: input[6..<p], as: UTF8.self)) else { return nil }
        var colorSpace = Bitmap.ColorSpace.sRGB
        if input[4] == taggedVersion {
            let start = p + 1
            p = start + Int(input[p])
            guard input.count >= p + 8 + end.count,
                  let space = Bitmap.ColorSpace(rawValue: String(decoding: input[start..<p], as: UTF8.self)) else { return nil }
            colorSpace = space
        }
        func uint32(_ at: Int) -> Int {
            Int(UInt32(bigEndian: input.loadUnaligned(fromByteOffset: at, as: UInt32.self)))
        }
        let width = uint32(p), height = uint32(p + 4)
        p += 8
        guard width > 0, height > 0, width <= maximumPixelCount / height else { return nil }
        let count = width * height
        let limit = input.count - end.count
        var failed = false
        let pixels = [UInt8](unsafeUninitializedCapacity: count * 4) { buffer, initialized in
            let out = UnsafeMutableRawPointer(buffer.baseAddress!)
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 128) { tables in
                // The recent pixels, then the colour difference each small-difference
                // operation stands for, packed as a pixel is.
                let table = UnsafeMutableBufferPointer(rebasing: tables[0..<64])
                let diffs = UnsafeMutableBufferPointer(rebasing: tables[64..<128])
                table.initialize(repeating: 0)
                for op in 0..<64 {
                    diffs[op] = Self.packed(UInt8(op >> 4 & 3) &- 2, UInt8(op >> 2 & 3) &- 2, UInt8(op & 3) &- 2)
                }
                var pixel: UInt32 = 0xFF00_0000  // r, g, b = 0, a = 255, as the encoder starts
                var o = 0
                while o < count {
                    guard p < limit else { failed = true; return }
                    let op = input[p]
                    p += 1
                    if op < opRun {
                        if op < opDiff {
                            // The encoder names only a pixel held at its own slot, so
                            // storing it again would change nothing.
                            pixel = table[Int(op)]
                        } else {
                            if op < opLuma {
                                pixel = Self.adding(diffs[Int(op & 0x3F)], to: pixel)
                            } else {
                                guard p < limit else { failed = true; return }
                                let second = input[p]
                                p += 1
                                let dg = (op & 0x3F) &- 32
                                pixel = Self.adding(Self.packed(dg &+ (second >> 4) &- 8, dg, dg &+ (second & 0x0F) &- 8), to: pixel)
                            }
                            table[hash(pixel)] = pixel
                        }
                        out.storeBytes(of: pixel.littleEndian, toByteOffset: o &* 4, as: UInt32.self)
                        o += 1
                        continue
                    }
                    var repeats = 1
                    if op == opRGB {
                        guard p + 3 <= limit else { failed = true; return }
                        pixel = pixel & 0xFF00_0000 | UInt32(input[p]) | UInt32(input[p + 1]) << 8 | UInt32(input[p + 2]) << 16
                        p += 3
                    } else if op == opRGBA {
                        guard p + 4 <= limit else { failed = true; return }
                        pixel = UInt32(littleEndian: input.loadUnaligned(fromByteOffset: p, as: UInt32.self))
                        p += 4
                    } else {
                        // More than the image holds is cut at its end.
                        repeats = min(Int(op & 0x3F) + 1, count - o)
                    }
                    table[hash(pixel)] = pixel
                    for k in o..<(o + repeats) {
                        out.storeBytes(of: pixel.littleEndian, toByteOffset: k &* 4, as: UInt32.self)
                    }
                    o += repeats
                }
            }
            initialized = failed ? 0 : count * 4
        }
        guard !failed, input[limit...].elementsEqual(end) else { return nil }
        return DecodedImage(bitmap: Bitmap(width: width, height: height, pixels: pixels, colorSpace: colorSpace), format: format)
    }

    /// Colour differences packed as a pixel is (r, g, b from the low byte up), alpha 0.
    private static func packed(_ dr: UInt8, _ dg: UInt8, _ db: UInt8) -> UInt32 {
        UInt32(dr) | UInt32(dg) << 8 | UInt32(db) << 16
    }

    /// `pixel` with each byte of `difference` added to its own, wrapping within the
    /// byte: each pixel depends on the one before, so this addition is the loop's
    /// critical path, and four operations on the packed word keep it short.
    private static func adding(_ difference: UInt32, to pixel: UInt32) -> UInt32 {
        ((pixel & 0x7F7F_7F7F) &+ (difference & 0x7F7F_7F7F)) ^ ((pixel ^ difference) & 0x8080_8080)
    }

    private static func hash(_ pixel: UInt32) -> Int {
        hash(UInt8(truncatingIfNeeded: pixel), UInt8(truncatingIfNeeded: pixel >> 8),
             UInt8(truncatingIfNeeded: pixel >> 16), UInt8(truncatingIfNeeded: pixel >> 24))
    }

    private static func hash(_ r: UInt8, _ g: UInt8, _ b: UInt8, _ a: UInt8) -> Int {
        (Int(r) * 3 + Int(g) * 5 + Int(b) * 7 + Int(a) * 11) & 63
    }
}
