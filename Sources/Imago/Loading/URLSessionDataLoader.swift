import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches `http` and `https` URLs with a `URLSession` of its own.
///
/// The session is configured for an image pipeline rather than for general use:
/// nothing is cached by URLSession (Imago keeps its own memory and disk caches, and
/// `URLCache` stores nothing on Linux anyway), redirects pass a policy that refuses
/// downgrades and foreign schemes, and a response is cut off as soon as it is known
/// to exceed `maximumResponseSize`.
///
/// On Linux, URLSession has sharp edges that this type works around: cancelling a
/// Swift task awaiting `data(for:)` can deadlock, data tasks report no progress, a 401
/// without stored credentials never completes, and timeouts are whole-second idle
/// timers. Each workaround is at the place it applies.
public final class URLSessionDataLoader: DataLoading {
    /// Settings fixed for the loader's lifetime (they shape its URLSession).
    public struct Configuration: Sendable {
        /// 64 MiB: room for the largest originals an app meets (a 100-megapixel JPEG
        /// is 30–50 MB) while capping what one hostile or misconfigured server can make
        /// a single load hold in memory. Decoding has its own pixel limit; this one
        /// bounds the bytes before decoding starts.
        public static let defaultMaximumResponseSize = 64 << 20

        /// The largest body accepted, in bytes. A response whose Content-Length says
        /// more is stopped when its headers arrive; one without a length is stopped
        /// when it grows past the limit. Either way the load throws
        /// `ImagoError.responseTooLarge`.
        public var maximumResponseSize: Int
        /// How many redirects one load may follow before it fails with
        /// `ImagoError.redirectRefused`.
        public var maximumRedirects: Int
        /// Whether a redirect from `https` to `http` is followed. Off by default: it
        /// would hand a request the caller made over TLS to anyone on the path.
        public var allowsHTTPSDowngrade: Bool
        /// Headers sent with every request of this loader (and every redirect of it,
        /// whatever its host). Put credentials on the request instead: per-request
        /// `Authorization` and `Cookie` headers are dropped when a redirect leaves
        /// the original origin.
        public var httpAdditionalHeaders: [String: String]
        /// Connections open at once to one host. Six, as browsers do: enough to keep a
        /// grid of thumbnails flowing without being a burden on the server.
        public var httpMaximumConnectionsPerHost: Int
        /// Seconds a transfer may receive nothing before it fails with
        /// `ImagoError.network`, code `.timedOut`. This is an idle timer, not a bound on the whole load
        /// (the image loader enforces that by cancelling); it only stops a connection
        /// that has gone silent from lingering when nobody set a deadline. Rounded up
        /// to whole seconds, at least 1, because URLSession on Linux truncates
        /// fractions (0.5 s would fire at once).
        public var idleTimeout: Double

        /// Makes a configuration; every argument has a documented default.
        public init(
            maximumResponseSize: Int = Configuration.defaultMaximumResponseSize,
            maximumRedirects: Int = 10,
            allowsHTTPSDowngrade: Bool = false,
            httpAdditionalHeaders: [String: String] = [:],
            httpMaximumConnectionsPerHost: Int = 6,
            idleTimeout: Double = 60
        ) {
            self.maximumResponseSize = maximumResponseSize
            self.maximumRedirects = maximumRedirects
            self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
            self.httpAdditionalHeaders = httpAdditionalHeaders
            self.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
            self.idleTimeout = idleTimeout
        }

        var redirectPolicy: RedirectPolicy {
            RedirectPolicy(maximumRedirects: maximumRedirects, allowsHTTPSDowngrade: allowsHTTPSDowngrade)
        }
    }

    /// The settings this loader was made with.
    public let configuration: Configuration

    private let session: URLSession
    private let delegate: SessionDelegate

    /// Makes a loader with its own URLSession.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No stored credentials: a 401 is an answer for the caller, not a prompt.
        sessionConfiguration.urlCredentialStorage = nil
        sessionConfiguration.timeoutIntervalForRequest = max(1, configuration.idleTimeout.rounded(.up))
        sessionConfiguration.httpMaximumConnectionsPerHost = max(1, configuration.httpMaximumConnectionsPerHost)
        if !configuration.httpAdditionalHeaders.isEmpty {
            sessionConfiguration.httpAdditionalHeaders = configuration.httpAdditionalHeaders
        }
        delegate = SessionDelegate(configuration: configuration)
        let queue = OperationQueue()
        queue.name = "Imago.URLSessionDataLoader.delegate"
        // Serial: one transfer's callbacks arrive in order; they only append bytes.
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        // The session holds its delegate until invalidated; without this every
        // loader would leak both. Transfers already cancelled finish on their own.
        session.finishTasksAndInvalidate()
    }

    /// URLSession tasks not yet reported complete, cancelled ones included: tests use
    /// it to prove that abandoned tasks do not pile up.
    var unfinishedTaskCount: Int { delegate.unfinishedTaskCount }

    /// Whether this loader takes `url`: `http` or `https` with a host.
    public static func canLoad(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else { return false }
        return url.host.map { !$0.isEmpty } ?? false
    }

    /// Loads `request`; a non-2xx status is returned, not thrown.
    public func loadData(
        for request: URLRequest,
        progress: @escaping @Sendable (_ received: Int64, _ expected: Int64?) -> Void
    ) async throws(ImagoError) -> DataResponse {
        guard let url = request.url, Self.canLoad(url) else {
            throw .invalidURL(request.url?.absoluteString ?? "")
        }
        // Cheap exit for the common "cancelled while queued" case: no task at all.
        if Task.isCancelled { throw .cancelled }

        let transfer = Transfer(
            url: url, method: request.httpMethod ?? "GET",
            limit: configuration.maximumResponseSize,
            policy: configuration.redirectPolicy, progress: progress)
        let task = session.dataTask(with: request)
        let handle = TaskHandle(task)
        delegate.register(transfer, for: task.taskIdentifier)

        // The awaiting task is resumed by whichever comes first: the transfer's end or
        // the caller's cancellation. Waiting for URLSession to acknowledge a cancel is
        // not needed (and on Linux it takes a trip through its serial work queue).
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.install(continuation)
                task.resume()
            }
        } onCancel: {
            if transfer.finish(.failure(.cancelled)) { delegate.stop(handle) }
        }
        return try result.get()
    }
}

/// Which redirects a load follows: never a loop, never more than a limit, never
/// to a scheme other than http(s), and never from https down to http unless allowed.
///
/// A pure value, so the decision can be tested without a TLS server.
public struct RedirectPolicy: Sendable, Hashable {
    /// How many redirects one load may follow.
    public var maximumRedirects: Int
    /// Whether `https` may redirect to `http`.
    public var allowsHTTPSDowngrade: Bool

    /// Makes a policy; the defaults are the safe ones.
    public init(maximumRedirects: Int = 10, allowsHTTPSDowngrade: Bool = false) {
        self.maximumRedirects = maximumRedirects
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
    }

    /// Checks a redirect from `source` to `target`, where `seen` holds every URL of
    /// this load so far, the original first. Throws `ImagoError.redirectRefused`
    /// naming the target and the reason.
    public func check(from source: URL, to target: URL, seen: [URL]) throws(ImagoError) {
        let refuse = { (reason: String) -> ImagoError in .redirectRefused(url: target.absoluteString, reason: reason) }
        let targetScheme = target.scheme?.lowercased() ?? ""
        guard targetScheme == "http" || targetScheme == "https" else {
            throw refuse("the target's scheme '\(targetScheme)' is not http or https")
        }
        guard target.host.map({ !$0.isEmpty }) ?? false else {
            throw refuse("the target has no host")
        }
        if source.scheme?.lowercased() == "https", targetScheme == "http", !allowsHTTPSDowngrade {
            throw refuse("it would downgrade https to http")
        }
        if seen.contains(where: { $0.absoluteString == target.absoluteString }) {
            throw refuse("redirect loop (the target was already visited)")
        }
        if seen.count > maximumRedirects {
            throw refuse("more than \(maximumRedirects) redirects")
        }
    }

    /// Whether two URLs share an origin (scheme, host, port): credentials may follow a
    /// redirect only within one.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : 80))
        }
        return origin(a) == origin(b)
    }
}

// MARK: - Transfers

/// A URLSession task, made sendable so the cancellation handler can reach it.
private struct TaskHandle: @unchecked Sendable {
    // URLSessionTask is thread-safe (its state sits behind its own queues) but is not
    // marked Sendable on every platform.
    let task: URLSessionTask
    init(_ task: URLSessionTask) { self.task = task }
}

/// The state of one load: the bytes so far, the response, the redirects seen, and
/// the continuation that is resumed exactly once, by whoever finishes first.
private final class Transfer: Sendable {
    typealias Outcome = Result<DataResponse, ImagoError>

    let url: URL
    let method: String
    let limit: Int
    let policy: RedirectPolicy
    let progress: @Sendable (Int64, Int64?) -> Void

    private struct State {
        var data = Data()
        var response: HTTPURLResponse?
        var expected: Int64?
        var seen: [URL]
        var continuation: CheckedContinuation<Outcome, Never>?
        /// Set once. The continuation is resumed with it by `finish` if already
        /// installed, else by `install`: exactly once either way, under this lock.
        var outcome: Outcome?
    }

    private let state: Locked<State>

    init(url: URL, method: String, limit: Int, policy: RedirectPolicy, progress: @escaping @Sendable (Int64, Int64?) -> Void) {
        self.url = url
        self.method = method
        self.limit = limit
        self.policy = policy
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
        let declared = http.expectedContentLength
        let tooLarge = declared > Int64(limit)
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
        progress(0, expected)
        return true
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
        progress(received, expected)
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
            // success; a body shorter than its Content-Length is never one.
            if let expected = state.expected, Int64(state.data.count) < expected,
               method != "HEAD", response.statusCode != 204, response.statusCode != 304 {
                return .failure(.network(
                    url: finalURL.absoluteString,
                    reason: "the connection closed after \(state.data.count) of \(expected) bytes",
                    code: .networkConnectionLost, errno: nil))
            }
            return .success(DataResponse(
                data: state.data, url: finalURL, statusCode: response.statusCode,
                headers: Self.headers(of: response)))
        }
        if let outcome { finish(outcome) }
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

// MARK: - Delegate

/// The session's delegate: routes URLSession's callbacks to the transfer they belong
/// to. A class of its own because URLSession keeps its delegate alive until the
/// session is invalidated; the loader's `deinit` does that.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Locked<[Int: Transfer]>([:])
    /// Where tasks are cancelled: never inline from a cancellation handler or a
    /// callback (on Linux, `cancel()` waits on URLSession's work queue and can
    /// deadlock there), and serially, so 10,000 cancels cost one thread, not 10,000.
    private let cancelQueue = DispatchQueue(label: "Imago.URLSessionDataLoader.cancel")
    private let configuration: URLSessionDataLoader.Configuration

    init(configuration: URLSessionDataLoader.Configuration) {
        self.configuration = configuration
    }

    func register(_ transfer: Transfer, for identifier: Int) {
        transfers.withLock { $0[identifier] = transfer }
    }

    var unfinishedTaskCount: Int { transfers.withLock { $0.count } }

    func stop(_ handle: TaskHandle) {
        cancelQueue.async { handle.task.cancel() }
    }

    private func transfer(for task: URLSessionTask) -> Transfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        // Always `.allow`: on Linux the disposition is ignored, so stopping is done by
        // cancelling, the same on every platform.
        if let transfer = transfer(for: dataTask), !transfer.receive(response) {
            stop(TaskHandle(dataTask))
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let transfer = transfer(for: dataTask), !transfer.append(data) {
            stop(TaskHandle(dataTask))
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let transfer = transfer(for: task) else {
            completionHandler(nil)
            return
        }
        // nil ends the task with the 3xx response, which the transfer (already
        // finished with `.redirectRefused`) ignores.
        completionHandler(transfer.redirect(response: response, proposed: request))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(FoundationNetworking)
        // swift-corelibs-foundation #5456: with no credential to offer, default
        // handling leaves the task suspended forever. Imago never answers HTTP
        // challenges, so the 401 is delivered as the response and the task dropped.
        // (Server-trust challenges do not exist there: TLS is libcurl's business.)
        let transfer = transfer(for: task)
        if let response = challenge.failureResponse as? HTTPURLResponse {
            transfer?.complete(challengeResponse: response)
        } else {
            transfer?.finish(.failure(.network(
                url: (task.currentRequest?.url ?? transfer?.url)?.absoluteString ?? "",
                reason: "the server asked for credentials", code: .userAuthenticationRequired, errno: nil)))
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
        #else
        completionHandler(.performDefaultHandling, nil)
        #endif
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.complete(task: task, error: error)
    }
}
