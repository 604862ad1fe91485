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
    /// The settings this loader was made with.
    package let configuration: HTTPLoaderConfiguration

    private let session: URLSession
    private let delegate: SessionDelegate
    #if canImport(CCurl)
    /// The loader of IPv6 literal URLs on Linux, made when the first one comes:
    /// URLSession there refuses them all with `.badURL` (it checks that libcurl parsed
    /// the host it did, and compares "[::1]" with "::1"), so they go through the curl
    /// loader with the same settings. URLSession on Linux is libcurl underneath, so
    /// nothing else differs.
    private let literalIPv6Loader = Locked<CurlDataLoader?>(nil)
    #endif

    /// Makes a loader with its own URLSession.
    public init(configuration: HTTPLoaderConfiguration = HTTPLoaderConfiguration()) {
        self.configuration = configuration
        let sessionConfiguration = Self.ephemeralConfiguration()
        sessionConfiguration.urlCache = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // No stored credentials: a 401 is an answer for the caller, not a prompt.
        sessionConfiguration.urlCredentialStorage = nil
        sessionConfiguration.timeoutIntervalForRequest = Double(configuration.idleSeconds)
        sessionConfiguration.httpMaximumConnectionsPerHost = max(1, configuration.httpMaximumConnectionsPerHost)
        // A request's own header replaces the session's of the same name, so the
        // default User-Agent goes here, under the request's.
        sessionConfiguration.httpAdditionalHeaders = HTTPHeaderFields.withDefaultUserAgent(configuration.httpAdditionalHeaders)
        delegate = SessionDelegate(configuration: configuration)
        let queue = OperationQueue()
        queue.name = "Imago.URLSessionDataLoader.delegate"
        // Serial: one transfer's callbacks arrive in order; they only append bytes.
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: queue)
    }

    /// `URLSessionConfiguration.ephemeral`, without the folders it leaves behind.
    ///
    /// On Linux, the ephemeral configuration makes a URLCache of its own whose
    /// initializer creates `org.swift.foundation.URLCache/PROCESS/` in the user's
    /// cache directory even though it has no disk capacity; Imago sets `urlCache` to
    /// nil at once, so the folder stays empty forever. Folders made by this call are
    /// removed again (`rmdir` removes only empty ones); those that were there before
    /// are left alone.
    private static func ephemeralConfiguration() -> URLSessionConfiguration {
        #if canImport(FoundationNetworking)
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
        let parent = caches?.appendingPathComponent("org.swift.foundation.URLCache", isDirectory: true)
        // Named as URLCache names it.
        let name = (Bundle.main.bundleIdentifier ?? ProcessInfo.processInfo.processName)
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "\\", with: "_")
            .replacingOccurrences(of: ":", with: "_")
        let folders = [parent?.appendingPathComponent(name, isDirectory: true), parent].compactMap { $0 }
            .filter { !FileManager.default.fileExists(atPath: $0.path) }
        let configuration = URLSessionConfiguration.ephemeral
        for folder in folders { rmdir(folder.path) }
        return configuration
        #else
        return URLSessionConfiguration.ephemeral
        #endif
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
    public func canLoad(_ url: URL) -> Bool {
        HTTPLoaderConfiguration.takes(url)
    }


    /// Loads `request` as `options` ask; a non-2xx status is returned, not thrown.
    public func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        // libcurl beneath URLSession on Linux would put a CR or LF in a header on the
        // wire as it is: the fields are checked here.
        let (url, _, credentials) = try HTTPLoaderConfiguration.checked(request, over: configuration.httpAdditionalHeaders)
        #if canImport(CCurl)
        if url.host?.contains(":") == true {
            let loader = literalIPv6Loader.withLock { loader in
                if let loader { return loader }
                let made = CurlDataLoader(configuration: configuration)
                loader = made
                return made
            }
            return try await loader.loadData(for: request, options: options, progress: progress)
        }
        #endif
        var request = request
        request.url = url

        let transfer = Transfer(
            url: url, method: request.httpMethod ?? "GET",
            limit: configuration.maximumResponseSize,
            policy: configuration.redirectPolicy, options: options, progress: progress)
        let task = session.dataTask(with: request)
        let handle = TaskHandle(task)
        delegate.register(transfer, for: task.taskIdentifier)

        var response = try await transfer.outcome.run { task.resume() } stop: { [delegate] in delegate.stop(handle) }
        response.requestCarriedCredentials = credentials
        return response
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
    private let configuration: HTTPLoaderConfiguration

    init(configuration: HTTPLoaderConfiguration) {
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
