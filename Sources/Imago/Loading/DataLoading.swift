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

    /// One redirect followed: the URL that answered with it, its status and headers.
    public struct Redirect: Sendable {
        /// The URL that answered with the redirect.
        public let url: URL
        /// 301, 302, 303, 307 or 308.
        public let statusCode: Int
        /// Its headers, with lower-cased names.
        public let headers: [String: String]

        /// Makes a redirect.
        public init(url: URL, statusCode: Int, headers: [String: String]) {
            self.url = url
            self.statusCode = statusCode
            self.headers = headers
        }
    }

    /// Makes a response.
    public init(data: Data, url: URL, statusCode: Int? = nil, headers: [String: String] = [:], redirects: [Redirect] = []) {
        self.data = data
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
        self.redirects = redirects
    }
}

/// Fetches the bytes behind a URL request: the seam between the loader and the
/// network (URLSession by default), which tests and benchmarks replace.
///
/// A conforming type must stop promptly and throw `ImagoError.cancelled` when the
/// calling task is cancelled, report progress as bytes arrive, and throw only
/// `ImagoError`. A non-2xx HTTP status is returned, not thrown: the loader decides
/// what it means (a 304 is good news to a cache). Retries and the whole-load deadline
/// are the loader's job, not the data loader's.
public protocol DataLoading: Sendable {
    /// Loads `request`, calling `progress` with the bytes received so far and the
    /// expected total when the server said it.
    func loadData(
        for request: URLRequest,
        progress: @escaping @Sendable (_ received: Int64, _ expected: Int64?) -> Void
    ) async throws(ImagoError) -> DataResponse
}
