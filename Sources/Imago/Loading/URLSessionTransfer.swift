import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A URLSession task, made sendable so the cancellation handler can reach it.
struct TaskHandle: @unchecked Sendable {
    // URLSessionTask is thread-safe (its state sits behind its own queues) but is not
    // marked Sendable on every platform.
    let task: URLSessionTask
    init(_ task: URLSessionTask) { self.task = task }
}

/// The state of one load: the bytes so far, the response, the redirects seen, and
/// the continuation that is resumed exactly once, by whoever finishes first.
final class Transfer: Sendable {
    typealias Outcome = Result<DataResponse, ImagoError>

    let url: URL
    let method: String
    let limit: Int
    let policy: RedirectPolicy
    let options: DataLoadingOptions
    let progress: @Sendable (DataLoadingProgress) -> Void

    private struct State {
        var data = Data()
        var response: HTTPURLResponse?
        var expected: Int64?
        var seen: [URL]
        var redirects: [DataResponse.Redirect] = []
        var continuation: CheckedContinuation<Outcome, Never>?
        /// Set once. The continuation is resumed with it by `finish` if already
        /// installed, else by `install`: exactly once either way, under this lock.
        var outcome: Outcome?
    }

    private let state: Locked<State>

    init(
        url: URL, method: String, limit: Int, policy: RedirectPolicy, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) {
        self.url = url
        self.method = method
        self.limit = limit
        self.policy = policy
        self.options = options
        self.progress = progress
        state = Locked(State(seen: [url]))
    }

    /// Hands over the continuation; resumes it at once if the transfer already ended.
    func install(_ continuation: CheckedContinuation<Outcome, Never>) {
        let ready = state.withLock { state -> Outcome? in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let ready { continuation.resume(returning: ready) }
    }

    /// Ends the transfer with `outcome` unless it already ended; true if this call did.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Outcome, Never>?) in
            guard state.outcome == nil else { return (false, nil) }
            state.outcome = outcome
            state.data = Data()  // the caller has the bytes (or needs none); drop ours
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        continuation?.resume(returning: outcome)
        return first
    }

    /// Records the response; false when its declared length is too large and the
    /// task must be stopped.
    func receive(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else { return true }
        if let length = http.value(forHTTPHeaderField: "Content-Length"), !Self.isValidContentLength(length) {
            // libcurl reads past a length it cannot represent, and the cut-off body
            // would surface later as an image that does not decode.
            let shown = length.count > 40 ? length.prefix(40) + "…" : Substring(length)
            finish(.failure(.network(
                url: (http.url ?? url).absoluteString, reason: "the server sent an invalid Content-Length (\(shown))",
                code: .cannotParseResponse, errno: nil)))
            return false
        }
        let declared = http.expectedContentLength
        // A 304, a 204 and the answer to a HEAD have no body, whatever length they
        // declare (a 304's is the stored resource's).
        let hasBody = http.statusCode != 304 && http.statusCode != 204 && method != "HEAD"
        let tooLarge = hasBody && declared > Int64(limit)
        let expected: Int64? = declared >= 0 && !Self.isEncoded(http) ? declared : nil
        let proceed = state.withLock { state -> Bool in
            guard state.outcome == nil else { return false }
            state.response = http
            state.expected = expected
            state.data = Data()  // only the final response's body counts
            if let expected, !tooLarge {
                // Avoid repeated regrowth for large bodies, but trust a server's claim
                // only so far.
                state.data.reserveCapacity(Int(min(expected, 8 << 20)))
            }
            return true
        }
        guard proceed else { return true }  // already over; whoever ended it stopped the task
        if tooLarge {
            finish(.failure(.responseTooLarge(url: (http.url ?? url).absoluteString, limit: limit)))
            return false
        }
        progress(DataLoadingProgress(received: 0, expected: expected, chunk: options.reportsChunks ? Data() : nil))
        return true
    }

    /// The most bytes of response headers read (the status line and every field of
    /// one response); a server sending more gets a clear error, not a retry.
    /// Browsers stop at about 256 KiB; libcurl at 300 KB.
    static let maximumHeaderBytes = 256 << 10

    /// The failure of a response whose headers are over the limit: the server's
    /// answer, the same on every attempt, so not retried (`.cannotParseResponse`).
    static func headersTooLarge(url: URL, detail: String) -> ImagoError {
        .network(url: url.absoluteString, reason: "the server sent response headers too large to read (\(detail))",
                 code: .cannotParseResponse, errno: nil)
    }

    /// A response libcurl refused before its body, read from its message, as an error
    /// that is not retried: headers over its limit ("Too large response headers:
    /// 308022 > 307200", or "Out of memory" for one field over 100 KB) or a
    /// Content-Length it cannot read ("Invalid Content-Length: value", a negative
    /// one). Nil for any other message. Both loaders' failures pass through it, so
    /// they say the same.
    static func refusedResponse(libcurlMessage message: String, url: URL) -> ImagoError? {
        let text = message.lowercased()
        if text.contains("too large response headers") || text.contains("header") && text.contains("too large") {
            return headersTooLarge(url: url, detail: message)
        }
        if text == "out of memory" {
            return headersTooLarge(url: url, detail: "over libcurl's 100 KB for one field")
        }
        if text.contains("content-length") {
            return .network(url: url.absoluteString, reason: "the server sent an invalid Content-Length (libcurl: \(message))",
                            code: .cannotParseResponse, errno: nil)
        }
        return nil
    }

    /// Whether a Content-Length value is one length (RFC 9110 §8.6): digits that fit in
    /// 63 bits; a list of several values is valid only when they all agree, as one
    /// repeated field joined with commas.
    static func isValidContentLength(_ value: String) -> Bool {
        let values = value.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingHTTPWhitespace }
        guard let first = values.first, values.allSatisfy({ $0 == first }) else { return false }
        return !first.isEmpty && first.allSatisfy { $0.isASCII && $0.isNumber } && Int64(first) != nil
    }

    /// Appends a piece of the body; false when the body just grew past the limit and
    /// the task must be stopped.
    func append(_ data: Data) -> Bool {
        let report = state.withLock { state -> (Int64, Int64?)? in
            guard state.outcome == nil else { return nil }
            guard state.data.count + data.count <= limit else { return (-1, nil) }
            state.data.append(data)
            return (Int64(state.data.count), state.expected)
        }
        guard let (received, expected) = report else { return true }
        if received < 0 {
            finish(.failure(.responseTooLarge(url: url.absoluteString, limit: limit)))
            return false
        }
        // URLSession calls its delegate serially, so chunks reach the caller in order.
        progress(DataLoadingProgress(received: received, expected: expected, chunk: options.reportsChunks ? data : nil))
        return true
    }

    /// Decides a redirect: the request to follow, or nil after finishing the transfer
    /// with `.redirectRefused`.
    func redirect(response: HTTPURLResponse, proposed: URLRequest) -> URLRequest? {
        let source = response.url ?? url
        // Check where the server pointed, not only where URLSession went: on Linux a
        // `Location: file:///etc/passwd` is turned into a path on the current http
        // host before the delegate sees it.
        var targets: [URL] = []
        if let location = Self.header("Location", in: response),
           let resolved = URL(string: location, relativeTo: source)?.absoluteURL {
            targets.append(resolved)
        }
        if let proposedURL = proposed.url, !targets.contains(proposedURL) { targets.append(proposedURL) }
        guard let target = proposed.url else {
            finish(.failure(.redirectRefused(url: source.absoluteString, reason: "the redirect has no target")))
            return nil
        }
        let refusal = state.withLock { state -> ImagoError? in
            guard state.outcome == nil else { return .cancelled }
            do throws(ImagoError) {
                for candidate in targets { try policy.check(from: source, to: candidate, seen: state.seen) }
            } catch {
                return error
            }
            state.seen.append(target)
            state.redirects.append(DataResponse.Redirect(url: source, statusCode: response.statusCode, headers: Self.headers(of: response)))
            return nil
        }
        if let refusal {
            finish(.failure(refusal))
            return nil
        }
        var request = proposed
        if !RedirectPolicy.sameOrigin(url, target) {
            // Credentials the caller attached for one server must not reach another.
            for name in ["Authorization", "Proxy-Authorization", "Cookie"] {
                request.setValue(nil, forHTTPHeaderField: name)
            }
        }
        return request
    }

    /// Ends the transfer from URLSession's final word on it.
    func complete(task: URLSessionTask, error: Error?) {
        if let error, let truncated = truncatedResponse(task: task, error: error) {
            finish(.success(truncated))
            return
        }
        if let error {
            var mapped = URLSessionDataLoader.map(error, url: task.currentRequest?.url ?? url)
            let code = (error as NSError).code
            let lost = code == URLError.networkConnectionLost.rawValue
            if case .network(let address, _, _, let errno) = mapped, lost || code == URLError.unknown.rawValue {
                // A body cut short, said in bytes: clearer than libcurl's message
                // (which arrives as an unknown error for a clean early close), and
                // given the code Apple's URLSession reports it with.
                let (received, expected) = state.withLock { ($0.data.count, $0.expected) }
                if let expected, Int64(received) < expected {
                    mapped = .network(
                        url: address,
                        reason: "the connection \(lost ? "was lost" : "closed") after \(received) of \(expected) bytes",
                        code: .networkConnectionLost, errno: errno)
                }
            }
            finish(.failure(mapped))
            return
        }
        let outcome = state.withLock { state -> Outcome? in
            guard state.outcome == nil else { return nil }
            guard let response = state.response ?? (task.response as? HTTPURLResponse) else {
                return .failure(.network(
                    url: url.absoluteString, reason: "the server sent no response", code: .badServerResponse, errno: nil))
            }
            let finalURL = response.url ?? task.currentRequest?.url ?? url
            // URLSession on Linux has been seen to end a connection closed early as a
            // success; a body shorter than its Content-Length is never one, unless the
            // load accepts a truncated body.
            if let expected = state.expected, Int64(state.data.count) < expected,
               method != "HEAD", response.statusCode != 204, response.statusCode != 304 {
                if options.acceptsTruncatedBody, (200..<300).contains(response.statusCode), !state.data.isEmpty {
                    return .success(DataResponse(
                        data: state.data, url: finalURL, statusCode: response.statusCode,
                        headers: Self.headers(of: response), redirects: state.redirects, isTruncated: true))
                }
                return .failure(.network(
                    url: finalURL.absoluteString,
                    reason: "the connection closed after \(state.data.count) of \(expected) bytes",
                    code: .networkConnectionLost, errno: nil))
            }
            return .success(DataResponse(
                data: state.data, url: finalURL, statusCode: response.statusCode,
                headers: Self.headers(of: response), redirects: state.redirects))
        }
        if let outcome { finish(outcome) }
    }

    /// What arrived of a 2xx body whose connection was lost or closed early, when the
    /// load accepts that; nil otherwise.
    private func truncatedResponse(task: URLSessionTask, error: Error) -> DataResponse? {
        let code = (error as NSError).code
        guard options.acceptsTruncatedBody,
              code == URLError.networkConnectionLost.rawValue || code == URLError.unknown.rawValue else { return nil }
        return state.withLock { state -> DataResponse? in
            guard state.outcome == nil, let response = state.response ?? (task.response as? HTTPURLResponse),
                  (200..<300).contains(response.statusCode), !state.data.isEmpty,
                  state.expected.map({ Int64(state.data.count) < $0 }) ?? true else { return nil }
            return DataResponse(
                data: state.data, url: response.url ?? task.currentRequest?.url ?? url, statusCode: response.statusCode,
                headers: Self.headers(of: response), redirects: state.redirects, isTruncated: true)
        }
    }

    /// Ends the transfer with an authentication challenge's response: Imago does not
    /// answer challenges, so a 401 is the answer.
    func complete(challengeResponse response: HTTPURLResponse) {
        finish(.success(DataResponse(
            data: Data(), url: response.url ?? url, statusCode: response.statusCode,
            headers: Self.headers(of: response))))
    }

    // MARK: Helpers

    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var headers: [String: String] = [:]
        for (key, value) in response.allHeaderFields {
            guard let name = (key as? String)?.lowercased() else { continue }
            let text = (value as? String) ?? "\(value)"
            headers[name] = headers[name].map { "\($0), \(text)" } ?? text
        }
        return headers
    }

    static func header(_ name: String, in response: HTTPURLResponse) -> String? {
        let wanted = name.lowercased()
        for (key, value) in response.allHeaderFields where (key as? String)?.lowercased() == wanted {
            return value as? String
        }
        return nil
    }

    /// Whether the body is content-encoded: URLSession decompresses it, so the
    /// Content-Length (of the compressed bytes) says nothing about what arrives.
    static func isEncoded(_ response: HTTPURLResponse) -> Bool {
        guard let encoding = header("Content-Encoding", in: response)?.lowercased() else { return false }
        return !encoding.isEmpty && encoding != "identity"
    }
}
