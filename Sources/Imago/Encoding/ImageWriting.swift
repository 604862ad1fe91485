import Foundation

extension DecodedImage {
    /// The image as the bytes of a `format` file: PNG and JPEG on every platform,
    /// WebP on Linux (`ImageEncoders` says what this platform writes). An animation
    /// gives its first frame.
    ///
    /// `quality` (1…100, clamped) is the JPEG or lossy WebP quality; nil means the
    /// encoder's default (JPEG 85, WebP 80); PNG ignores it. For settings beyond
    /// quality (a progressive JPEG, lossless WebP), call an encoder such as
    /// `ImageEncoders.JPEG` directly.
    ///
    /// ```swift
    /// let thumbnail = try await ImageLoader.shared.image(
    ///     for: ImageRequest(url: url, targetSize: .thumbnail(256))).image
    /// let jpeg = try thumbnail.encoded(as: .jpeg, quality: 80)
    /// ```
    ///
    /// Throws `ImagoError.encodingFailed` when the format cannot be written here or
    /// the codec refuses the image.
    public func encoded(as format: ImageFormat, quality: Int? = nil) throws(ImagoError) -> Data {
        guard let encoder = ImageEncoders.encoder(for: format, quality: quality) else {
            throw .encodingFailed(format: format, reason: "Imago cannot write \(format.name) files on this platform", codec: nil)
        }
        return try encoder.encode(bitmap)
    }

    /// Writes the image to the file at `url`, whole or not at all: it is encoded
    /// first, written to a temporary file in the same directory, flushed to disk and
    /// renamed over `url`. A reader never sees half a file; on any failure the file
    /// that was there is left as it was and no temporary file remains.
    ///
    /// `format` nil takes the format from the file name's extension (`.jpg`,
    /// `.png`, `.webp`); `quality` as for `encoded(as:quality:)`.
    ///
    /// ```swift
    /// try thumbnail.write(to: URL(fileURLWithPath: "thumbs/42.jpg"), quality: 80)
    /// ```
    ///
    /// Throws `ImagoError.encodingFailed` for a format that cannot be written here,
    /// `ImagoError.fileError` for a name whose extension names no format (errno
    /// nil) or a file that cannot be written (a missing directory, a full disk; the
    /// system's errno).
    public func write(to url: URL, format: ImageFormat? = nil, quality: Int? = nil) throws(ImagoError) {
        guard let format = format ?? ImageFormat(pathExtension: url.pathExtension) else {
            throw .fileError(
                path: url.path, reason: "the name's extension names no image format; give one (format: .png)", errno: nil)
        }
        guard url.isFileURL else {
            throw .fileError(path: url.absoluteString, reason: "not a file URL", errno: nil)
        }
        try AtomicFile.write(try encoded(as: format, quality: quality), to: url.path)
    }
}
