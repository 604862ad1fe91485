/// The one error type Imago throws.
///
/// Every failure reaches the caller as one of these cases, so an app can switch over
/// them; `description` is a sentence a person can act on.
public enum ImagoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The bytes are in a format Imago recognises but cannot decode on this platform
    /// (AVIF, HEIC, BMP, TIFF, ICO, SVG on Linux), or in no format it knows at all
    /// (`format` is nil).
    case unsupportedFormat(ImageFormat?)
    /// A decoder rejected the data: corrupt, truncated, or using a feature the codec
    /// library lacks. `reason` comes from the codec where it says something useful.
    case decodingFailed(format: ImageFormat, reason: String)
    /// The image would decode to more pixels than allowed; refused from the header,
    /// before any pixel buffer was allocated. `frames` counts animation frames.
    case imageTooLarge(width: Int, height: Int, frames: Int, limit: Int)
    /// Turning pixels back into a file failed.
    case encodingFailed(format: ImageFormat, reason: String)
    /// A local file could not be read or written.
    case fileError(path: String, reason: String)

    public var description: String {
        switch self {
        case .unsupportedFormat(let format?):
            return "\(format.name) images are recognised but not supported on this platform"
        case .unsupportedFormat(nil):
            return "the data is not an image in any known format"
        case .decodingFailed(let format, let reason):
            return "\(format.name) decoding failed: \(reason)"
        case .imageTooLarge(let width, let height, let frames, let limit):
            let size = frames > 1 ? "\(width)×\(height) × \(frames) frames" : "\(width)×\(height)"
            return "image is too large to decode: \(size) exceeds the limit of \(limit) pixels"
        case .encodingFailed(let format, let reason):
            return "\(format.name) encoding failed: \(reason)"
        case .fileError(let path, let reason):
            return "\(path): \(reason)"
        }
    }
}
