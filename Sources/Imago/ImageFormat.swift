import Foundation

/// An image file format, as recognised from the file's first bytes.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case jpeg, png, gif, webp
    case avif, heic, bmp, tiff, ico, svg

    /// The conventional upper-case name used in messages ("JPEG", "WebP").
    public var name: String {
        switch self {
        case .jpeg: "JPEG"
        case .png: "PNG"
        case .gif: "GIF"
        case .webp: "WebP"
        case .avif: "AVIF"
        case .heic: "HEIC"
        case .bmp: "BMP"
        case .tiff: "TIFF"
        case .ico: "ICO"
        case .svg: "SVG"
        }
    }

    /// Finds the format from the bytes alone.
    ///
    /// File extensions and Content-Type headers lie often enough (a `.jpg` that is a
    /// PNG, `application/octet-stream` for everything) that only the signature counts.
    public static func detect<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> ImageFormat? {
        let head = Array(bytes.prefix(64))
        func starts(_ signature: [UInt8], at offset: Int = 0) -> Bool {
            head.count >= offset + signature.count
                && head[offset..<offset + signature.count].elementsEqual(signature)
        }
        func ascii(_ text: String, at offset: Int = 0) -> Bool {
            starts(Array(text.utf8), at: offset)
        }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if ascii("GIF87a") || ascii("GIF89a") { return .gif }
        if ascii("RIFF") && ascii("WEBP", at: 8) { return .webp }
        if ascii("ftyp", at: 4), head.count >= 12 {
            // ISO base media: the major brand says which codec is inside.
            let brand = String(decoding: head[8..<12], as: UTF8.self)
            if ["avif", "avis"].contains(brand) { return .avif }
            if ["heic", "heix", "hevc", "hevx", "heim", "heis", "mif1", "msf1"].contains(brand) {
                return .heic
            }
        }
        if ascii("BM") && head.count >= 14 { return .bmp }
        // Classic TIFF (version 42) and BigTIFF (43, 64-bit offsets), either byte order.
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A])
            || starts([0x49, 0x49, 0x2B, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2B]) { return .tiff }
        if starts([0x00, 0x00, 0x01, 0x00]) || starts([0x00, 0x00, 0x02, 0x00]) {
            // ICO and CUR: a zero reserved word, a type of 1 or 2, and at least one image.
            if head.count >= 6 && (head[4] != 0 || head[5] != 0) { return .ico }
        }
        if looksLikeSVG(bytes) { return .svg }
        return nil
    }

    /// SVG is text, so its signature is an `<svg` element near the start, after an
    /// optional byte-order mark, XML declaration, comments and doctype.
    private static func looksLikeSVG<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        let text = String(decoding: bytes.prefix(1024), as: UTF8.self)
        let trimmed = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        guard trimmed.hasPrefix("<") else { return false }
        return text.contains("<svg")
    }
}
