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
/// This loader behaves as `URLSessionDataLoader` does (one configuration, one
/// transfer core for the size limit, truncation and progress, one set of failures)
/// and adds what those problems need: idle connections are kept for every origin
/// up to the connection budget, and the budget is sized from the process's
/// descriptor limit (`RLIMIT_NOFILE`), leaving room for the rest of the process, so
/// that loads beyond it wait for a connection instead of failing.
public final class CurlDataLoader: DataLoading {
    /// The settings this loader was made with.
    package let configuration: HTTPLoaderConfiguration
    /// The configuration's own header fields with the User-Agent added unless they
    /// set one: the same for every request, so made once.
    private let defaultHeaders: [String: String]
    /// Connections this loader opens at most, over every host: the
    /// `maximumConnections` it was made with, or the budget left by the descriptor limit when the loader was made.
    /// Fewer once the process runs short of descriptors while it loads: a socket that
    /// would leave fewer than three free is refused, and the limit comes down to the
    /// connections held, so later loads wait for one of them (`CurlSockets`).
    package let connectionLimit: Int

    private struct DriverSlot {
        /// The thread and multi handle, made by the first load that finds
        /// descriptors for them.
        var driver: CurlDriver?
        /// When a load last found none; the next look is a second later, since each
        /// look briefly takes the last descriptors itself.
        var refusedAt: ContinuousClock.Instant?
    }

    private let driverSlot = Locked(DriverSlot())

    /// Makes a loader; its thread starts with the first load. `maximumConnections`
    /// bounds the connections open at once over every host; nil sizes it from the
    /// process's file descriptor limit (`connectionBudget()`).
    public init(configuration: HTTPLoaderConfiguration = HTTPLoaderConfiguration(), maximumConnections: Int? = nil) {
        self.configuration = configuration
        defaultHeaders = HTTPHeaderFields.withDefaultUserAgent(configuration.httpAdditionalHeaders)
        connectionLimit = max(1, maximumConnections ?? Self.connectionBudget())
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
    package static func connectionBudget() -> Int {
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
    public func canLoad(_ url: URL) -> Bool {
        HTTPLoaderConfiguration.takes(url)
    }


    /// Loads `request` as `options` ask; a non-2xx status is returned, not thrown.
    public func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        let (url, headers, credentials) = try HTTPLoaderConfiguration.checked(request, over: defaultHeaders)

        let transfer = CurlTransfer(
            request: request, url: url, headers: headers, limit: configuration.maximumResponseSize,
            policy: configuration.redirectPolicy, options: options, progress: progress)
        guard let driver = startedDriver() else { throw Self.outOfDescriptors(url: url) }
        var response = try await transfer.outcome.run { driver.start(transfer) } stop: { driver.stop(transfer) }
        response.requestCarriedCredentials = credentials
        return response
    }
}
#endif
