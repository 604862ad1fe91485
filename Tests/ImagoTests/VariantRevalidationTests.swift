import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Stored thumbnails through revalidation, against the test server on 127.0.0.1 and a
/// real disk cache: a 304 confirms them as they are, a 200 replaces them, and a trust
/// period skips the question.
@Suite struct VariantRevalidationTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-revalidation-\(UUID())")

    init() throws {
        try server.start()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A loader with a fresh memory cache on the shared directory: what a restarted
    /// app sees.
    func makeLoader(freshness: FreshnessPolicy = .httpHeaders) -> (ImageLoader, DiskCache) {
        let disk = DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(retryPolicy: .none, diskCache: disk, storagePolicy: .both, freshnessPolicy: freshness),
            cache: ImageCache())
        return (loader, disk)
    }

    func load(
        _ loader: ImageLoader, _ path: String, target: TargetSize? = nil, processors: [any ImageProcessing] = []
    ) async throws -> ImageResponse {
        let task = loader.task(with: ImageRequest(url: server.url(path), targetSize: target, processors: processors))
        return try await (withTimeLimit(60) { await task.value } ?? .failure(.cancelled)).get()
    }

    /// Serves `body(version)` under the ETag `"v<version>"`, answering a request that
    /// names the current one with a 304 carrying `notModifiedHeaders`.
    func serveVersions(
        _ path: String, version: Locked<Int>, cacheControl: String = "no-cache",
        notModifiedHeaders: [String: String]? = nil, body: @escaping @Sendable (Int) -> Data
    ) {
        server.route(path) { request in
            let current = version.withLock { $0 }
            let etag = "\"v\(current)\""
            if request.header("If-None-Match") == etag {
                return .init(status: 304, headers: notModifiedHeaders ?? ["ETag": etag, "Cache-Control": cacheControl])
            }
            return .ok(body(current), headers: ["ETag": etag, "Cache-Control": cacheControl])
        }
    }

    /// An opaque 600×400 image of one grey.
    static func plain(_ shade: Int) -> Data { pngData(UInt8(shade), width: 600, height: 400) }

    @Test func a304ServesTheStoredThumbnailWithoutDecodingTheOriginal() async throws {
        defer { cleanUp() }
        serveVersions("/photo.jpg", version: Locked(1)) { _ in LoaderCachingTests.photo }
        let (first, disk) = makeLoader()
        let cold = try await load(first, "/photo.jpg", target: .thumbnail(64))
        #expect(cold.source == .network)
        await disk.flush()
        // The stored original now holds another picture, with the same validators:
        // a thumbnail made again from it would show it.
        let key = ImageCacheKey.originalRecordName(server.url("/photo.jpg").absoluteString)
        let record = try #require(disk.record(forKey: key))
        disk.store(Self.plain(7), metadata: record.metadata, forKey: key)
        await disk.flush()

        let (second, _) = makeLoader()
        let warm = try await load(second, "/photo.jpg", target: .thumbnail(64))
        #expect(warm.source == .revalidated)
        #expect(warm.image.bitmap == cold.image.bitmap && warm.image.format == .jpeg)
        let requests = server.requests(for: "/photo.jpg")
        #expect(requests.count == 2 && requests.last?.header("If-None-Match") == "\"v1\"")
        // An image with no stored variant (the full size) is decoded from the stored
        // original the 304 confirmed, and says so too.
        let full = try await load(second, "/photo.jpg")
        #expect(full.source == .revalidated && full.image.width == 600 && full.image.bitmap[0, 0].r == 7)
    }

    /// A processed variant (here a crop of a thumbnail) answers after a 304 as a
    /// sized one does, not processed again from a thumbnail made again.
    @Test func a304ServesAStoredProcessedImageAsItIs() async throws {
        defer { cleanUp() }
        serveVersions("/crop.png", version: Locked(1)) { Self.plain($0 * 50) }
        let crop = [ImageProcessors.Crop(x: 0, y: 0, width: 30, height: 20)]
        let (first, disk) = makeLoader()
        let cold = try await load(first, "/crop.png", target: .thumbnail(60), processors: crop)
        #expect(cold.image.width == 30 && cold.image.height == 20)
        await disk.flush()
        let key = ImageRequest(url: server.url("/crop.png"), targetSize: .thumbnail(60), processors: crop).cacheKey.variantRecordName
        let record = try #require(disk.record(forKey: key))
        // The stored crop now holds another grey: made again, it would read 50.
        let other = VariantCodec.encode(DecodedImage(bitmap: Bitmap(width: 30, height: 20, pixels: (0..<2400).map { $0 % 4 == 3 ? 255 : 9 }), format: .png))
        disk.store(other, metadata: record.metadata, forKey: key)
        await disk.flush()
        let (second, _) = makeLoader()
        let warm = try await load(second, "/crop.png", target: .thumbnail(60), processors: crop)
        #expect(warm.source == .revalidated && warm.image.width == 30 && warm.image.bitmap[0, 0].r == 9)
    }

    /// A stored thumbnail that no longer decodes is dropped after the 304, and the
    /// thumbnail made again from the stored original the 304 confirmed, and kept in
    /// its place.
    @Test func aStoredThumbnailThatNoLongerDecodesIsMadeAgainAfterThe304() async throws {
        defer { cleanUp() }
        serveVersions("/damaged.png", version: Locked(1)) { Self.plain($0 * 60) }
        let (first, disk) = makeLoader()
        let cold = try await load(first, "/damaged.png", target: .thumbnail(60))
        await disk.flush()
        let key = ImageRequest(url: server.url("/damaged.png"), targetSize: .thumbnail(60)).cacheKey.variantRecordName
        let record = try #require(disk.record(forKey: key))
        // A whole record (its checksum holds) whose bytes are no variant.
        disk.store(Data("imgv, but cut short".utf8), metadata: record.metadata, forKey: key)
        await disk.flush()

        let (second, secondDisk) = makeLoader()
        let warm = try await load(second, "/damaged.png", target: .thumbnail(60))
        #expect(warm.source == .revalidated && warm.image.bitmap == cold.image.bitmap)
        let requests = server.requests(for: "/damaged.png")
        #expect(requests.count == 2 && requests.last?.header("If-None-Match") == "\"v1\"")
        await secondDisk.flush()
        let kept = try #require(disk.record(forKey: key))
        #expect(VariantCodec.decode(kept.data, maximumPixelCount: 1 << 20)?.bitmap == cold.image.bitmap)
    }

    @Test func a200WithNewContentReplacesTheStoredThumbnail() async throws {
        defer { cleanUp() }
        let version = Locked(1)
        serveVersions("/changing.png", version: version) { Self.plain($0 * 10) }
        let (first, disk) = makeLoader()
        #expect(try await load(first, "/changing.png", target: .thumbnail(60)).image.bitmap[0, 0].r == 10)
        await disk.flush()
        version.withLock { $0 = 2 }
        let (second, secondDisk) = makeLoader()
        let changed = try await load(second, "/changing.png", target: .thumbnail(60))
        #expect(changed.source == .network && changed.image.bitmap[0, 0].r == 20 && changed.image.width == 60)
        await secondDisk.flush()
        // The new thumbnail was kept, under the new validator: the next 304 confirms it.
        let (third, _) = makeLoader()
        let confirmed = try await load(third, "/changing.png", target: .thumbnail(60))
        #expect(confirmed.source == .revalidated && confirmed.image.bitmap[0, 0].r == 20)
        let requests = server.requests(for: "/changing.png")
        #expect(requests.count == 3 && requests.last?.header("If-None-Match") == "\"v2\"")
    }

    /// A 304 that gives the image a lifetime is written back, to the thumbnail too: the
    /// next load asks nothing.
    @Test func a304ThatGivesALifetimeIsKept() async throws {
        defer { cleanUp() }
        serveVersions("/later.png", version: Locked(1), notModifiedHeaders: ["ETag": "\"v1\"", "Cache-Control": "max-age=3600"]) {
            Self.plain($0 * 30)
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/later.png", target: .thumbnail(60))
        await disk.flush()
        let (second, secondDisk) = makeLoader()
        #expect(try await load(second, "/later.png", target: .thumbnail(60)).source == .revalidated)
        await secondDisk.flush()
        let (third, _) = makeLoader()
        let fresh = try await load(third, "/later.png", target: .thumbnail(60))
        #expect(fresh.source == .disk && fresh.image.bitmap[0, 0].r == 30)
        #expect(server.count(for: "/later.png") == 2)
    }

    @Test func aTrustPeriodUsesStoredImagesWhateverTheHeadersSay() async throws {
        defer { cleanUp() }
        #expect(ImageLoader.Configuration().freshnessPolicy == .httpHeaders)
        serveVersions("/no-cache.png", version: Locked(1)) { Self.plain($0 * 40) }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/no-cache.png", target: .thumbnail(60))
        await disk.flush()
        let (trusting, _) = makeLoader(freshness: .trusted(seconds: 7 * 86400))
        let thumbnail = try await load(trusting, "/no-cache.png", target: .thumbnail(60))
        let original = try await load(trusting, "/no-cache.png")
        #expect(thumbnail.source == .disk && thumbnail.image.width == 60 && thumbnail.image.bitmap[0, 0].r == 40)
        #expect(original.source == .disk && original.image.width == 600)
        #expect(server.count(for: "/no-cache.png") == 1)
        // Once the period is over, HTTP's rules decide again.
        let (over, _) = makeLoader(freshness: .trusted(seconds: 0))
        #expect(try await load(over, "/no-cache.png", target: .thumbnail(60)).source == .revalidated)
        #expect(server.count(for: "/no-cache.png") == 2)
    }
}
