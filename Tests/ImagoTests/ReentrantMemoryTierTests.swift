import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A memory tier of an app's own may ask the loader about itself from its methods:
/// the pipeline calls the tier with no lock of its own held, so nothing deadlocks.
@Suite struct ReentrantMemoryTierTests {
    /// A memory tier that reads the loader's queue at every call, as a tier that
    /// logs or sizes itself by the load might.
    final class AskingTier: ImageCaching, @unchecked Sendable {
        // @unchecked: `loader` is set once, before any load, and only read after.
        nonisolated(unsafe) weak var loader: ImageLoader?
        let inner = ImageCache(costLimit: 8 << 20)
        let calls = Locked(0)

        func image(forKey key: ImageCacheKey) -> DecodedImage? {
            _ = loader?.queuedCount
            calls.withLock { $0 += 1 }
            return inner.image(forKey: key)
        }
        func setImage(_ image: DecodedImage, forKey key: ImageCacheKey) {
            _ = loader?.queuedCount
            calls.withLock { $0 += 1 }
            inner.setImage(image, forKey: key)
        }
        func removeImage(forKey key: ImageCacheKey) {
            _ = loader?.queuedCount
            inner.removeImage(forKey: key)
        }
        func removeAll() {
            _ = loader?.queuedCount
            inner.removeAll()
        }
    }

    @Test(.timeLimit(.minutes(1))) func aTierOfOnesOwnMayCallTheLoaderFromItsMethods() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/a.png", data: pngData(40))
        let tier = AskingTier()
        let loader = ImageLoader(configuration: .init(), cache: tier)
        tier.loader = loader
        let url = server.url("/a.png")
        // A processed image: the memory tier is asked for it and for the decoded
        // image below it, and stores both.
        let request = ImageRequest(url: url, targetSize: .thumbnail(4), processors: [ImageProcessors.Circle()])
        async let first = loader.image(for: request)
        async let second = loader.image(for: request)
        let (one, two) = try await (first, second)
        #expect(one.image.width == two.image.width && one.image.width > 0)
        let again = try await loader.image(for: request)
        #expect(again.source == .memory)
        #expect(tier.calls.withLock { $0 } >= 3)
        #expect(server.count(for: "/a.png") == 1)
    }
}
