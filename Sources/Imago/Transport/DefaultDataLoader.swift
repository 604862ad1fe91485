import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The data loader Imago uses unless told otherwise: the URLs its `LocalDataLoader`
/// takes (`file` and `data`) go there, those its network loader takes (`http` and
/// `https`) go there, and any other URL fails with `ImagoError.invalidURL` before
/// any I/O.
///
/// The network loader is the platform's best: `CurlDataLoader` on Linux, where it
/// moved the same images with a quarter of URLSession's CPU time and made cold
/// thumbnail loads end to end faster (BENCHMARKS.md), and `URLSessionDataLoader` on
/// Apple platforms, where URLSession is the system's own client.
public final class DefaultDataLoader: DataLoading {
    /// Loads the URLs its `canLoad(_:)` takes that are not local: `http` and `https`.
    package let network: any DataLoading
    /// Loads `file` and `data` URLs.
    package let local: LocalDataLoader

    /// Makes a loader from its two halves; the network half, the platform's when nil,
    /// is a seam so that tests and benchmarks can put another HTTP client behind the
    /// same routing.
    public init(network: (any DataLoading)? = nil, local: LocalDataLoader = LocalDataLoader()) {
        self.network = network ?? DefaultDataLoader.makeNetworkLoader()
        self.local = local
    }

    /// Makes a loader whose network loader, the platform's, has the settings of
    /// `configuration`.
    public convenience init(configuration: HTTPLoaderConfiguration) {
        self.init(network: DefaultDataLoader.makeNetworkLoader(configuration))
    }

    /// The platform's network loader with `configuration`'s settings: libcurl's
    /// multi interface on Linux, URLSession elsewhere.
    package static func makeNetworkLoader(_ configuration: HTTPLoaderConfiguration = .init()) -> any DataLoading {
        #if canImport(CCurl)
        CurlDataLoader(configuration: configuration)
        #else
        URLSessionDataLoader(configuration: configuration)
        #endif
    }

    /// Whether the local loader or the network one takes `url`.
    public func canLoad(_ url: URL) -> Bool {
        local.canLoad(url) || network.canLoad(url)
    }

    /// What the local loader takes, and what the network one says is at hand.
    public func isLocal(_ url: URL) -> Bool {
        local.canLoad(url) || network.isLocal(url)
    }

    /// Routes `request` to the half that takes its URL, with `options` passed on.
    public func loadData(
        for request: URLRequest, options: DataLoadingOptions,
        progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        guard let url = request.url else { throw .invalidURL("") }
        // Local first: a network loader that stands in for the platform's need not
        // say that it takes no files.
        if local.canLoad(url) {
            return try await local.loadData(for: request, options: options, progress: progress)
        }
        if network.canLoad(url) {
            return try await network.loadData(for: request, options: options, progress: progress)
        }
        throw .invalidURL(url.absoluteString)
    }
}
