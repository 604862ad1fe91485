import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one error type Imago throws.
///
/// Every failure reaches the caller as one of these cases, so an app can switch over
/// them; `description` is a sentence a person can act on. Where something beneath
/// Imago failed (URLSession, a system call, a codec library), the case carries that
/// cause as data as well as in words: the `URLError.Code` and socket errno of a
/// network failure, the errno of a file error, the codec library's own message.
public enum ImagoError: Error, Sendable, Equatable, CustomStringConvertible, LocalizedError {
    /// The bytes are in a format Imago recognises but cannot decode on this platform
    /// (SVG, or a format whose library this build lacks), or in no format it knows at all
    /// (`format` is nil). `url` is the image's URL when the bytes came from a load,
    /// nil when they were handed to a decoder.
    case unsupportedFormat(ImageFormat?, url: String? = nil)
    /// A decoder rejected the data: corrupt, truncated, or using a feature the codec
    /// library lacks.
    ///
    /// `reason` is Imago's sentence (the codec's message itself when Imago has
    /// nothing to add); `codec` is what the codec library said, when it said
    /// anything, and is nil when Imago found the fault before or without it. `url` is
    /// the image's URL when the bytes came from a load, nil when they were handed to a
    /// decoder.
    case decodingFailed(format: ImageFormat, reason: String, codec: CodecMessage?, url: String? = nil)
    /// The image would decode to more pixels than allowed; refused from the header,
    /// before any pixel buffer was allocated. An animation's canvas counts once, so
    /// `frames` is 1 from Imago's decoders (a decoder of one's own may count more).
    case imageTooLarge(width: Int, height: Int, frames: Int, limit: Int)
    /// The animation has more frames than allowed (`DecodingOptions.maximumFrameCount`);
    /// refused from a scan of the file, before any frame was decoded.
    case tooManyFrames(count: Int, limit: Int)
    /// The JPEG has more scans than allowed (`DecodingOptions.maximumScanCount`);
    /// refused from a count of its scan headers, before any scan was decoded.
    case tooManyScans(count: Int, limit: Int)
    /// Decoding the image would hold more memory than allowed
    /// (`DecodingOptions.memoryBudget`): `bytes` is what the decode would need at
    /// once, counted from the header before any pixel buffer was allocated.
    case overMemoryBudget(format: ImageFormat, bytes: Int, budget: Int)
    /// The decode took longer than allowed (`DecodingOptions.timeout`, a loader's
    /// `loadingTimeout`) and was stopped where it stood.
    case decodingTimedOut(format: ImageFormat, seconds: Double)
    /// Turning pixels back into a file failed; `reason` and `codec` as for
    /// `decodingFailed`.
    case encodingFailed(format: ImageFormat, reason: String, codec: CodecMessage?)
    /// A placeholder hash (`kind`: "ThumbHash" or "BlurHash") is malformed: not
    /// base64 or base 83, shorter than its header announces, or naming no size;
    /// `reason` says which. Found before any pixel is made.
    case invalidHash(kind: String, reason: String)
    /// A local file could not be read or written.
    ///
    /// `errno` is the POSIX error of the call that failed (`ENOENT`, `EACCES`, …;
    /// `posixErrorCode` gives it as a `POSIXErrorCode`). A directory is refused with
    /// `EISDIR`, the error reading one gives; other files that are not regular files
    /// (devices, FIFOs) are refused before any call fails, with nil.
    case fileError(path: String, reason: String, errno: Int32?)
    /// The URL is malformed or the data loader does not take it
    /// (`DataLoading.canLoad(_:)`; by default http, https, file and data); found
    /// before any I/O.
    case invalidURL(String)
    /// The request cannot be sent as it is: a header name or value carries a line
    /// break or a NUL, which would let it smuggle headers of its own; found before
    /// any I/O.
    case invalidRequest(url: String, reason: String)
    /// The server answered with an HTTP error status.
    case httpStatus(Int, url: String)
    /// The transfer failed: refused, reset, dropped, unreachable, malformed response.
    ///
    /// `code` is the `URLError.Code` of the failure: `.cannotConnectToHost` for a
    /// refused or unreachable server, `.cannotFindHost` or `.dnsLookupFailed` for a
    /// name that did not resolve, `.networkConnectionLost` for a connection reset or
    /// closed before the body was complete, `.timedOut` for a server gone silent
    /// (URLSession's idle timer), `.secureConnectionFailed` and the
    /// `.serverCertificate…` codes for TLS. It is URLSession's own code, except where
    /// URLSession on Linux reports `.unknown` for a failure that has a code on Apple
    /// platforms (a TLS failure, a body cut short), or a body cut short as a success:
    /// Imago then gives the code Apple's URLSession uses, so that one `switch` works
    /// everywhere.
    ///
    /// `errno` is the socket error beneath (`ECONNRESET`, `ECONNREFUSED`, …) when the
    /// platform reports one, else nil; `posixErrorCode` gives it as a `POSIXErrorCode`.
    case network(url: String, reason: String, code: URLError.Code, errno: Int32?)
    /// The whole load took longer than allowed (`loadingTimeout`).
    case timedOut(url: String, seconds: Double)
    /// The response grew past the allowed size and was stopped.
    case responseTooLarge(url: String, limit: Int)
    /// A redirect was refused: a loop, too many hops, a downgrade from https to
    /// http, or a scheme other than http(s).
    case redirectRefused(url: String, reason: String)
    /// The load was cancelled before it finished.
    case cancelled
    /// A request that may only be answered from the caches
    /// (`ImageRequest.CachePolicy.onlyFromCache`) found nothing there; the origin
    /// was not asked.
    case notCached(url: String)

    /// What a codec library said when it refused: which library, in its own words.
    public struct CodecMessage: Sendable, Hashable, CustomStringConvertible {
        /// The library that spoke: "libjpeg-turbo", "libpng", "giflib" or "libwebp"
        /// on Linux; "ImageIO" on Apple platforms.
        public var library: String
        /// Its message, unaltered: libjpeg's or libpng's error text, giflib's
        /// `GifErrorString`, or the name of the status code libwebp and ImageIO
        /// return (they have no messages).
        public var message: String

        /// Makes a codec message.
        package init(library: String, message: String) {
            self.library = library
            self.message = message
        }

        /// "library: message".
        public var description: String { "\(library): \(message)" }
    }

    /// The `URLError.Code` of a network failure; nil for every other case.
    package var urlErrorCode: URLError.Code? {
        if case .network(_, _, let code, _) = self { return code }
        return nil
    }

    /// The POSIX error beneath a file or network failure, when one is known.
    public var posixErrorCode: POSIXErrorCode? {
        switch self {
        case .fileError(_, _, let code?), .network(_, _, _, let code?): POSIXErrorCode(rawValue: code)
        default: nil
        }
    }

    /// What the codec library said, for a decoding or encoding failure where it
    /// said something.
    public var codecMessage: CodecMessage? {
        switch self {
        case .decodingFailed(_, _, let codec, _), .encodingFailed(_, _, let codec): codec
        default: nil
        }
    }

    /// The same sentence as `description`, for code that shows any `Error` through
    /// `localizedDescription` (without it Foundation gives "The operation could not be
    /// completed" and the case's number).
    public var errorDescription: String? { description }

    /// A sentence naming what failed and why.
    public var description: String {
        switch self {
        case .unsupportedFormat(let format?, let url):
            return Self.naming(url) + "\(format.name) images are recognised but not supported on this platform"
        case .unsupportedFormat(nil, let url):
            return Self.naming(url) + "the data is not an image in any known format"
        case .decodingFailed(let format, let reason, let codec, let url):
            return Self.naming(url) + "\(format.name) decoding failed: \(reason)\(Self.attribution(codec, reason: reason))"
        case .imageTooLarge(let width, let height, let frames, let limit):
            let size = frames > 1 ? "\(width)×\(height) × \(frames) frames" : "\(width)×\(height)"
            return "image is too large to decode: \(size) exceeds the limit of \(limit) pixels"
        case .tooManyFrames(let count, let limit):
            return "the animation has too many frames to decode: \(count) exceeds the limit of \(limit)"
        case .tooManyScans(let count, let limit):
            return "the JPEG has too many scans to decode: \(count) exceeds the limit of \(limit)"
        case .overMemoryBudget(let format, let bytes, let budget):
            return "\(format.name) decoding would need \(Self.mebibytes(bytes)) of memory, over the decode's budget of \(Self.mebibytes(budget))"
        case .decodingTimedOut(let format, let seconds):
            return "\(format.name) decoding stopped: not done within \(seconds.shownAsSeconds) s"
        case .encodingFailed(let format, let reason, let codec):
            return "\(format.name) encoding failed: \(reason)\(Self.attribution(codec, reason: reason))"
        case .invalidHash(let kind, let reason):
            return "not a valid \(kind): \(reason)"
        case .fileError(let path, let reason, _):
            return "\(path): \(reason)"
        case .invalidURL(let url):
            return "'\(url)' is not a URL the data loader takes (Imago's own takes http and https URLs with a host, file paths and URLs, and data URLs)"
        case .invalidRequest(let url, let reason):
            return "\(url): the request cannot be sent: \(reason)"
        case .httpStatus(let status, let url):
            return "\(url): the server answered HTTP \(status)"
        case .network(let url, let reason, _, _):
            return "\(url): \(reason)"
        case .timedOut(let url, let seconds):
            return "\(url): not loaded within \(seconds.shownAsSeconds) s"
        case .responseTooLarge(let url, let limit):
            return "\(url): the \(url.hasPrefix("file:") ? "file" : "response") is larger than the limit of \(limit) bytes"
        case .redirectRefused(let url, let reason):
            return "\(url): redirect refused: \(reason)"
        case .cancelled:
            return "the load was cancelled"
        case .notCached(let url):
            return "\(url): not in any cache, and the request may not load it"
        }
    }

    /// The error of a load whose bytes did not decode, naming the image's URL: a log
    /// of many loads must say which image was bad. Other cases are returned as they
    /// are (they name their URL already, or have none).
    func naming(_ url: URL) -> ImagoError {
        switch self {
        case .unsupportedFormat(let format, nil):
            .unsupportedFormat(format, url: url.absoluteString)
        case .decodingFailed(let format, let reason, let codec, nil):
            .decodingFailed(format: format, reason: reason, codec: codec, url: url.absoluteString)
        default:
            self
        }
    }

    /// A byte count in MiB, with one decimal below 10 ("3.5 MiB", "805 MiB").
    private static func mebibytes(_ bytes: Int) -> String {
        let value = Double(bytes) / 1_048_576
        return value < 10 ? "\((value * 10).rounded() / 10) MiB" : "\(Int(value.rounded())) MiB"
    }

    /// "url: " before a sentence, a data URL cut after its media type (its bytes are
    /// the image); nothing without a URL.
    private static func naming(_ url: String?) -> String {
        guard let url else { return "" }
        if url.hasPrefix("data:"), let comma = url.firstIndex(of: ",") { return "\(url[..<comma]),…: " }
        return "\(url): "
    }

    /// " (libpng)" when the reason is the codec's own message, " (libjpeg-turbo:
    /// message)" when Imago worded it, nothing when no codec spoke.
    private static func attribution(_ codec: CodecMessage?, reason: String) -> String {
        guard let codec else { return "" }
        return codec.message == reason ? " (\(codec.library))" : " (\(codec))"
    }
}

extension Double {
    /// Seconds as a person reads them: "60", "0.3", and a tiny timeout as what it is
    /// ("0.0000001"), not rounded to "0".
    fileprivate var shownAsSeconds: String {
        formatted(.number.precision(.significantDigits(1...6)))
    }
}
