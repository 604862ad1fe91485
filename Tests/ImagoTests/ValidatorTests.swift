import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The validators a server gives (ETag, Last-Modified), believed only as far as they
/// hold: a 304 about another representation, a range of another, a validator that
/// cannot be sent back. Against the test server on 127.0.0.1, through both HTTP
/// loaders and a real disk cache.
@Suite struct ValidatorTests {
    static let red = pngData(33)
    static let green = pngData(77)
    static let lastModified = "Tue, 01 Dec 2026 10:00:00 GMT"
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-validators-\(UUID())")

    init() throws {
        try server.start()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    func loader(_ kind: LoaderKind, disk: DiskCache, partialBodies: PartialBodies? = nil) -> ImageLoader {
        ImageLoader(
            configuration: .init(
                dataLoader: kind.make(), retryPolicy: RetryPolicy(maximumAttempts: 3, baseDelay: 0.01, maximumDelay: 0.02),
                diskCache: disk, recentOriginals: nil, recentFailures: nil, partialBodies: partialBodies),
            cache: ImageCache())
    }

    /// A handler many servers have: a 304 when `If-Modified-Since` matches or the
    /// ETag does, every answer with the current ETag. When the image changes but its
    /// date does not, the 304 carries the new ETag; applied to the kept image, it
    /// would confirm the old one for good (its next revalidation sends the new ETag).
    @Test(arguments: LoaderKind.all)
    func a304NamingAnotherETagIsNotAppliedToTheKeptImage(_ kind: LoaderKind) async throws {
        defer { cleanUp() }
        let version = Locked(1)
        server.route("/photo.png") { request in
            let current = version.withLock { $0 }
            let headers = ["ETag": "\"v\(current)\"", "Last-Modified": Self.lastModified, "Cache-Control": "no-cache"]
            if request.header("If-Modified-Since") == Self.lastModified || request.header("If-None-Match") == "\"v\(current)\"" {
                return .init(status: 304, headers: headers)
            }
            return .ok(current == 1 ? Self.red : Self.green, headers: headers)
        }
        let url = server.url("/photo.png")
        let disk = DiskCache(directory: directory)
        #expect(try await loader(kind, disk: disk).image(for: ImageRequest(url: url)).image.bitmap[0, 0].r == 33)
        await disk.flush()

        version.withLock { $0 = 2 }
        let changed = try await loader(kind, disk: disk).image(for: ImageRequest(url: url))
        #expect(changed.image.bitmap[0, 0].r == 77 && changed.source == .network)
        // Asked again at once, without conditions: no failed attempt.
        #expect(changed.metrics.attempts == 1)
        let requests = server.requests(for: "/photo.png")
        #expect(requests.count == 3 && requests[2].header("If-None-Match") == nil && requests[2].header("If-Modified-Since") == nil)
        await disk.flush()

        // The new image is kept with its own ETag, which the next 304 confirms.
        let confirmed = try await loader(kind, disk: disk).image(for: ImageRequest(url: url))
        #expect(confirmed.image.bitmap[0, 0].r == 77 && confirmed.source == .revalidated)
        #expect(server.requests(for: "/photo.png").last?.header("If-None-Match") == "\"v2\"")
    }

    /// An ETag with a bare CR (which libcurl passes on) cannot go back in
    /// `If-None-Match`: kept as a validator, it failed every later load of the URL
    /// before any request, and nothing but clearing the cache mended it. It is no
    /// validator: the stale image is fetched again, unconditionally.
    @Test(arguments: LoaderKind.all)
    func anETagThatCannotBeSentBackIsNoValidator(_ kind: LoaderKind) async throws {
        defer { cleanUp() }
        server.route("/photo.png", data: Self.red, headers: ["ETag": "\"a\rb\"", "Cache-Control": "max-age=0"])
        let url = server.url("/photo.png")
        let disk = DiskCache(directory: directory)
        for _ in 0..<3 {
            #expect(try await loader(kind, disk: disk).image(for: ImageRequest(url: url)).image.bitmap[0, 0].r == 33)
            await disk.flush()
        }
        let requests = server.requests(for: "/photo.png")
        #expect(requests.count == 3 && requests.allSatisfy { $0.header("If-None-Match") == nil })
    }

    /// A server that ignores `If-Range` answers the rest of a changed image with a
    /// range of the new one, under its new ETag; joined onto the first half of the old
    /// one it is neither (a PNG that fails, or a picture of two). The rest is taken
    /// only under the validator the first half came with; otherwise the whole again.
    @Test(arguments: LoaderKind.all)
    func aRangeOfAnotherRepresentationIsNotJoined(_ kind: LoaderKind) async throws {
        defer { cleanUp() }
        let first = ResumableTransferTests.small, second = ResumableTransferTests.other
        let half = first.count / 2
        let answered = Locked(0)
        server.route("/changing.png") { request in
            let count = answered.withLock { count -> Int in
                count += 1
                return count
            }
            var headers = ["Accept-Ranges": "bytes", "ETag": count == 1 ? "\"n1\"" : "\"n2\""]
            if count == 1 {
                var response = TestServer.Response.truncate(declaredLength: first.count, actualBody: first.prefix(half))
                response.headers = headers
                return response
            }
            if let range = request.header("Range"), let start = Int(range.dropFirst("bytes=".count).prefix { $0 != "-" }) {
                headers["Content-Range"] = "bytes \(start)-\(second.count - 1)/\(second.count)"
                return TestServer.Response(status: 206, headers: headers, body: Data(second.suffix(from: start)))
            }
            return .ok(second, headers: headers)
        }
        let response = try await loader(kind, disk: DiskCache(directory: directory), partialBodies: PartialBodies())
            .image(for: ImageRequest(url: server.url("/changing.png")))
        #expect(response.image.bitmap == (try ImageDecoders.Registry.shared.decode(second).bitmap))
        let requests = server.requests(for: "/changing.png")
        #expect(requests.map { $0.header("Range") } == [nil, "bytes=\(half)-", nil])
        #expect(requests[1].header("If-Range") == "\"n1\"")
    }

    /// A Last-Modified that is not a date as the grammar spells it cannot stand in
    /// `If-Range`, which is compared byte for byte: a transfer cut short under it is
    /// tried again whole, never as a range with no `If-Range` (of whatever the
    /// server holds by then).
    @Test(arguments: LoaderKind.all)
    func aDateThatCannotBeSentBackResumesNothing(_ kind: LoaderKind) async throws {
        defer { cleanUp() }
        let png = ResumableTransferTests.small
        let answered = Locked(0)
        server.route("/dated.png") { _ in
            let headers = ["Accept-Ranges": "bytes", "Last-Modified": Self.lastModified + "\rX"]
            guard answered.withLock({ count -> Int in
                count += 1
                return count
            }) > 1 else {
                var response = TestServer.Response.truncate(declaredLength: png.count, actualBody: png.prefix(png.count / 2))
                response.headers = headers
                return response
            }
            return .ok(png, headers: headers)
        }
        let response = try await loader(kind, disk: DiskCache(directory: directory), partialBodies: PartialBodies())
            .image(for: ImageRequest(url: server.url("/dated.png")))
        #expect(response.image.bitmap == (try ImageDecoders.Registry.shared.decode(png).bitmap))
        #expect(server.requests(for: "/dated.png").allSatisfy { $0.header("Range") == nil && $0.header("If-Range") == nil })
    }
}
