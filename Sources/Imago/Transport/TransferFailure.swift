import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a transfer failed, in words shared by both HTTP loaders: each maps its native
/// errors (libcurl's codes, URLSession's) into one of these, so callers read the
/// same reason, with the same `URLError.Code`, whichever loader ran.
enum TransferFailure {
    /// Nothing arrived for the idle timeout. The whole-load deadline
    /// (`ImagoError.timedOut`) belongs to the image loader.
    case stoppedResponding
    /// No connection; `detail` says what the client knows when the errno does not.
    case cannotConnect(detail: String)
    case hostNotFound
    case notConnectedToInternet
    /// The connection ended before the response did: lost (a socket error) or
    /// closed cleanly; said in bytes when the body's length is known.
    case connectionEnded(lost: Bool, received: Int64?, expected: Int64?)
    /// The connection closed, or was reset, before any response.
    case closedWithoutResponse
    case malformedResponse
    case emptyResponse
    /// libcurl refused the reply: a server that does not speak HTTP (or speaks
    /// HTTP/0.9). The URL itself was checked before the transfer.
    case notHTTP
    /// Broken chunking does not pass on its own: not worth a retry.
    case brokenChunking(String)
    case badCompression
    case secureConnection(String)
    case http2(String)
    case noResponse
    case invalidContentLength(String)
    case headersTooLarge(String)
    /// No file descriptor was left for a connection: nothing was tried, so it is
    /// neither a connection failure nor retried.
    case outOfDescriptors
    /// Anything else, in the client's own words ("transfer closed with 6000 bytes
    /// remaining to read"), usually the most precise thing to say.
    case other(String)

    /// The code Apple's URLSession gives the same failure.
    var code: URLError.Code {
        switch self {
        case .stoppedResponding: .timedOut
        case .cannotConnect: .cannotConnectToHost
        case .hostNotFound: .cannotFindHost
        case .notConnectedToInternet: .notConnectedToInternet
        case .connectionEnded: .networkConnectionLost
        case .closedWithoutResponse, .malformedResponse, .noResponse: .badServerResponse
        case .emptyResponse: .zeroByteResource
        case .notHTTP: .unsupportedURL
        case .brokenChunking, .invalidContentLength, .headersTooLarge: .cannotParseResponse
        case .badCompression: .cannotDecodeContentData
        case .secureConnection: .secureConnectionFailed
        case .http2: .networkConnectionLost
        case .outOfDescriptors: .resourceUnavailable
        case .other: .unknown
        }
    }

    /// The reason, as `ImagoError.network` gives it; `errno` words a few of them.
    func reason(errno: Int32?) -> String {
        switch self {
        case .stoppedResponding: return "the server stopped responding"
        case .cannotConnect(let detail):
            return switch errno {
            case ECONNREFUSED: "the server refused the connection"
            case EHOSTUNREACH, ENETUNREACH: "the server is unreachable"
            default: "could not connect to the server (\(detail))"
            }
        case .hostNotFound: return "the server's host name could not be resolved"
        case .notConnectedToInternet: return "there is no network connection"
        case .connectionEnded(let lost, let received, let expected):
            let ended = lost ? "was lost" : "closed"
            guard let received, let expected, received < expected else {
                return "the connection \(ended) before the response was complete"
            }
            return "the connection \(ended) after \(received) of \(expected) bytes"
        case .closedWithoutResponse:
            if errno == ECONNRESET { return "the server reset the connection before its response was complete" }
            return "the server closed the connection without a response"
        case .malformedResponse:
            if errno == ECONNRESET { return "the server reset the connection before its response was complete" }
            return "the server sent a malformed response"
        case .emptyResponse: return "the server sent an empty response"
        case .notHTTP: return "the server's reply is not HTTP"
        case .brokenChunking(let message): return "the server's chunked encoding is broken: \(message)"
        case .badCompression: return "the server's compressed body could not be decompressed"
        case .secureConnection(let message): return "the secure connection failed: \(message)"
        case .http2(let message): return "the HTTP/2 stream failed: \(message)"
        case .noResponse: return "the server sent no response"
        case .invalidContentLength(let value): return "the server sent an invalid Content-Length (\(value))"
        case .headersTooLarge(let detail): return "the server sent response headers too large to read (\(detail))"
        case .outOfDescriptors: return "too many open files: no descriptor is left for a connection"
        case .other(let message): return "the transfer failed: \(message)"
        }
    }

    /// The error for a load of `url`, with `code` in place of the usual one where
    /// the client said something more precise (URLSession's own code, a TLS
    /// failure's kind).
    func error(url: URL, code: URLError.Code? = nil, errno: Int32? = nil) -> ImagoError {
        .network(url: url.absoluteString, reason: reason(errno: errno), code: code ?? self.code, errno: errno)
    }

    // MARK: - Reading clients' messages and headers

    /// The most bytes of response headers read (the status line and every field of
    /// one response); a server sending more gets a clear error, not a retry.
    /// Browsers stop at about 256 KiB; libcurl at 300 KB.
    static let maximumHeaderBytes = 256 << 10

    /// A response libcurl refused before its body, read from its message: headers
    /// over its limit ("Too large response headers: 308022 > 307200", or "Out of
    /// memory" for one field over 100 KB) or a Content-Length it cannot read
    /// ("Invalid Content-Length: value", a negative one). Nil for any other message.
    /// Both loaders' failures pass through it (URLSession on Linux is libcurl
    /// underneath), so they say the same; neither is retried.
    static func refusedResponse(libcurlMessage message: String) -> TransferFailure? {
        let text = message.lowercased()
        if text.contains("too large response headers") || text.contains("header") && text.contains("too large") {
            return .headersTooLarge(message)
        }
        if text == "out of memory" { return .headersTooLarge("over libcurl's 100 KB for one field") }
        if text.contains("content-length") { return .invalidContentLength("libcurl: \(message)") }
        return nil
    }

    /// The failure of a Content-Length that is not one length, or nil when it is
    /// (RFC 9110 §8.6): digits that fit in 63 bits; a list of several values is
    /// valid only when they all agree, as one repeated field joined with commas.
    /// libcurl ignores a length it cannot represent and reads to the close, and
    /// takes the last of several: either way the body would not be what the server
    /// claimed.
    static func contentLengthFailure(_ value: String) -> TransferFailure? {
        let values = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingHTTPWhitespace }
        if let first = values.first, values.allSatisfy({ $0 == first }), !first.isEmpty,
           first.allSatisfy({ $0.isASCII && $0.isNumber }), Int64(first) != nil {
            return nil
        }
        return TransferFailure.invalidContentLength(value.count > 40 ? String(value.prefix(40)) + "…" : value)
    }

    /// The `URLError.Code` of a TLS failure from libcurl's message ("SSL certificate
    /// problem: self-signed certificate", "OpenSSL/3.0.19: error:0A00010B:SSL
    /// routines::wrong version number"): the code Apple's URLSession gives the same
    /// failure. URLSession on Linux reports these as `.unknown` with the message,
    /// and the curl loader's codes are coarser. Nil for a message not about TLS.
    static func tlsCode(libcurlMessage message: String) -> URLError.Code? {
        let text = message.lowercased()
        if text.hasPrefix("ssl certificate problem") {
            if text.contains("expired") { return .serverCertificateHasBadDate }
            if text.contains("not yet valid") { return .serverCertificateNotYetValid }
            if text.contains("self-signed") || text.contains("self signed") || text.contains("issuer certificate") {
                return .serverCertificateHasUnknownRoot
            }
            return .serverCertificateUntrusted
        }
        // A certificate for another host name.
        if text.contains("certificate subject name") { return .serverCertificateUntrusted }
        let tlsLibraries = ["ssl", "openssl", "tls", "gnutls", "wolfssl", "mbedtls", "rustls", "schannel", "bearssl"]
        let firstWord = text.prefix { $0.isLetter }
        if tlsLibraries.contains(String(firstWord)) || text.contains("ssl certificate") {
            return .secureConnectionFailed
        }
        return nil
    }
}
