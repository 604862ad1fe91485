import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// MARK: - Errors

extension URLSessionDataLoader {
    /// Translates URLSession's errors into Imago's, keeping URLSession's code and the
    /// socket error beneath it.
    static func map(_ error: Error, url: URL) -> ImagoError {
        let nsError = error as NSError
        let address = url.absoluteString
        let errno = socketErrno(of: nsError)
        func network(_ code: URLError.Code, _ reason: String) -> ImagoError {
            .network(url: address, reason: reason, code: code, errno: errno)
        }
        guard nsError.domain == NSURLErrorDomain else {
            return network(.unknown, nsError.localizedDescription)
        }
        if let refused = Transfer.refusedResponse(libcurlMessage: nsError.localizedDescription, url: url) {
            return refused
        }
        // Optional on purpose: the initialiser is failable on Linux (where `Code` is
        // an enum of the known codes) and not on Apple platforms.
        let known: URLError.Code? = URLError.Code(rawValue: nsError.code)
        var code = known ?? .unknown
        if code == .unknown, let tls = tlsCode(libcurlMessage: nsError.localizedDescription) {
            code = tls
        }
        switch code {
        case .cancelled:
            return .cancelled
        case .timedOut:
            // URLSession's timeout is only an idle timer here; the whole-load
            // deadline (ImagoError.timedOut) belongs to the image loader.
            return network(code, "the server stopped responding")
        case .cannotConnectToHost:
            let reason = switch errno {
            case ECONNREFUSED: "the server refused the connection"
            case EHOSTUNREACH, ENETUNREACH: "the server is unreachable"
            default: "could not connect to the server (connection refused or unreachable)"
            }
            return network(code, reason)
        case .networkConnectionLost:
            return network(code, "the connection was lost before the response was complete")
        case .cannotFindHost, .dnsLookupFailed:
            return network(code, "the server's host name could not be resolved")
        case .notConnectedToInternet:
            return network(code, "there is no network connection")
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData:
            if errno == ECONNRESET { return network(code, "the server reset the connection before its response was complete") }
            return network(code, "the server sent a malformed response")
        case .zeroByteResource:
            return network(code, "the server sent an empty response")
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
             .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot,
             .clientCertificateRejected, .clientCertificateRequired:
            return network(code, "the secure connection failed: \(nsError.localizedDescription)")
        case .httpTooManyRedirects:
            return .redirectRefused(url: address, reason: "too many redirects")
        case .redirectToNonExistentLocation:
            return .redirectRefused(url: address, reason: "the redirect has no target")
        case .dataLengthExceedsMaximum:
            return network(code, "the response is larger than URLSession accepts")
        case .unsupportedURL:
            // The URL was checked before the transfer, so this is libcurl refusing
            // the reply: a server that does not speak HTTP (or speaks HTTP/0.9).
            return network(code, "the server's reply is not HTTP")
        case .badURL:
            return .invalidURL(address)
        default:
            // Broken chunking does not pass on its own: not worth a retry.
            if nsError.localizedDescription.localizedCaseInsensitiveContains("chunked") {
                return network(.cannotParseResponse, "the server's chunked encoding is broken: \(nsError.localizedDescription)")
            }
            // libcurl's own message is usually the most precise thing to say
            // ("transfer closed with 6000 bytes remaining to read").
            let message = nsError.localizedDescription
            let detail = message.isEmpty || message.hasPrefix("The operation could not be completed")
                ? "URL error \(nsError.code)" : message
            return network(code, "the transfer failed: \(detail)")
        }
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

    /// The `URLError.Code` of a TLS failure that URLSession on Linux reports as
    /// `.unknown` with libcurl's message ("SSL certificate problem: self-signed
    /// certificate", "OpenSSL/3.0.19: error:0A00010B:SSL routines::wrong version
    /// number"): the code Apple's URLSession gives the same failure. Nil for a
    /// message that is not about TLS.
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
