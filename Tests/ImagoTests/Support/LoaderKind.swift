import Foundation
@testable import Imago
import _ImagoTestSupport

/// The network data loaders the data-loading tests run against: each test that
/// applies to both runs once with each, so they keep behaving alike.
enum LoaderKind: String, Sendable, CustomStringConvertible {
    case urlSession
    case curl

    /// The loaders of this platform: the curl loader exists on Linux only.
    static var all: [LoaderKind] {
        #if os(Linux)
        [.urlSession, .curl]
        #else
        [.urlSession]
        #endif
    }

    var description: String { rawValue }

    /// A loader of this kind with `configuration`'s settings.
    func make(_ configuration: HTTPLoaderConfiguration = .init()) -> any DataLoading {
        switch self {
        case .urlSession:
            return URLSessionDataLoader(configuration: configuration)
        case .curl:
            #if os(Linux)
            return CurlDataLoader(configuration: configuration)
            #else
            fatalError("the curl loader exists on Linux only")
            #endif
        }
    }

    /// Transfers `loader` has started and not yet let go of.
    func unfinishedTasks(of loader: any DataLoading) -> Int {
        if let loader = loader as? URLSessionDataLoader { return loader.unfinishedTaskCount }
        #if os(Linux)
        if let loader = loader as? CurlDataLoader { return loader.unfinishedTaskCount }
        #endif
        return 0
    }
}
