#if canImport(CCurl)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CurlDataLoader {
    /// Translates a libcurl failure into Imago's error, with the reason and the
    /// `URLError.Code` the URLSession loader gives the same failure, so callers see
    /// one set of errors whichever loader ran, and with the socket errno libcurl
    /// recorded (`CURLINFO_OS_ERRNO`) where the failure was a socket's.
    ///
    /// `received` and `expected` are the body bytes so far and the declared length,
    /// which turn a connection lost or closed early into "after 4000 of 10000 bytes".
    /// A load that found no file descriptor for its connection: nothing was tried, so
    /// it is neither a connection failure nor retried (`.resourceUnavailable`, with
    /// the errno, `EMFILE` or `ENFILE`).
    static func outOfDescriptors(url: URL, errno: Int32? = EMFILE) -> ImagoError {
        .network(
            url: url.absoluteString, reason: "too many open files: no descriptor is left for a connection",
            code: .resourceUnavailable, errno: errno)
    }

    static func map(
        _ code: CURLcode, message: String, errno osErrno: Int32?, url: URL, received: Int64?, expected: Int64?
    ) -> ImagoError {
        let address = url.absoluteString
        let socketCodes: Set<UInt32> = [
            CURLE_COULDNT_CONNECT.rawValue, CURLE_SEND_ERROR.rawValue, CURLE_RECV_ERROR.rawValue,
            CURLE_GOT_NOTHING.rawValue, CURLE_SSL_CONNECT_ERROR.rawValue,
        ]
        // libcurl keeps the last errno it saw; only these failures are about a socket,
        // and "would block" is never the reason one failed.
        let errno = socketCodes.contains(code.rawValue) && osErrno != EAGAIN && osErrno != EINPROGRESS ? osErrno : nil
        func network(_ urlCode: URLError.Code, _ reason: String) -> ImagoError {
            .network(url: address, reason: reason, code: urlCode, errno: errno)
        }
        let shortBody: String? = {
            guard let received, let expected, received < expected else { return nil }
            return "\(received) of \(expected) bytes"
        }()
        if code == CURLE_OUT_OF_MEMORY, message.isEmpty {
            // libcurl gives up on one header field over its 100 KB limit with "out of
            // memory", which would send a user looking in the wrong place.
            return Transfer.headersTooLarge(url: url, detail: "over libcurl's 100 KB for one field")
        }
        if let refused = Transfer.refusedResponse(libcurlMessage: message, url: url) { return refused }
        // A broken chunked body reads as a failed receive; it does not pass on its own.
        if message.localizedCaseInsensitiveContains("chunked") {
            return network(.cannotParseResponse, "the server's chunked encoding is broken: \(message)")
        }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            // An idle timer (no connection, or nothing received, for idleTimeout); the
            // whole-load deadline (ImagoError.timedOut) belongs to the image loader.
            return network(.timedOut, "the server stopped responding")
        case CURLE_COULDNT_CONNECT where errno == EMFILE || errno == ENFILE:
            return outOfDescriptors(url: url, errno: errno)
        case CURLE_COULDNT_CONNECT:
            let reason = switch errno {
            case ECONNREFUSED: "the server refused the connection"
            case EHOSTUNREACH, ENETUNREACH: "the server is unreachable"
            default: "could not connect to the server (\(message.isEmpty ? "no reason given" : message))"
            }
            return network(.cannotConnectToHost, reason)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return network(.cannotFindHost, "the server's host name could not be resolved")
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR:
            if let shortBody { return network(.networkConnectionLost, "the connection was lost after \(shortBody)") }
            return network(.networkConnectionLost, "the connection was lost before the response was complete")
        case CURLE_PARTIAL_FILE:
            // A clean close before the declared end: no socket error to report.
            if let shortBody { return network(.networkConnectionLost, "the connection closed after \(shortBody)") }
            return network(.networkConnectionLost, "the connection closed before the response was complete")
        case CURLE_GOT_NOTHING:
            if errno == ECONNRESET { return network(.badServerResponse, "the server reset the connection before its response was complete") }
            return network(.badServerResponse, "the server closed the connection without a response")
        case CURLE_WEIRD_SERVER_REPLY:
            return network(.badServerResponse, "the server sent a malformed response")
        case CURLE_UNSUPPORTED_PROTOCOL:
            // The URL was checked before the transfer, so this is libcurl refusing
            // the reply: a server that does not speak HTTP (or speaks HTTP/0.9).
            return network(.unsupportedURL, "the server's reply is not HTTP")
        case CURLE_URL_MALFORMAT:
            return .invalidURL(address)
        case CURLE_BAD_CONTENT_ENCODING:
            return network(.cannotDecodeContentData, "the server's compressed body could not be decompressed")
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            let urlCode = URLSessionDataLoader.tlsCode(libcurlMessage: message)
                ?? (code == CURLE_PEER_FAILED_VERIFICATION ? .serverCertificateUntrusted : .secureConnectionFailed)
            return network(urlCode, "the secure connection failed: \(message.isEmpty ? "TLS error" : message)")
        case CURLE_HTTP2, CURLE_HTTP2_STREAM:
            return network(.networkConnectionLost, "the HTTP/2 stream failed: \(message.isEmpty ? "no reason given" : message)")
        default:
            let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
            return network(.unknown, "the transfer failed: \(text) (libcurl error \(code.rawValue))")
        }
    }
}
#endif
