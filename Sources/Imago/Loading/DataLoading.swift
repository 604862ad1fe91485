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

    /// Makes a response.
    public init(data: Data, url: URL, statusCode: Int? = nil, headers: [String: String] = [:]) {
        self.data = data
        self.url = url
        self.statusCode = statusCode
        self.headers = headers
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
