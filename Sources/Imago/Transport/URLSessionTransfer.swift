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

/// The state of one load through URLSession: the response, the body, the redirects
/// seen, and the outcome.
final class Transfer: Sendable {
    let url: URL
    let method: String
    let policy: RedirectPolicy
    let progress: @Sendable (DataLoadingProgress) -> Void
    let outcome = TransferOutcome()

    private struct State {
        var body: TransferBody
        var response: HTTPURLResponse?
        var seen: [URL]
        var redirects: [DataResponse.Redirect] = []
    }

    /// URLSession calls the delegate serially, but a cancellation finishes the
    /// transfer from any thread, and drops the bytes then.
    private let state: Locked<State>

    init(
        url: URL, method: String, limit: Int, policy: RedirectPolicy, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) {
        self.url = url
        self.method = method
        self.policy = policy
        self.progress = progress
        state = Locked(State(body: TransferBody(limit: limit, options: options), seen: [url]))
    }

    /// Ends the transfer with `outcome` unless it already ended; true if this call did.
    @discardableResult
    func finish(_ outcome: TransferOutcome.Outcome) -> Bool {
        guard self.outcome.finish(outcome) else { return false }
        state.withLock { $0.body.release() }  // the caller has the bytes (or needs none)
        return true
    }

    /// Records the response; false when it cannot be read or its declared length is
    /// too large, and the task must be stopped.
    func receive(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else { return true }
        if let length = http.value(forHTTPHeaderField: "Content-Length"),
           let invalid = TransferFailure.contentLengthFailure(length) {
            // libcurl reads past a length it cannot represent, and the cut-off body
            // would surface later as an image that does not decode.
            finish(.failure(invalid.error(url: http.url ?? url)))
            return false
        }
        if outcome.isFinished { return true }  // whoever ended it stopped the task
        let report = state.withLock { state -> DataLoadingProgress? in
            state.response = http
            return state.body.start(
                status: http.statusCode, method: method, declaredLength: http.expectedContentLength,
                isEncoded: Self.isEncoded(http))
        }
        guard let report else {
            finish(.failure(state.withLock { $0.body.tooLarge(http.url ?? url) }))
            return false
        }
        progress(report)
        return true
    }

    /// Appends a piece of the body; false when the body just grew past the limit and
    /// the task must be stopped.
    func append(_ data: Data) -> Bool {
        if outcome.isFinished { return true }
        guard let report = state.withLock({ $0.body.append(data) }) else {
            finish(.failure(state.withLock { $0.body.tooLarge(url) }))
            return false
        }
        // URLSession calls its delegate serially, so chunks reach the caller in order.
        progress(report)
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
        if outcome.isFinished { return nil }
        let decision = state.withLock { state -> Result<(url: URL, headers: [String: String]), ImagoError> in
            var decided = (url: target, headers: [String: String]())
            do throws(ImagoError) {
                for candidate in targets where candidate != target { try policy.check(from: source, to: candidate, seen: state.seen) }
                decided = try policy.decide(
                    from: source, statusCode: response.statusCode, headers: Self.headers(of: response), to: target, seen: state.seen)
            } catch {
                return .failure(error)
            }
            state.seen.append(decided.url)
            state.redirects.append(DataResponse.Redirect(url: source, statusCode: response.statusCode, headers: Self.headers(of: response)))
            return .success(decided)
        }
        let decided: (url: URL, headers: [String: String])
        switch decision {
        case .success(let hop): decided = hop
        case .failure(let refusal):
            finish(.failure(refusal))
            return nil
        }
        var request = proposed
        request.url = decided.url
        if !RedirectPolicy.sameOrigin(url, decided.url) {
            // Credentials the caller attached for one server must not reach another.
            for name in ["Authorization", "Proxy-Authorization", "Cookie"] {
                request.setValue(nil, forHTTPHeaderField: name)
            }
        }
        // The handler's own headers go as it asked, credentials for the new origin included.
        for (name, value) in decided.headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// Ends the transfer from URLSession's final word on it.
    func complete(task: URLSessionTask, error: Error?) {
        if outcome.isFinished { return }
        let outcome = state.withLock { state -> TransferOutcome.Outcome in
            let response = state.response ?? (task.response as? HTTPURLResponse)
            let finalURL = response?.url ?? task.currentRequest?.url ?? url
            if let error {
                let code = (error as NSError).code
                // A body cut short: libcurl's message arrives as an unknown error for
                // a clean early close.
                let lost = code == URLError.networkConnectionLost.rawValue
                let endedEarly = lost || code == URLError.unknown.rawValue
                var failure = URLSessionDataLoader.map(error, url: task.currentRequest?.url ?? url)
                // Said in bytes, with the code Apple's URLSession gives it: clearer
                // than libcurl's message.
                if endedEarly, state.body.isShort, case .network(_, _, _, let errno) = failure {
                    failure = state.body.endedEarly(lost: lost).error(url: task.currentRequest?.url ?? url, errno: errno)
                }
                if endedEarly, let response, state.body.endsTruncated(status: response.statusCode) {
                    return .success(state.body.response(
                        url: finalURL, status: response.statusCode, headers: Self.headers(of: response),
                        redirects: state.redirects, endedEarly: failure))
                }
                return .failure(failure)
            }
            guard let response else { return .failure(TransferFailure.noResponse.error(url: url)) }
            // URLSession on Linux has been seen to end a connection closed early as a
            // success; a body shorter than its Content-Length is never one, unless the
            // load accepts a truncated body.
            if state.body.isShort {
                guard state.body.endsTruncated(status: response.statusCode) else {
                    return .failure(state.body.endedEarly(lost: false).error(url: finalURL))
                }
                return .success(state.body.response(
                    url: finalURL, status: response.statusCode, headers: Self.headers(of: response),
                    redirects: state.redirects, endedEarly: state.body.endedEarly(lost: false).error(url: finalURL)))
            }
            return .success(state.body.response(
                url: finalURL, status: response.statusCode, headers: Self.headers(of: response), redirects: state.redirects))
        }
        finish(outcome)
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
