#if canImport(CCurl)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension CurlDataLoader {
    /// A load that found no file descriptor for its connection (`EMFILE` or
    /// `ENFILE`).
    static func outOfDescriptors(url: URL, errno: Int32? = EMFILE) -> ImagoError {
        TransferFailure.outOfDescriptors.error(url: url, errno: errno)
    }

    /// Translates a libcurl failure into the loaders' shared failures
    /// (`TransferFailure`), with the socket errno libcurl recorded
    /// (`CURLINFO_OS_ERRNO`) where the failure was a socket's.
    ///
    /// `received` and `expected` are the body bytes so far and the declared length,
    /// which turn a connection lost or closed early into "after 4000 of 10000 bytes".
    static func map(
        _ code: CURLcode, message: String, errno osErrno: Int32?, url: URL, received: Int64?, expected: Int64?
    ) -> ImagoError {
        let socketCodes: Set<UInt32> = [
            CURLE_COULDNT_CONNECT.rawValue, CURLE_SEND_ERROR.rawValue, CURLE_RECV_ERROR.rawValue,
            CURLE_GOT_NOTHING.rawValue, CURLE_SSL_CONNECT_ERROR.rawValue,
        ]
        // libcurl keeps the last errno it saw; only these failures are about a socket,
        // and "would block" is never the reason one failed.
        let errno = socketCodes.contains(code.rawValue) && osErrno != EAGAIN && osErrno != EINPROGRESS ? osErrno : nil
        let said = message.isEmpty ? "no reason given" : message
        if code == CURLE_OUT_OF_MEMORY, message.isEmpty {
            // libcurl gives up on one header field over its 100 KB limit with "out of
            // memory", which would send a user looking in the wrong place.
            return TransferFailure.headersTooLarge("over libcurl's 100 KB for one field").error(url: url)
        }
        if let refused = TransferFailure.refusedResponse(libcurlMessage: message) { return refused.error(url: url) }
        // A broken chunked body reads as a failed receive.
        if message.localizedCaseInsensitiveContains("chunked") {
            return TransferFailure.brokenChunking(message).error(url: url, errno: errno)
        }
        let failure: TransferFailure
        var urlCode: URLError.Code?
        switch code {
        case CURLE_OPERATION_TIMEDOUT: failure = .stoppedResponding
        case CURLE_COULDNT_CONNECT where errno == EMFILE || errno == ENFILE: return outOfDescriptors(url: url, errno: errno)
        case CURLE_COULDNT_CONNECT: failure = .cannotConnect(detail: said)
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: failure = .hostNotFound
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR: failure = .connectionEnded(lost: true, received: received, expected: expected)
        // A clean close before the declared end: no socket error to report.
        case CURLE_PARTIAL_FILE: failure = .connectionEnded(lost: false, received: received, expected: expected)
        case CURLE_GOT_NOTHING: failure = .closedWithoutResponse
        case CURLE_WEIRD_SERVER_REPLY: failure = .malformedResponse
        case CURLE_UNSUPPORTED_PROTOCOL: failure = .notHTTP
        case CURLE_URL_MALFORMAT: return .invalidURL(url.absoluteString)
        case CURLE_BAD_CONTENT_ENCODING: failure = .badCompression
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
             CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_INVALIDCERTSTATUS,
             CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_SHUTDOWN_FAILED, CURLE_SSL_ENGINE_INITFAILED:
            failure = .secureConnection(message.isEmpty ? "TLS error" : message)
            urlCode = TransferFailure.tlsCode(libcurlMessage: message)
                ?? (code == CURLE_PEER_FAILED_VERIFICATION ? .serverCertificateUntrusted : nil)
        case CURLE_HTTP2, CURLE_HTTP2_STREAM: failure = .http2(said)
        default:
            let text = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
            failure = .other("\(text) (libcurl error \(code.rawValue))")
        }
        return failure.error(url: url, code: urlCode, errno: errno)
    }
}
#endif
