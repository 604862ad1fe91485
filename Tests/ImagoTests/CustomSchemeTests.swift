import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The data loader decides which URLs it takes: one of an app's own serves a scheme
/// Imago has never heard of, through the whole loader.
@Suite struct CustomSchemeTests {
    /// Serves `demo://NAME` from images it holds; takes no other URL.
    struct DemoLoader: DataLoading {
        let images: [String: Data]

        func canLoad(_ url: URL) -> Bool { url.scheme == "demo" }

        func loadData(
            for request: URLRequest, options: DataLoadingOptions,
            progress: @escaping @Sendable (DataLoadingProgress) -> Void
        ) async throws(ImagoError) -> DataResponse {
            guard let url = request.url, canLoad(url), let data = images[url.host ?? ""] else {
                throw .invalidURL(request.url?.absoluteString ?? "")
            }
            progress(DataLoadingProgress(received: Int64(data.count), expected: Int64(data.count)))
            return DataResponse(data: data, url: url)
        }
    }

    @Test func aLoaderOfItsOwnSchemeWorksEndToEnd() async throws {
        let demo = DemoLoader(images: ["red": pngData(200, width: 6, height: 4)])
        let loader = ImageLoader(configuration: .init(dataLoader: demo), cache: ImageCache())
        let url = try #require(URL(string: "demo://red"))
        #expect(!demo.isLocal(url), "a URL of a scheme of its own is fetched by the data loader")
        let response = try await loader.image(for: ImageRequest(url: url, targetSize: .thumbnail(3)))
        #expect(response.image.width == 3 && response.image.height == 2)
        #expect(response.image.bitmap[0, 0].r == 200)
        let again = try await loader.image(for: ImageRequest(url: url, targetSize: .thumbnail(3)))
        #expect(again.source == .memory)
        // What the demo loader does not take fails before any I/O.
        for other in ["https://example.com/a.png", "demo-not://red"] {
            let task = loader.task(with: ImageRequest(url: try #require(URL(string: other))))
            guard case .failure(.invalidURL) = await task.value else {
                Issue.record("\(other) was not refused as a URL the data loader does not take")
                continue
            }
        }
    }

    /// A loader whose URLs are at hand says so: its images never go into the disk
    /// tier, and their responses say they came from `.local`.
    @Test func aLoaderSaysWhichOfItsURLsAreAtHand() async throws {
        struct AssetLoader: DataLoading {
            let inner: DemoLoader
            func canLoad(_ url: URL) -> Bool { inner.canLoad(url) }
            func isLocal(_ url: URL) -> Bool { true }
            func loadData(
                for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void
            ) async throws(ImagoError) -> DataResponse {
                try await CacheableLoader(inner: inner).loadData(for: request, options: options, progress: progress)
            }
        }
        /// The demo loader's answers as an HTTP server would give them, cacheable.
        struct CacheableLoader: DataLoading {
            let inner: DemoLoader
            func canLoad(_ url: URL) -> Bool { inner.canLoad(url) }
            func loadData(
                for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void
            ) async throws(ImagoError) -> DataResponse {
                let response = try await inner.loadData(for: request, options: options, progress: progress)
                return DataResponse(data: response.data, url: response.url, statusCode: 200, headers: ["cache-control": "max-age=600"])
            }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-assets-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(directory: directory)
        let url = try #require(URL(string: "demo://red"))
        for (local, stored) in [(true, false), (false, true)] {
            let demo = DemoLoader(images: ["red": pngData(200, width: 6, height: 4)])
            let dataLoader: any DataLoading = local ? AssetLoader(inner: demo) : CacheableLoader(inner: demo)
            let loader = ImageLoader(configuration: .init(dataLoader: dataLoader, diskCache: disk), cache: ImageCache())
            let response = try await loader.image(for: url)
            #expect(response.source == (local ? .local : .network))
            _ = await loader.waitForBackgroundWork(timeout: 10)
            #expect((disk.statistics.count > 0) == stored, "local: \(local)")
            disk.removeAll()
        }
    }

    @Test func theDefaultLoaderTakesWhatItsHalvesTake() async throws {
        let loader = DefaultDataLoader(network: DemoLoader(images: [:]))
        #expect(loader.canLoad(try #require(URL(string: "demo://red"))))
        #expect(loader.canLoad(URL(fileURLWithPath: "/tmp/a.png")))
        #expect(!loader.canLoad(try #require(URL(string: "https://example.com/a.png"))))
        #expect(DefaultDataLoader().canLoad(try #require(URL(string: "https://example.com/a.png"))))
        let data = try #require(URL(string: "data:,x"))
        #expect(loader.isLocal(URL(fileURLWithPath: "/tmp/a.png")) && loader.isLocal(data))
        #expect(!loader.isLocal(try #require(URL(string: "demo://red"))))
    }
}
