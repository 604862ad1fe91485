import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The data loader Imago uses unless told otherwise: `http` and `https` go to the
/// network loader, `file` and `data` to a `LocalDataLoader`, and any other URL fails
/// with `ImagoError.invalidURL` before any I/O.
public final class DefaultDataLoader: DataLoading {
    /// Loads `http` and `https` URLs.
    public let network: any DataLoading
    /// Loads `file` and `data` URLs.
    public let local: LocalDataLoader

    /// Makes a loader from its two halves; the network half is a seam so that a
    /// benchmark can put another HTTP client (libcurl's multi interface, say) behind
    /// the same routing.
    public init(network: any DataLoading = URLSessionDataLoader(), local: LocalDataLoader = LocalDataLoader()) {
        self.network = network
        self.local = local
    }

    /// Makes a loader with a URLSession loader configured by `configuration`.
    public convenience init(configuration: URLSessionDataLoader.Configuration) {
        self.init(network: URLSessionDataLoader(configuration: configuration))
    }

    /// Routes `request` by its URL's scheme.
    public func loadData(
        for request: URLRequest,
        progress: @escaping @Sendable (_ received: Int64, _ expected: Int64?) -> Void
    ) async throws(ImagoError) -> DataResponse {
        guard let url = request.url else { throw .invalidURL("") }
        if URLSessionDataLoader.canLoad(url) {
            return try await network.loadData(for: request, progress: progress)
        }
        if LocalDataLoader.canLoad(url) {
            return try await local.loadData(for: request, progress: progress)
        }
        throw .invalidURL(url.absoluteString)
    }
}
