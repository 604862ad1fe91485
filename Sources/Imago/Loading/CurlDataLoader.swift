#if canImport(CCurl)
import CCurl
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches `http` and `https` URLs with libcurl's multi interface, on one thread of
/// its own: the network loader on Linux.
///
/// Why not URLSession there: URLSession on Linux does all its libcurl work on one
/// serial queue shared by every session of the process, with a dispatch source per
/// socket; measured end to end it was the stage loads waited for once decoding got
/// cheap. It also refuses IPv6 literal URLs, lets reuse of idle connections collapse
/// as soon as loads spread over several origins, and fails with "Couldn't connect"
/// (or crashes inside libdispatch) when the process runs out of file descriptors.
///
/// This loader behaves as `URLSessionDataLoader` does (the same size limit, redirect
/// policy, errors and progress) and adds what those problems need: idle connections
/// are kept for every origin up to the connection budget, and the budget is sized
/// from the process's descriptor limit (`RLIMIT_NOFILE`), leaving room for the rest
/// of the process, so that loads beyond it wait for a connection instead of failing.
public final class CurlDataLoader: DataLoading {
    /// Settings fixed for the loader's lifetime; the same as a URLSession loader's,
    /// plus the connection budget.
    public struct Configuration: Sendable {
        /// The largest body accepted, in bytes; see
        /// `URLSessionDataLoader.Configuration.maximumResponseSize`.
        public var maximumResponseSize: Int
        /// How many redirects one load may follow.
        public var maximumRedirects: Int
        /// Whether a redirect from `https` to `http` is followed (off: it would hand a
        /// request made over TLS to anyone on the path).
        public var allowsHTTPSDowngrade: Bool
        /// Headers sent with every request of this loader, whatever the host. Per-request
        /// `Authorization` and `Cookie` headers are dropped when a redirect leaves
        /// the original origin; these are not, so put no credentials here. Without a
        /// `User-Agent` here or on the request, `ImageLoader.defaultUserAgent` is sent.
        public var httpAdditionalHeaders: [String: String]
        /// Connections open at once to one host; transfers beyond it wait for one of
        /// them. Six by default, as browsers and URLSession do.
        public var httpMaximumConnectionsPerHost: Int
        /// Seconds a connection attempt or a transfer may go without progress before
        /// it fails with `ImagoError.network`, code `.timedOut`: an idle timer, not a
        /// bound on the whole load (the image loader keeps that). Whole seconds, at
        /// least 1, as libcurl's low-speed timer counts them.
        public var idleTimeout: Double
        /// Connections open at once, over every host; nil sizes it from the process's
        /// file descriptor limit (see `CurlDataLoader.connectionBudget`).
        public var maximumConnections: Int?

        /// Makes a configuration; every argument has a documented default.
        public init(
            maximumResponseSize: Int = URLSessionDataLoader.Configuration.defaultMaximumResponseSize,
            maximumRedirects: Int = 10,
            allowsHTTPSDowngrade: Bool = false,
            httpAdditionalHeaders: [String: String] = [:],
            httpMaximumConnectionsPerHost: Int = 6,
            idleTimeout: Double = 60,
            maximumConnections: Int? = nil
        ) {
            self.maximumResponseSize = maximumResponseSize
            self.maximumRedirects = maximumRedirects
            self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
            self.httpAdditionalHeaders = httpAdditionalHeaders
            self.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
            self.idleTimeout = idleTimeout
            self.maximumConnections = maximumConnections
        }

        /// The same settings as a URLSession loader's, so either loader can be put
        /// behind one configuration.
        public init(_ configuration: URLSessionDataLoader.Configuration) {
            self.init(
                maximumResponseSize: configuration.maximumResponseSize,
                maximumRedirects: configuration.maximumRedirects,
                allowsHTTPSDowngrade: configuration.allowsHTTPSDowngrade,
                httpAdditionalHeaders: configuration.httpAdditionalHeaders,
                httpMaximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
                idleTimeout: configuration.idleTimeout)
        }

        var redirectPolicy: RedirectPolicy {
            RedirectPolicy(maximumRedirects: maximumRedirects, allowsHTTPSDowngrade: allowsHTTPSDowngrade)
        }
    }

    /// The settings this loader was made with.
    public let configuration: Configuration
    /// Connections this loader opens at most, over every host: the configured
    /// maximum, or the budget left by the descriptor limit when the loader was made.
    /// Fewer once the process runs short of descriptors while it loads: a socket that
    /// would leave fewer than three free is refused, and the limit comes down to the
    /// connections held, so later loads wait for one of them (`CurlSockets`).
    public let connectionLimit: Int

    private struct DriverSlot {
        /// The thread and multi handle, made by the first load that finds
        /// descriptors for them.
        var driver: CurlDriver?
        /// When a load last found none; the next look is a second later, since each
        /// look briefly takes the last descriptors itself.
        var refusedAt: ContinuousClock.Instant?
    }

    private let driverSlot = Locked(DriverSlot())

    /// Makes a loader; its thread starts with the first load.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        connectionLimit = max(1, configuration.maximumConnections ?? Self.connectionBudget())
    }

    deinit {
        driverSlot.withLock { $0.driver }?.shutdown()
    }

    /// The driver, made now if need be; nil while the process cannot spare the two
    /// descriptors of its wakeup pair besides the reserve (`CurlSockets.reserve`).
    /// Without the pair libcurl would still run, but every hand-over would wait for
    /// its poll's timeout; and the process itself would be left without the
    /// descriptor libdispatch needs to look at a thread, which stops it.
    private func startedDriver() -> CurlDriver? {
        driverSlot.withLock { slot in
            if let driver = slot.driver { return driver }
            let now = ContinuousClock.now
            if let refusedAt = slot.refusedAt, now - refusedAt < .seconds(1) { return nil }
            guard CurlSockets.canOpen(CurlSockets.reserve + 2) else {
                slot.refusedAt = now
                return nil
            }
            let made = CurlDriver(settings: configuration, connectionLimit: connectionLimit)
            slot.driver = made
            return made
        }
    }

    /// How many connections the process can afford: what its descriptor limit
    /// (`RLIMIT_NOFILE`, the soft one) leaves once the descriptors already open and
    /// a reserve are set aside, halved because a connection being made can hold two
    /// sockets (libcurl tries IPv6 and IPv4 side by side). At most 512.
    ///
    /// The reserve (a quarter of the limit, at least 16) is for everything else the
    /// process opens while loads run: files of the disk cache, pipes, and the
    /// `/proc` files libdispatch opens when it starts a thread, which abort the
    /// process when they cannot be opened.
    public static func connectionBudget() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 64 }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? 16
        return connectionBudget(descriptorLimit: Int(clamping: limit.rlim_cur), open: open)
    }

    /// The budget for a descriptor limit and a count of descriptors already open.
    static func connectionBudget(descriptorLimit: Int, open: Int) -> Int {
        let reserve = max(16, descriptorLimit / 4)
        return min(512, max(1, (descriptorLimit - open - reserve) / 2))
    }

    /// Transfers handed to the driver thread and not yet let go of: tests use it to
    /// prove that abandoned transfers do not pile up.
    var unfinishedTaskCount: Int { driverSlot.withLock { $0.driver }?.unfinishedCount ?? 0 }

    /// Whether this loader takes `url`: `http` or `https` with a host.
    public static func canLoad(_ url: URL) -> Bool {
        URLSessionDataLoader.canLoad(url)
    }

    /// Loads `request`; a non-2xx status is returned, not thrown.
    public func loadData(
        for request: URLRequest,
        progress: @escaping @Sendable (_ received: Int64, _ expected: Int64?) -> Void
    ) async throws(ImagoError) -> DataResponse {
        try await loadData(for: request, options: DataLoadingOptions()) { progress($0.received, $0.expected) }
    }

    /// Loads `request` as `options` ask; a non-2xx status is returned, not thrown.
    public func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        guard var url = request.url, Self.canLoad(url) else {
            throw .invalidURL(request.url?.absoluteString ?? "")
        }
        if let normalized = url.withLowercasedScheme { url = normalized }
        let headers = try HTTPHeaderFields.merge(
            request.allHTTPHeaderFields ?? [:], over: HTTPHeaderFields.withDefaultUserAgent(configuration.httpAdditionalHeaders), url: url)
        if Task.isCancelled { throw .cancelled }

        let transfer = CurlTransfer(
            request: request, url: url, headers: headers, limit: configuration.maximumResponseSize,
            policy: configuration.redirectPolicy, options: options, progress: progress)
        guard let driver = startedDriver() else { throw Self.outOfDescriptors(url: url) }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                transfer.install(continuation)
                driver.start(transfer)
            }
        } onCancel: {
            // The caller is resumed at once; the driver thread drops the transfer
            // when it next wakes.
            if transfer.finish(.failure(.cancelled)) { driver.stop(transfer) }
        }
        return try result.get()
    }
}
#endif
