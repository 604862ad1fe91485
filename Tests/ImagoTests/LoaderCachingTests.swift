import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The tiers in a load (memory → disk → network) and HTTP freshness, against the
/// test server on 127.0.0.1 and a real disk cache in a temporary directory.
@Suite struct LoaderCachingTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-tiers-\(UUID())")
    static let png = pngData(33)

    init() throws {
        try server.start()
    }

    /// A loader with a fresh memory cache on the shared directory: what a restarted
    /// app sees.
    func makeLoader(policy: StoragePolicy = .originals, retries: Int = 1, disk: DiskCache? = nil) -> (ImageLoader, DiskCache) {
        let disk = disk ?? DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(
                retryPolicy: RetryPolicy(maximumAttempts: retries, baseDelay: 0.01, maximumDelay: 0.02),
                diskCache: disk, storagePolicy: policy),
            cache: ImageCache())
        return (loader, disk)
    }

    func load(_ loader: ImageLoader, _ path: String, target: TargetSize? = nil) async -> Result<ImageResponse, ImagoError> {
        let task = loader.task(with: ImageRequest(url: server.url(path), targetSize: target))
        return await withTimeLimit(30) { await task.value } ?? .failure(.cancelled)
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func freshDataIsServedWithNoRequest() async throws {
        defer { cleanUp() }
        server.route("/fresh.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
        let (first, disk) = makeLoader()
        #expect(try await load(first, "/fresh.png").get().source == .network)
        await disk.flush()
        let (second, _) = makeLoader()
        let response = try await load(second, "/fresh.png").get()
        #expect(response.source == .disk && response.image.bitmap[0, 0].r == 33)
        #expect(server.count(for: "/fresh.png") == 1)
    }

    @Test func staleDataIsRevalidatedAndA304ReusesTheStoredBytes() async throws {
        defer { cleanUp() }
        server.route("/tagged.png") { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
            }
            return .ok(Self.png, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/tagged.png").get()
        await disk.flush()
        let (second, _) = makeLoader()
        let response = try await load(second, "/tagged.png").get()
        #expect(response.source == .revalidated && response.image.bitmap[0, 0].r == 33)
        let requests = server.requests(for: "/tagged.png")
        #expect(requests.count == 2)
        #expect(requests.last?.header("If-None-Match") == "\"v1\"")
        // The 304 carried no body: nothing but headers crossed the wire, and the
        // metrics say so rather than giving the stored file's size.
        #expect(response.metrics.bytes == 0 && response.metrics.attempts == 1)
    }

    /// Dates whose names and zone are in another case are dates all the same, as
    /// browsers read them: the image stays fresh until its `Expires`.
    @Test func datesInAnotherCaseKeepTheirMeaning() async throws {
        defer { cleanUp() }
        server.route("/shouting.png", data: Self.png, headers: [
            "Expires": "THU, 01 JAN 2099 00:00:00 gMT", "Last-Modified": "mon, 01 jan 2024 00:00:00 GMT",
        ])
        let (first, disk) = makeLoader()
        _ = try await load(first, "/shouting.png").get()
        await disk.flush()
        let (second, _) = makeLoader()
        #expect(try await load(second, "/shouting.png").get().source == .disk)
        #expect(server.count(for: "/shouting.png") == 1)
    }

    /// A fresh original on disk that no longer decodes (its checksum holds, its bytes
    /// are not an image) is dropped and fetched again by the load that meets it; a
    /// server still sending bytes that do not decode fails the load after one more
    /// request, not in a loop.
    @Test func aStoredOriginalThatNoLongerDecodesIsFetchedAgainOnce() async throws {
        defer { cleanUp() }
        let broken = Atomic<Bool>(false)
        server.route("/photo.png") { _ in
            .ok(broken.load(ordering: .relaxed) ? Data("<html>maintenance</html>".utf8) : Self.png, headers: ["Cache-Control": "max-age=3600"])
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/photo.png").get()
        await disk.flush()
        let key = ImageCacheKey.originalRecordName(server.url("/photo.png").absoluteString)
        let record = try #require(disk.record(forKey: key))
        let damage = { disk.store(Data("not an image any more".utf8), metadata: record.metadata, forKey: key) }
        damage()
        await disk.flush()

        let (second, secondDisk) = makeLoader()
        let response = try await load(second, "/photo.png").get()
        #expect(response.source == .network && response.image.bitmap[0, 0].r == 33)
        #expect(server.count(for: "/photo.png") == 2)
        await secondDisk.flush()
        #expect(secondDisk.record(forKey: key)?.data == Self.png)

        damage()
        await disk.flush()
        broken.store(true, ordering: .relaxed)
        let (third, _) = makeLoader()
        guard case .failure(.unsupportedFormat) = await load(third, "/photo.png") else {
            Issue.record("bytes that are not an image were shown")
            return
        }
        #expect(server.count(for: "/photo.png") == 3)
    }

    /// `cachedResponse(for:)` finds what the disk tier keeps, where `cachedImage(for:)`
    /// reads memory only: the stored thumbnail, another size made from the stored
    /// original, and nothing for an image never loaded, all without a request.
    @Test func storedImagesAreFoundByTheirRequestInBothTiers() async throws {
        defer { cleanUp() }
        server.route("/photo.jpg", data: Self.photo, headers: ["Cache-Control": "no-cache", "ETag": "\"a\""])
        let (first, disk) = makeLoader(policy: .both)
        let thumbnail = ImageRequest(url: server.url("/photo.jpg"), targetSize: .thumbnail(64))
        let cold = try await load(first, "/photo.jpg", target: .thumbnail(64)).get()
        await disk.flush()

        let (second, _) = makeLoader(policy: .both)
        #expect(second.cachedImage(for: thumbnail) == nil)
        let stored = try #require(await second.cachedResponse(for: thumbnail))
        #expect(stored.source == .disk && stored.image.bitmap == cold.image.bitmap)
        // Now in memory too.
        #expect(second.cachedImage(for: thumbnail)?.bitmap == cold.image.bitmap)
        #expect(await second.cachedResponse(for: thumbnail)?.source == .memory)
        let other = try #require(await second.cachedResponse(for: ImageRequest(url: server.url("/photo.jpg"), targetSize: .thumbnail(32))))
        #expect(other.source == .disk && other.image.width == 32)
        #expect(await second.cachedResponse(for: ImageRequest(url: server.url("/never.jpg"))) == nil)
        #expect(server.count(for: "/photo.jpg") == 1)
    }

    @Test func changedImagesAreFetchedAgainWhenStale() async throws {
        defer { cleanUp() }
        let version = Atomic<Int>(1)
        server.route("/changing.png") { request in
            let current = version.load(ordering: .relaxed)
            if request.header("If-None-Match") == "\"v\(current)\"" { return .init(status: 304) }
            return .ok(pngData(UInt8(current * 10)), headers: ["ETag": "\"v\(current)\"", "Cache-Control": "max-age=0"])
        }
        let (first, disk) = makeLoader()
        #expect(try await load(first, "/changing.png").get().image.bitmap[0, 0].r == 10)
        await disk.flush()
        version.store(2, ordering: .relaxed)
        let (second, _) = makeLoader()
        let response = try await load(second, "/changing.png").get()
        #expect(response.source == .network && response.image.bitmap[0, 0].r == 20)
    }

    @Test func noStoreIsNeverWritten() async throws {
        defer { cleanUp() }
        server.route("/private.png", data: Self.png, headers: ["Cache-Control": "no-store"])
        let (first, disk) = makeLoader()
        _ = try await load(first, "/private.png").get()
        await disk.flush()
        #expect(disk.statistics.count == 0)
        let (second, _) = makeLoader()
        #expect(try await load(second, "/private.png").get().source == .network)
        #expect(server.count(for: "/private.png") == 2)
    }

    @Test func staleDataIsServedWhenTheNetworkFails() async throws {
        defer { cleanUp() }
        let failing = Atomic<Bool>(false)
        server.route("/flaky.png") { _ in
            failing.load(ordering: .relaxed) ? .text("down", status: 503) : .ok(Self.png, headers: ["Cache-Control": "max-age=0", "ETag": "\"a\""])
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/flaky.png").get()
        await disk.flush()
        failing.store(true, ordering: .relaxed)
        let (second, _) = makeLoader()
        let response = try await load(second, "/flaky.png").get()
        #expect(response.source == .disk && response.image.bitmap[0, 0].r == 33)
        // Without the allowance the failure is the caller's.
        let strict = ImageLoader(configuration: .init(retryPolicy: .none, diskCache: DiskCache(directory: directory), staleIfErrorAllowance: nil), cache: ImageCache())
        guard case .failure(.httpStatus(503, _)) = await load(strict, "/flaky.png") else { Issue.record("stale served without allowance"); return }
    }

    /// A stale image is not a stand-in for an answer about the image itself: after a
    /// 404, 403 or 410 on revalidation the load fails and the record is gone, where a
    /// 500 still serves it.
    @Test(arguments: [404, 403, 410])
    func aGoneImageIsNotServedStale(status: Int) async throws {
        defer { cleanUp() }
        let gone = Atomic<Bool>(false)
        server.route("/deleted.png") { _ in
            gone.load(ordering: .relaxed) ? .text("gone", status: status) : .ok(Self.png, headers: ["Cache-Control": "max-age=0", "ETag": "\"a\""])
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/deleted.png").get()
        await disk.flush()
        gone.store(true, ordering: .relaxed)
        let (second, _) = makeLoader()
        guard case .failure(.httpStatus(status, _)) = await load(second, "/deleted.png") else {
            Issue.record("a stale image was served after a \(status)")
            return
        }
        await disk.flush()
        #expect(disk.record(forKey: ImageCacheKey.originalRecordName(server.url("/deleted.png").absoluteString)) == nil)
    }

    /// Bytes that do not decode, or decode only in part (a file cut short whose
    /// length matched), are not kept to fail again from the disk cache: the next load
    /// asks the server, which has mended the image by then.
    @Test(arguments: ["html", "truncated", "too large"])
    func aBodyThatDoesNotDecodeIsNotServedAgain(kind: String) async throws {
        defer { cleanUp() }
        let mended = Atomic<Bool>(false)
        let bad: Data = switch kind {
        case "html": Data("<html><body>Sign in to the Wi-Fi</body></html>".utf8)
        case "truncated": Self.png.prefix(Self.png.count / 2)
        default: pngData(5, width: 300, height: 300)
        }
        server.route("/portal.png") { _ in
            .ok(mended.load(ordering: .relaxed) ? Self.png : bad, headers: ["Cache-Control": "max-age=3600"])
        }
        let (first, disk) = makeLoader()
        let strict = ImageLoader(
            configuration: .init(retryPolicy: .none, maximumPixelCount: 10_000, diskCache: disk), cache: ImageCache())
        switch await load(strict, "/portal.png") {
        case .failure: break
        case .success(let response):
            // What arrived of a file cut short is shown, and said to be partial.
            let isPartial = response.image.isPartial
            #expect(kind == "truncated" && isPartial, "\(kind) decoded")
        }
        _ = first
        await disk.flush()
        #expect(disk.statistics.count == 0)
        mended.store(true, ordering: .relaxed)
        let (second, _) = makeLoader()
        let response = try await load(second, "/portal.png").get()
        #expect(response.source == .network && response.image.bitmap[0, 0].r == 33)
        #expect(server.count(for: "/portal.png") == 2)
    }

    /// `stale-while-revalidate`: within the window a stale image is served at once
    /// and revalidated in the background, whose answer the next load gets.
    @Test func staleWhileRevalidateServesAtOnceAndRevalidatesInTheBackground() async throws {
        defer { cleanUp() }
        let version = Atomic<Int>(1)
        server.route("/swr.png") { request in
            let current = version.load(ordering: .relaxed)
            if request.header("If-None-Match") == "\"v\(current)\"" { return .init(status: 304) }
            return .ok(pngData(UInt8(current * 10)), headers: ["ETag": "\"v\(current)\"", "Cache-Control": "max-age=0, stale-while-revalidate=3600"])
        }
        let (first, disk) = makeLoader()
        #expect(try await load(first, "/swr.png").get().image.bitmap[0, 0].r == 10)
        await disk.flush()
        version.store(2, ordering: .relaxed)
        let (second, _) = makeLoader()
        let stale = try await load(second, "/swr.png").get()
        #expect(stale.source == .disk && stale.image.bitmap[0, 0].r == 10)
        // The background revalidation asks with the stored validator and keeps the
        // new image.
        for _ in 0..<500 where server.count(for: "/swr.png") < 2 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(server.requests(for: "/swr.png").last?.header("If-None-Match") == "\"v1\"")
        for _ in 0..<100 {
            await disk.flush()
            let (third, _) = makeLoader()
            if try await load(third, "/swr.png").get().image.bitmap[0, 0].r == 20 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the revalidated image was never kept")
    }

    /// An answer reached through redirects is kept under the URL asked for only while
    /// every redirect on the way may be reused: a plain 302 sends the next load to the
    /// server again, a 301 (or a 302 with a lifetime of its own) does not.
    @Test(arguments: [
        (301, [String: String](), false),
        (308, [:], false),
        (302, [:], true),
        (307, [:], true),
        (302, ["Cache-Control": "max-age=600"], false),
        (301, ["Cache-Control": "no-store"], true),
    ])
    func aRedirectedAnswerIsKeptOnlyAsTheRedirectAllows(status: Int, headers: [String: String], asksAgain: Bool) async throws {
        defer { cleanUp() }
        server.route("/moved.png") { _ in
            var response = TestServer.Response.redirect(to: "/final.png", status: status)
            response.headers.merge(headers) { a, _ in a }
            return response
        }
        server.route("/final.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
        let (first, disk) = makeLoader()
        #expect(try await load(first, "/moved.png").get().source == .network)
        await disk.flush()
        let (second, _) = makeLoader()
        let response = try await load(second, "/moved.png").get()
        #expect(response.image.bitmap[0, 0].r == 33)
        #expect(server.count(for: "/moved.png") == (asksAgain ? 2 : 1), "\(status) \(headers)")
        #expect(response.source == (asksAgain ? .network : .disk))
    }

    @Test func aNonAuthoritative203IsStoredLikeA200() async throws {
        defer { cleanUp() }
        server.route("/proxied.png") { _ in
            var response = TestServer.Response.ok(Self.png, headers: ["Cache-Control": "max-age=3600"])
            response.status = 203
            return response
        }
        let (first, disk) = makeLoader()
        _ = try await load(first, "/proxied.png").get()
        await disk.flush()
        let (second, _) = makeLoader()
        #expect(try await load(second, "/proxied.png").get().source == .disk)
    }

    @Test func aDamagedFileIsDetectedAndFetchedAgain() async throws {
        defer { cleanUp() }
        server.route("/photo.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
        let (first, disk) = makeLoader()
        _ = try await load(first, "/photo.png").get()
        await disk.flush()
        let file = disk.fileURL(forKey: ImageCacheKey.originalRecordName(server.url("/photo.png").absoluteString))
        var bytes = try Data(contentsOf: file)
        bytes[bytes.count - 20] ^= 0xFF
        try bytes.write(to: file)
        let (second, secondDisk) = makeLoader()
        let response = try await load(second, "/photo.png").get()
        #expect(response.source == .network && response.image.bitmap[0, 0].r == 33)
        #expect(server.count(for: "/photo.png") == 2)
        await secondDisk.flush()
        let (third, _) = makeLoader()
        #expect(try await load(third, "/photo.png").get().source == .disk)
    }

    @Test func anUnwritableCacheDirectoryLeavesLoadsWorking() async throws {
        defer { cleanUp() }
        // A directory under a regular file cannot be made, not even by root.
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let blocker = directory.appendingPathComponent("file")
        try Data("x".utf8).write(to: blocker)
        let disk = DiskCache(directory: blocker.appendingPathComponent("cache"))
        server.route("/a.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
        let (loader, _) = makeLoader(disk: disk)
        #expect(try await load(loader, "/a.png").get().source == .network)
        await disk.flush()
        #expect(disk.statistics.droppedWrites >= 1)
    }

    @Test func noCacheMeansNoDiskEither() async throws {
        defer { cleanUp() }
        server.route("/a.png", data: Self.png, headers: ["Cache-Control": "max-age=3600"])
        let (loader, disk) = makeLoader()
        loader.cache = nil
        _ = try await load(loader, "/a.png").get()
        await disk.flush()
        #expect(disk.statistics.count == 0)
    }

    @Test func processedVariantsAreKeptWhenThePolicySaysSo() async throws {
        defer { cleanUp() }
        server.route("/big.png", data: try ImageEncoders.PNG().encode(Bitmap(width: 400, height: 200, pixels: [UInt8](repeating: 200, count: 400 * 200 * 4))),
                     headers: ["Cache-Control": "max-age=3600"])
        let (first, disk) = makeLoader(policy: .both)
        _ = try await load(first, "/big.png", target: .thumbnail(40)).get()
        await disk.flush()
        #expect(disk.statistics.count == 2)
        let (second, _) = makeLoader(policy: .processed)
        let response = try await load(second, "/big.png", target: .thumbnail(40)).get()
        #expect(response.source == .disk && response.image.width == 40 && response.image.height == 20)
        #expect(server.count(for: "/big.png") == 1)
    }

    /// A photo-like bitmap, 600×400: big enough that its thumbnail is a real resize.
    static let photo = try! ImageEncoders.JPEG(quality: 85).encode(Bitmap(width: 600, height: 400, pixels: (0..<600 * 400 * 4).map {
        $0 % 4 == 3 ? 255 : UInt8(truncatingIfNeeded: ($0 / 4 % 600) / 3 + ($0 / 2400) / 2 + $0 % 4 * 40)
    }))

    @Test func byDefaultThumbnailsComeBackFromDiskAsTheyWereMade() async throws {
        defer { cleanUp() }
        #expect(ImageLoader.Configuration().storagePolicy == .both)
        server.route("/photo.jpg", data: Self.photo, headers: ["Cache-Control": "max-age=3600"])
        let (first, disk) = makeLoader(policy: .both)
        let cold = try await load(first, "/photo.jpg", target: .thumbnail(64)).get()
        await disk.flush()
        // The original and the thumbnail, the latter in the compact lossless form.
        #expect(disk.statistics.count == 2)
        let key = ImageCacheKey(imageKey: server.url("/photo.jpg").absoluteString, targetSize: .thumbnail(64))
        let record = try #require(disk.record(forKey: key.variantRecordName))
        #expect(VariantCodec.isVariant(record.data) && record.data.count < cold.image.bitmap.cost * 3 / 4)

        let (second, _) = makeLoader(policy: .both)
        let warm = try await load(second, "/photo.jpg", target: .thumbnail(64)).get()
        #expect(warm.source == .disk && warm.image.bitmap == cold.image.bitmap && warm.image.format == .jpeg)
        #expect(server.count(for: "/photo.jpg") == 1)
        // Any other size is made from the kept original, still with no request.
        let other = try await load(second, "/photo.jpg", target: .thumbnail(32)).get()
        #expect(other.source == .disk && other.image.width == 32)
        #expect(server.count(for: "/photo.jpg") == 1)
    }

    @Test func aStaleThumbnailRevalidatesWithABodiless304() async throws {
        defer { cleanUp() }
        server.route("/tagged.jpg") { request in
            if request.header("If-None-Match") == "\"v1\"" {
                return .init(status: 304, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
            }
            return .ok(Self.photo, headers: ["ETag": "\"v1\"", "Cache-Control": "no-cache"])
        }
        let (first, disk) = makeLoader(policy: .both)
        let cold = try await load(first, "/tagged.jpg", target: .thumbnail(64)).get()
        await disk.flush()
        let (second, _) = makeLoader(policy: .both)
        let warm = try await load(second, "/tagged.jpg", target: .thumbnail(64)).get()
        #expect(warm.source == .revalidated && warm.image.bitmap == cold.image.bitmap)
        let requests = server.requests(for: "/tagged.jpg")
        #expect(requests.count == 2 && requests.last?.header("If-None-Match") == "\"v1\"")
    }

    @Test func aThumbnailTheServerForbidsStoringIsNotKept() async throws {
        defer { cleanUp() }
        server.route("/private.jpg", data: Self.photo, headers: ["Cache-Control": "no-store"])
        let (first, disk) = makeLoader(policy: .both)
        _ = try await load(first, "/private.jpg", target: .thumbnail(64)).get()
        await disk.flush()
        #expect(disk.statistics.count == 0)
    }
}

/// The disk tier's form for variants: exact, compact, and refusing what is not one.
@Suite struct VariantCodecTests {
    @Test func roundTripsExactly() throws {
        var bitmaps = [Bitmap(width: 1, height: 1, pixels: [0, 0, 0, 255])]
        // Premultiplied colours with every alpha, runs, repeats and jumps.
        var pixels: [UInt8] = []
        var state: UInt32 = 12345
        for i in 0..<(97 * 61) {
            state = state &* 1_103_515_245 &+ 12345
            let a = UInt8(truncatingIfNeeded: i % 7 == 0 ? 255 : Int(state >> 24))
            let base = UInt8(truncatingIfNeeded: i / 40)
            let pick = { (v: UInt8) in UInt8(UInt16(v) * UInt16(a) / 255) }
            pixels += i % 13 < 4 ? [pick(base), pick(base), pick(base), a] : [pick(UInt8(truncatingIfNeeded: state >> 8)), pick(base &+ 3), pick(UInt8(truncatingIfNeeded: state)), a]
        }
        bitmaps.append(Bitmap(width: 97, height: 61, pixels: pixels))
        bitmaps.append(Bitmap(width: 300, height: 2, pixels: [UInt8](repeating: 0, count: 300 * 2 * 4)))
        // Small and middling steps across 0 and 255 in every channel: differences that
        // wrap around within a byte, as both kinds of difference operation store them.
        let steps: [Int] = [-2, -1, 1, 2, 5, -7, 20, -30, 31, -32]
        var wrapping: [UInt8] = []
        var colour = [254, 1, 128]
        for i in 0..<(64 * 16) {
            for c in 0..<3 { colour[c] = (colour[c] + steps[(i + c * 3) % steps.count] + 256) % 256 }
            wrapping += colour.map(UInt8.init) + [255]
        }
        bitmaps.append(Bitmap(width: 64, height: 16, pixels: wrapping))
        bitmaps.append(Bitmap(width: 3, height: 2, bytesPerRow: 20, pixels: (0..<40).map { UInt8($0 % 4 == 3 ? 255 : $0) }))
        for bitmap in bitmaps {
            let data = VariantCodec.encode(DecodedImage(bitmap: bitmap, format: .webp))
            let image = try #require(VariantCodec.decode(data, maximumPixelCount: 1 << 24))
            #expect(image.format == .webp && image.width == bitmap.width && image.height == bitmap.height)
            #expect(image.bitmap.difference(to: bitmap).maximum == 0, "\(bitmap.width)×\(bitmap.height)")
        }
    }

    @Test func refusesWhatIsNotAWholeVariant() throws {
        let data = VariantCodec.encode(DecodedImage(bitmap: Bitmap(width: 40, height: 30, pixels: (0..<4800).map { UInt8($0 % 4 == 3 ? 255 : $0 % 200) }), format: .png))
        for cut in truncations(of: data) { #expect(VariantCodec.decode(cut, maximumPixelCount: 1 << 24) == nil) }
        #expect(VariantCodec.decode(data, maximumPixelCount: 100) == nil)
        #expect(VariantCodec.decode(pngData(3), maximumPixelCount: 1 << 24) == nil)
        var bumped = data
        bumped[bumped.count - 1] = 2
        #expect(VariantCodec.decode(bumped, maximumPixelCount: 1 << 24) == nil)
    }

    /// A bitmap's colour space goes with it: a wide-gamut variant comes back tagged as
    /// it went in, while an sRGB one keeps the form written before colour spaces were
    /// recorded (version 1), so the records already on disk stay readable.
    @Test func keepsTheColourSpace() throws {
        let pixels = (0..<4800).map { UInt8($0 % 4 == 3 ? 255 : $0 % 200) }
        let wide = Bitmap(width: 40, height: 30, pixels: pixels, colorSpace: .displayP3)
        let data = VariantCodec.encode(DecodedImage(bitmap: wide, format: .heic))
        let image = try #require(VariantCodec.decode(data, maximumPixelCount: 1 << 24))
        #expect(image.bitmap == wide && image.format == .heic)
        for cut in truncations(of: data) { #expect(VariantCodec.decode(cut, maximumPixelCount: 1 << 24) == nil) }
        let plain = VariantCodec.encode(DecodedImage(bitmap: wide.tagged(.sRGB), format: .heic))
        #expect(plain[4] == 1 && data[4] == 2)
        #expect(try #require(VariantCodec.decode(plain, maximumPixelCount: 1 << 24)).bitmap.colorSpace == .sRGB)
    }

    /// A run that goes past the last pixel is cut there; the image is still whole.
    @Test func aRunPastTheEndIsCut() throws {
        let header = Array("imgv".utf8) + [1, 3] + Array("png".utf8) + [0, 0, 0, 2, 0, 0, 0, 2]
        let data = Data(header + [0xFE, 9, 8, 7, 0xC0 | 61] + [0, 0, 0, 0, 0, 0, 0, 1])
        let image = try #require(VariantCodec.decode(data, maximumPixelCount: 100))
        #expect(image.bitmap.pixels == Array(repeating: [9, 8, 7, 255] as [UInt8], count: 4).flatMap { $0 })
    }
}
