import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes of one resource, as a data loader delivers them.
public struct DataResponse: Sendable {
    /// The body, complete.
    public let data: Data
    /// The URL the data came from, after redirects.
    public let url: URL
    /// The HTTP status; nil for `file:` and `data:` URLs.
    public let statusCode: Int?
    /// Response headers with lower-cased names; empty for `file:` and `data:`.
    public let headers: [String: String]
    /// The redirects followed on the way, in order: what the HTTP cache needs to know
    /// whether the answer may be kept under the URL asked for.
    public let redirects: [Redirect]
    /// Whether the transfer ended before the body did (the connection closed or was
    /// lost short of the Content-Length) and `data` is what arrived. Only when the
    /// load asked for it (`DataLoadingOptions.acceptsTruncatedBody`); otherwise such a
    /// transfer is an error.
    public let isTruncated: Bool
    /// Whether the request as sent carried credentials: an `Authorization` field
    /// (the request's own, a request modifier's or the loader's additional fields)
    /// or a user in the URL. A response to such a request is the user's own: a
    /// shared cache (the fleet's Redis tier) keeps it only when the server says it
    /// may (RFC 9111 §3.5). A data loader of its own that adds credentials the
    /// request does not show says so here.
    public var requestCarriedCredentials: Bool
    /// For a truncated body, the failure the data loader reports when the load does
    /// not accept one: the loader asks for cut bodies to resume them, and fails
    /// with this, worded as before, when it cannot.
    var endedEarly: ImagoError?

    /// One redirect followed: the URL that answered with it, its status and headers.
    public struct Redirect: Sendable {
        /// The URL that answered with the redirect.
        public let url: URL
        /// 301, 302, 303, 307 or 308.
        public let statusCode: Int
        /// Its headers, with lower-cased names.
        public let headers: [String: String]

        /// Makes a redirect.
        package init(url: URL, statusCode: Int, headers: [String: String]) {
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
        }
    }

    /// Makes a response.
    public init(
        data: Data, url: URL, statusCode: Int? = nil, headers: [String: String] = [:], redirects: [Redirect] = [],
        isTruncated: Bool = false, requestCarriedCredentials: Bool = false
    ) {
        self.data = data
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.redirects = redirects
        self.isTruncated = isTruncated
        self.requestCarriedCredentials = requestCarriedCredentials
    }
}

/// What a load asks of a data loader beyond the URL request.
public struct DataLoadingOptions: Sendable, Hashable {
    /// Return what arrived, as a response that says `isTruncated`, when a 2xx body
    /// ends short of its Content-Length (or a chunked body is cut), instead of
    /// failing: a partial image is better than none to a caller who asked for it.
    public var acceptsTruncatedBody: Bool
    /// Hand each piece of the body to the progress handler as it arrives
    /// (`DataLoadingProgress.chunk`), so the caller can look at the bytes so far
    /// (progressive previews). Off, progress carries counts only.
    public var reportsChunks: Bool

    /// Makes options; both are off by default.
    public init(acceptsTruncatedBody: Bool = false, reportsChunks: Bool = false) {
        self.acceptsTruncatedBody = acceptsTruncatedBody
        self.reportsChunks = reportsChunks
    }
}

/// One progress report of a data loader.
public struct DataLoadingProgress: Sendable {
    /// Bytes of the body received so far. Zero when a response (or a new attempt)
    /// starts: any bytes reported before belong to a body that was dropped.
    public let received: Int64
    /// The body's length, when the server said it.
    public let expected: Int64?
    /// The bytes that arrived since the last report, when the load asked for them
    /// (`DataLoadingOptions.reportsChunks`); nil otherwise. In order and without gaps:
    /// the chunks since the last zero `received` make up the body so far.
    public let chunk: Data?

    /// Makes a report.
    public init(received: Int64, expected: Int64?, chunk: Data? = nil) {
        self.received = received
        self.expected = expected
        self.chunk = chunk
    }
}

/// Fetches the bytes behind a URL request: the seam between the loader and the
/// network (`DefaultDataLoader`), which tests and benchmarks replace, and through
/// which an app serves URLs of its own (a scheme of its own, say).
///
/// The loader asks `canLoad(_:)` before anything else: a request whose URL the data
/// loader does not take fails at once with `ImagoError.invalidURL`.
///
/// A conforming type must stop promptly and throw `ImagoError.cancelled` when the
/// calling task is cancelled, report progress as bytes arrive, and throw only
/// `ImagoError`. A non-2xx HTTP status is returned, not thrown: the loader decides
/// what it means (a 304 is good news to a cache). Retries and the whole-load deadline
/// are the loader's job, not the data loader's.
///
/// A data loader may ignore `options`: one that never returns a truncated body (it
/// fails instead) and reports no chunks still works, without partial images or
/// progressive previews.
public protocol DataLoading: Sendable {
    /// Whether this data loader takes `url`. By default what `DefaultDataLoader`
    /// takes (`http`, `https`, `file` and `data` URLs), so a loader that stands in
    /// for it, a wrapper or a test double, need not say; a loader of other URLs says
    /// which.
    func canLoad(_ url: URL) -> Bool

    /// Whether `url` names bytes already on this machine, read where they are: they
    /// are never copied into the disk or shared tier, and a response says it came
    /// from `.local`. By default `file` and `data` URLs; a loader of a scheme of its
    /// own (an app's asset store, say) says whether its URLs are.
    func isLocal(_ url: URL) -> Bool

    /// Loads `request` as `options` ask: a body cut short may be returned as
    /// truncated, and progress may carry the bytes as they arrive.
    func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse
}

extension DataLoading {
    /// What `DefaultDataLoader` takes: `http` and `https` URLs with a host, `file`
    /// and `data` URLs.
    public func canLoad(_ url: URL) -> Bool {
        HTTPLoaderConfiguration.takes(url) || LocalDataLoader.takes(url)
    }

    /// `file` and `data` URLs, what `LocalDataLoader` takes.
    public func isLocal(_ url: URL) -> Bool {
        LocalDataLoader.takes(url)
    }

}
