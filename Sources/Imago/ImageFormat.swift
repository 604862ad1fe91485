import Foundation

/// An image file format, as recognised from the file's first bytes.
public enum ImageFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case jpeg, png, gif, webp
    case avif, heic, bmp, tiff, ico, svg
    /// JPEG XL, the naked codestream or the ISO BMFF container.
    case jxl

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
        case .jxl: "JPEG XL"
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
        // JPEG XL: the naked codestream, or the container's 12-byte `JXL ` box.
        if starts([0xFF, 0x0A]) || starts([0, 0, 0, 0x0C, 0x4A, 0x58, 0x4C, 0x20, 0x0D, 0x0A, 0x87, 0x0A]) { return .jxl }
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

    /// SVG is text, so its signature is its root element: `<svg` (or `<prefix:svg`)
    /// after an optional byte-order mark, XML declaration, comments, processing
    /// instructions and doctype. An HTML page with an inline `<svg>` is not an SVG.
    private static func looksLikeSVG<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        // Editors' comments and doctypes before the root are short; 4 KB is plenty.
        var text = Substring(String(decoding: bytes.prefix(4096), as: UTF8.self))
        text = text.drop { $0 == "\u{FEFF}" || $0.isWhitespace }
        while text.hasPrefix("<?") || text.hasPrefix("<!") {
            let end: String
            if text.hasPrefix("<!--") {
                end = "-->"
            } else if text.hasPrefix("<!DOCTYPE"), let bracket = text.firstIndex(of: "["),
                      let close = text.firstIndex(of: ">"), bracket < close {
                // A doctype with an internal subset ends at `]>`.
                end = "]>"
            } else {
                end = text.hasPrefix("<?") ? "?>" : ">"
            }
            guard let range = text.range(of: end) else { return false }
            text = text[range.upperBound...].drop { $0.isWhitespace }
        }
        guard text.hasPrefix("<") else { return false }
        let name = text.dropFirst().prefix { !$0.isWhitespace && $0 != ">" && $0 != "/" }
        return name == "svg" || name.hasSuffix(":svg")
    }
}
