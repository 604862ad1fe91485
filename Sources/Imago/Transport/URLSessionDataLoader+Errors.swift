import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Errors

extension URLSessionDataLoader {
    /// Translates URLSession's errors into the loaders' shared failures
    /// (`TransferFailure`), keeping URLSession's code and the socket error beneath it.
    static func map(_ error: Error, url: URL) -> ImagoError {
        let nsError = error as NSError
        let errno = socketErrno(of: nsError)
        let message = nsError.localizedDescription
        guard nsError.domain == NSURLErrorDomain else {
            return .network(url: url.absoluteString, reason: message, code: .unknown, errno: errno)
        }
        if let refused = TransferFailure.refusedResponse(libcurlMessage: message) { return refused.error(url: url) }
        // Optional on purpose: the initialiser is failable on Linux (where `Code` is
        // an enum of the known codes) and not on Apple platforms.
        let known: URLError.Code? = URLError.Code(rawValue: nsError.code)
        var code = known ?? .unknown
        if code == .unknown, let tls = TransferFailure.tlsCode(libcurlMessage: message) { code = tls }
        let failure: TransferFailure
        switch code {
        case .cancelled: return .cancelled
        case .timedOut: failure = .stoppedResponding
        case .cannotConnectToHost: failure = .cannotConnect(detail: "connection refused or unreachable")
        case .networkConnectionLost: failure = .connectionEnded(lost: true, received: nil, expected: nil)
        case .cannotFindHost, .dnsLookupFailed: failure = .hostNotFound
        case .notConnectedToInternet: failure = .notConnectedToInternet
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData:
            failure = .malformedResponse
        case .zeroByteResource: failure = .emptyResponse
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
             .clientCertificateRejected, .clientCertificateRequired:
            failure = .secureConnection(message)
        case .httpTooManyRedirects: return .redirectRefused(url: url.absoluteString, reason: "too many redirects")
        case .redirectToNonExistentLocation: return .redirectRefused(url: url.absoluteString, reason: "the redirect has no target")
        case .dataLengthExceedsMaximum:
            return .network(url: url.absoluteString, reason: "the response is larger than URLSession accepts", code: code, errno: errno)
        case .unsupportedURL: failure = .notHTTP
        case .badURL: return .invalidURL(url.absoluteString)
        default:
            if message.localizedCaseInsensitiveContains("chunked") {
                return TransferFailure.brokenChunking(message).error(url: url, errno: errno)
            }
            let detail = message.isEmpty || message.hasPrefix("The operation could not be completed") ? "URL error \(nsError.code)" : message
            failure = .other(detail)
        }
        return failure.error(url: url, code: code, errno: errno)
    }

    /// The socket error beneath a URLSession failure, when the platform reports it.
    ///
    /// Apple's URLSession gives it in the error's userInfo (stream error domain 1,
    /// POSIX, with the errno as the stream error code) or as an underlying
    /// `NSPOSIXErrorDomain` error. URLSession on Linux passes on only libcurl's
    /// message, which for a failed socket call ends in `strerror`'s words for the
    /// errno ("Recv failure: Connection reset by peer"); the errors a socket fails
    /// with are recognised there. Nil when neither says.
    static func socketErrno(of error: NSError) -> Int32? {
        var current: NSError? = error
        var depth = 0
        while let error = current, depth < 4 {
            if error.domain == NSPOSIXErrorDomain { return Int32(truncatingIfNeeded: error.code) }
            if error.userInfo["_kCFStreamErrorDomainKey"] as? Int == 1,
               let code = error.userInfo["_kCFStreamErrorCodeKey"] as? Int, code > 0 {
                return Int32(truncatingIfNeeded: code)
            }
            let message = error.localizedDescription
            if let (code, _) = socketErrors.first(where: { message.hasSuffix(": " + $0.1) || message.contains(": \($0.1) ") }) {
                return code
            }
            current = error.userInfo[NSUnderlyingErrorKey] as? NSError
            depth += 1
        }
        return nil
    }

    /// The errnos a connection fails with, and `strerror`'s words for each (what
    /// libcurl puts in its messages).
    private static let socketErrors: [(Int32, String)] = [
        ECONNREFUSED, ECONNRESET, ECONNABORTED, ENETRESET, EPIPE, ETIMEDOUT,
        ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, ENOTCONN,
    ].map { ($0, String(cString: strerror($0))) }
}
