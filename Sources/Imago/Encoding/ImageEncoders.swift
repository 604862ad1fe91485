extension ImageFormat {
    /// The format a file name's extension conventionally stands for, ignoring case and
    /// one leading dot; nil for an extension no image format uses.
    ///
    /// For choosing what to *write*, where the name is all there is. When reading, the
    /// bytes decide (`detect(_:)`): extensions lie too often to trust.
    package init?(pathExtension: String) {
        let ext = pathExtension.hasPrefix(".") ? pathExtension.dropFirst() : Substring(pathExtension)
        switch ext.lowercased() {
        case "jpg", "jpeg", "jpe", "jfif": self = .jpeg
        case "png": self = .png
        case "gif": self = .gif
        case "webp": self = .webp
        case "avif": self = .avif
        case "heic", "heif": self = .heic
        case "bmp", "dib": self = .bmp
        case "tif", "tiff": self = .tiff
        // Cursors share the icon container, and `detect` calls them `.ico` too.
        case "ico", "cur": self = .ico
        case "svg": self = .svg
        case "jxl": self = .jxl
        default: return nil
        }
    }
}

/// The built-in encoders, one a format (JPEG, PNG, and WebP on Linux), and the one for
/// a format, so that callers (the `imago` tool, an app saving a file) need not know
/// which formats can be written on this platform.
public enum ImageEncoders {
    /// An encoder for `format` with default settings, or nil when Imago cannot write
    /// that format here: PNG and JPEG everywhere, WebP on Linux (libwebp; ImageIO
    /// has no WebP writer); never GIF, AVIF, HEIC, BMP, TIFF, ICO, SVG or JPEG XL.
    ///
    /// `quality` (1…100, clamped) sets the JPEG quality and the lossy WebP quality;
    /// PNG is lossless and ignores it. Nil means each encoder's own default, which
    /// differ (85 for JPEG, 80 for WebP) because the two scales do not match.
    public static func encoder(for format: ImageFormat, quality: Int? = nil) -> (any ImageEncoding)? {
        switch format {
        #if os(Linux) || canImport(ImageIO)
        case .png: return PNG()
        case .jpeg: return JPEG(quality: quality ?? JPEG.defaultQuality)
        #endif
        #if os(Linux)
        case .webp: return WebP(quality: quality.map { Float(min(max($0, 1), 100)) } ?? WebP.defaultQuality)
        #endif
        default: return nil
        }
    }
}
