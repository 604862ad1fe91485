#if canImport(CCurl)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One load through the curl loader: the request of the current hop, the response
/// as its header lines arrive, the body, and the outcome.
///
/// Two kinds of state live here. The outcome is shared (the caller's cancellation
/// and the driver thread race to set it) and keeps its own lock. Everything else is
/// touched only by the driver thread, from libcurl's callbacks and between
/// transfers, so it needs no lock: that is what makes `@unchecked Sendable` sound.
final class CurlTransfer: @unchecked Sendable {
    /// The URL the caller asked for; credentials stay within its origin.
    let originalURL: URL
    let policy: RedirectPolicy
    let progress: @Sendable (DataLoadingProgress) -> Void
    let outcome = TransferOutcome()

    // MARK: Driver-thread state

    /// The request of the current hop.
    private(set) var url: URL
    private(set) var method: String
    private(set) var body: Data?
    /// Header fields sent, in order; credentials are removed once a redirect leaves
    /// the original origin, and stay removed.
    private(set) var headers: [(name: String, value: String)]
    /// Every URL of this load so far, the original first.
    private var seen: [URL]

    private var status = 0
    /// Bytes of the current response's head so far.
    private var headerBytes = 0
    /// Set when the current response's head has ended: lines after it are trailers
    /// of a chunked body, which neither start a new head nor join this one.
    private var headComplete = false
    private var responseHeaders: [(name: String, value: String)] = []
    private var contentLengths: [String] = []
    /// The final response's body.
    private var received: TransferBody
    /// Set when the current response is a redirect the policy allowed: its body is
    /// read and dropped, and the next hop starts when it ends.
    private var redirectTarget: URL?
    /// Headers the redirect handler asked for on the next hop.
    private var redirectHeaders: [String: String] = [:]
    /// The redirects followed so far.
    private var redirects: [DataResponse.Redirect] = []
    private var discarded = 0

    /// The easy handle carrying this transfer while the driver runs it.
    var easy: CurlEasy?
    /// The loader's sockets, through which this transfer's connections are opened.
    var sockets: CurlSockets?
    /// Set when a socket of this hop was refused because the process has too few
    /// descriptors left: its connection failure is not the server's.
    var descriptorsRefused = false

    init(
        request: URLRequest, url: URL, headers: [(name: String, value: String)], limit: Int,
        policy: RedirectPolicy, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) {
        originalURL = url
        self.url = url
        method = request.httpMethod?.uppercased() ?? "GET"
        body = request.httpBody
        self.headers = headers
        received = TransferBody(limit: limit, options: options)
        self.policy = policy
        self.progress = progress
        seen = [url]
    }

    // MARK: Ending

    /// Ends the transfer with `outcome` unless it already ended; true if this call did.
    @discardableResult
    func finish(_ outcome: TransferOutcome.Outcome) -> Bool { self.outcome.finish(outcome) }

    var isFinished: Bool { outcome.isFinished }

    // MARK: libcurl's callbacks (driver thread)

    /// One header line of a response, the status line and the blank line that ends
    /// the head included; false stops the transfer (it has been finished already).
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
        // Parsed as bytes: "\r\n" is one Character to Swift, so trimming characters
        // one by one would miss it, and Foundation's trimming went through NSString
        // for every field of every response.
        var end = bytes.count
        while end > 0, bytes[end - 1] == 0x0A || bytes[end - 1] == 0x0D { end -= 1 }
        let line = bytes[..<end]
        if line.starts(with: "HTTP/".utf8) {
            // A new response: an interim 1xx before the final one, or the next hop.
            status = Self.statusCode(of: line)
            responseHeaders = []
            contentLengths = []
            headComplete = false
            headerBytes = bytes.count
            return true
        }
        if headComplete { return true }
        headerBytes += bytes.count
        if headerBytes > TransferFailure.maximumHeaderBytes {
            finish(.failure(TransferFailure.headersTooLarge("over \(TransferFailure.maximumHeaderBytes >> 10) KiB").error(url: url)))
            return false
        }
        if line.isEmpty { return headersEnded() }
        if line.first == 0x20 || line.first == 0x09, !responseHeaders.isEmpty {
            // An obsolete folded continuation of the previous field.
            responseHeaders[responseHeaders.count - 1].value += " " + Self.trimmedText(line)
            return true
        }
        guard let colon = line.firstIndex(of: 0x3A) else { return true }
        let name = Self.lowercasedText(Self.trimmed(line[..<colon]))
        let value = Self.trimmedText(line[(colon + 1)...])
        responseHeaders.append((name, value))
        if name == "content-length" { contentLengths.append(value) }
        return true
    }

    // A response's head is parsed as bytes, each field made a string once: making
    // strings of whole lines, then trimming and lower-casing those, took some 15,000
    // instructions for a 304's handful of fields.

    /// The status code of a status line ("HTTP/1.1 304 Not Modified"): the second
    /// word, 0 when it is not a number.
    static func statusCode(of line: Slice<UnsafeRawBufferPointer>) -> Int {
        var i = line.startIndex
        while i < line.endIndex, line[i] != 0x20 { i += 1 }
        while i < line.endIndex, line[i] == 0x20 { i += 1 }
        let start = i
        while i < line.endIndex, line[i] != 0x20 { i += 1 }
        let word = line[start..<i]
        guard !word.isEmpty, word.count <= 9, word.allSatisfy({ $0 &- 0x30 < 10 }) else {
            // Signs and the like, as Swift's own reading of the word takes them.
            return Int(String(decoding: word, as: UTF8.self)) ?? 0
        }
        return word.reduce(0) { $0 * 10 + Int($1 &- 0x30) }
    }

    /// The bytes without HTTP's optional whitespace (spaces and tabs) at either end.
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while start < end, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return bytes[start..<end]
    }

    /// The bytes as text without HTTP's optional whitespace around them.
    private static func trimmedText(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        String(decoding: trimmed(bytes), as: UTF8.self)
    }

    /// A field name in lower case: ASCII ones (every real one) byte by byte, others
    /// as Swift lower-cases text.
    static func lowercasedText(_ bytes: Slice<UnsafeRawBufferPointer>) -> String {
        guard bytes.allSatisfy({ $0 < 0x80 }) else { return String(decoding: bytes, as: UTF8.self).lowercased() }
        return String(unsafeUninitializedCapacity: bytes.count) { out in
            for (k, byte) in bytes.enumerated() { out[k] = byte &- 0x41 < 26 ? byte | 0x20 : byte }
            return bytes.count
        }
    }

    private func headersEnded() -> Bool {
        guard status >= 200 else { return true }  // 100 Continue, 103 Early Hints: the real one follows
        headComplete = true
        if !contentLengths.isEmpty, let invalid = TransferFailure.contentLengthFailure(contentLengths.joined(separator: ", ")) {
            finish(.failure(invalid.error(url: url)))
            return false
        }
        if [301, 302, 303, 307, 308].contains(status), let location = header("location") {
            // Decided here, before the body, so a refused target is never requested
            // and an allowed one starts as soon as this response ends.
            guard let target = URL(string: location, relativeTo: url)?.absoluteURL else {
                finish(.failure(.redirectRefused(url: location, reason: "the redirect has no valid target")))
                return false
            }
            do throws(ImagoError) {
                (redirectTarget, redirectHeaders) = try policy.decide(from: url, statusCode: status, headers: fields, to: target, seen: seen)
            } catch {
                finish(.failure(error))
                return false
            }
            discarded = 0
            return true
        }
        redirectTarget = nil
        let encoding = header("content-encoding")?.lowercased() ?? ""
        guard let report = received.start(
            status: status, method: method, declaredLength: contentLengths.first.flatMap { Int64($0) },
            isEncoded: !encoding.isEmpty && encoding != "identity")
        else {
            finish(.failure(received.tooLarge(url)))
            return false
        }
        progress(report)
        return true
    }

    /// A piece of the body; false stops the transfer (it has been finished already,
    /// or the caller gave up on it).
    func receiveBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if redirectTarget != nil {
            discarded += bytes.count
            if discarded > received.limit {
                finish(.failure(received.tooLarge(url)))
                return false
            }
            return true
        }
        if isFinished { return false }
        guard let report = received.append(bytes) else {
            finish(.failure(received.tooLarge(url)))
            return false
        }
        progress(report)
        return true
    }

    // MARK: Completion (driver thread)

    /// What the driver does with a transfer libcurl reports done.
    enum Next {
        /// Nothing more: the caller has its outcome.
        case done
        /// Run the next hop of a redirect on the same easy handle.
        case redirect
    }

    /// Ends the current hop with libcurl's result.
    func complete(_ code: CURLcode, message: String, errno: Int32?, responseCode: Int) -> Next {
        if isFinished { return .done }
        if code != CURLE_OK, let truncated = truncatedResponse(code, message: message, errno: errno, responseCode: responseCode) {
            finish(.success(truncated))
            return .done
        }
        guard code == CURLE_OK else {
            finish(.failure(CurlDataLoader.map(
                code, message: message, errno: errno, url: url,
                received: redirectTarget == nil ? Int64(received.data.count) : nil, expected: received.expected)))
            return .done
        }
        if let target = redirectTarget {
            follow(to: target)
            return .redirect
        }
        let status = responseCode != 0 ? responseCode : self.status
        guard status != 0 else {
            finish(.failure(TransferFailure.noResponse.error(url: url)))
            return .done
        }
        finish(.success(received.response(url: url, status: status, headers: fields, redirects: redirects)))
        return .done
    }

    /// What arrived of a 2xx body that the connection ended short (closed, lost, or a
    /// chunked body cut), when the load accepts that; nil otherwise. A body that is
    /// broken rather than short (bad chunked encoding, bad compression) never is.
    private func truncatedResponse(_ code: CURLcode, message: String, errno: Int32?, responseCode: Int) -> DataResponse? {
        let status = responseCode != 0 ? responseCode : self.status
        let short = [CURLE_PARTIAL_FILE, CURLE_RECV_ERROR, CURLE_HTTP2_STREAM].contains(code)
            && !message.localizedCaseInsensitiveContains("chunked")
        guard short, redirectTarget == nil, received.endsTruncated(status: status) else { return nil }
        let failure = CurlDataLoader.map(
            code, message: message, errno: errno, url: url, received: Int64(received.data.count), expected: received.expected)
        return received.response(url: url, status: status, headers: fields, redirects: redirects, endedEarly: failure)
    }

    /// The response headers received so far, one value a name (repeated fields
    /// joined with ", ").
    private var fields: [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in responseHeaders {
            fields[name] = fields[name].map { "\($0), \(value)" } ?? value
        }
        return fields
    }

    /// Moves to the next hop: the method a browser would use, and no credentials for
    /// another origin.
    private func follow(to target: URL) {
        if (status == 303 && method != "HEAD") || ((status == 301 || status == 302) && method == "POST") {
            method = "GET"
            body = nil
            headers.removeAll { ["content-type", "content-length"].contains($0.name.lowercased()) }
        }
        if !RedirectPolicy.sameOrigin(originalURL, target) {
            // Credentials the caller attached for one server must not reach another.
            headers.removeAll { ["authorization", "proxy-authorization", "cookie"].contains($0.name.lowercased()) }
        }
        for (name, value) in redirectHeaders {
            headers.removeAll { $0.name.lowercased() == name.lowercased() }
            headers.append((name, value))
        }
        redirectHeaders = [:]
        redirects.append(DataResponse.Redirect(url: url, statusCode: status, headers: fields))
        seen.append(target)
        url = target
        redirectTarget = nil
        status = 0
        responseHeaders = []
        contentLengths = []
        headComplete = false
    }

    private func header(_ name: String) -> String? {
        responseHeaders.last { $0.name == name }?.value
    }
}
#endif
