import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Transfers cut short and resumed with `Range` and `If-Range`, as Nuke resumes
/// downloads: within a load's retries and from the partial body a failed load
/// left, through both HTTP loaders and the test server on 127.0.0.1, which answers
/// ranges itself.
@Suite struct ResumableTransferTests {
    /// A noisy 3000×2300 RGBA PNG, about 21 MB: noise hardly compresses, and any
    /// byte out of place fails the decode or changes a pixel.
    static let large = noisyPNG(width: 3000, height: 2300, variant: 1)
    /// Small ones, for the cases where the size does not matter.
    static let small = noisyPNG(width: 300, height: 200, variant: 2)
    static let other = noisyPNG(width: 300, height: 200, variant: 3)

    static func noisyPNG(width: Int, height: Int, variant: UInt64) -> Data {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        var state = variant
        pixels.withUnsafeMutableBytes { buffer in
            for i in stride(from: 0, to: buffer.count, by: 8) {
                // SplitMix64: fast, and a different image for each variant.
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                z ^= z >> 31
                withUnsafeBytes(of: z) { word in
                    for j in 0..<min(8, buffer.count - i) { buffer[i + j] = word[j] }
                }
            }
        }
        return (try? Pixels.png(Bitmap(width: width, height: height, pixels: pixels))) ?? Data()
    }

    /// How the test server answers one resource.
    struct Resource: Sendable {
        var body: Data
        var etag: String? = "\"v1\""
        var lastModified: String?
        var acceptsRanges = true

        var headers: [String: String] {
            var headers = ["Content-Type": "image/png"]
            if let etag { headers["ETag"] = etag }
            if let lastModified { headers["Last-Modified"] = lastModified }
            if acceptsRanges { headers["Accept-Ranges"] = "bytes" }
            return headers
        }
    }

    /// A route serving `resource()` as a server that honours ranges does: the
    /// first `cuts` answers end after that many bytes (the full length declared),
    /// a `Range` with a matching `If-Range` gets a 206 of the rest (or what
    /// `partial` answers instead), anything else the whole body. Counts the body
    /// bytes sent in `sent`.
    func serve(
        _ path: String, on server: TestServer, sent: Locked<Int>, cuts: [Int],
        resource: @escaping @Sendable () -> Resource,
        partial: (@Sendable (_ start: Int, _ resource: Resource) -> TestServer.Response?)? = nil
    ) {
        let remaining = Locked(cuts)
        server.route(path) { request in
            let resource = resource()
            let body = resource.body
            var start = 0
            if resource.acceptsRanges, let range = request.header("Range"), range.hasPrefix("bytes="),
               let first = Int(range.dropFirst("bytes=".count).prefix { $0 != "-" }),
               let validator = request.header("If-Range"), validator == resource.etag || validator == resource.lastModified {
                if let answer = partial?(first, resource) {
                    sent.withLock { $0 += answer.body.count }
                    return answer
                }
                start = first
            }
            let rest = body.suffix(from: start)
            var headers = resource.headers
            if start > 0 { headers["Content-Range"] = "bytes \(start)-\(body.count - 1)/\(body.count)" }
            let status = start > 0 ? 206 : 200
            if let cut = remaining.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) {
                let piece = rest.prefix(cut)
                sent.withLock { $0 += piece.count }
                var response = TestServer.Response.truncate(declaredLength: rest.count, actualBody: Data(piece))
                response.status = status
                response.headers = headers
                return response
            }
            sent.withLock { $0 += rest.count }
            return TestServer.Response(status: status, headers: headers, body: Data(rest))
        }
    }

    func makeLoader(_ kind: LoaderKind, attempts: Int = 3, partialBodies: PartialBodies? = PartialBodies()) -> ImageLoader {
        // No memory of failures: a later load must reach the server.
        let configuration = ImageLoader.Configuration(
            dataLoader: kind.make(), retryPolicy: RetryPolicy(maximumAttempts: attempts, baseDelay: 0.01, maximumDelay: 0.02),
            recentOriginals: nil, recentFailures: nil, partialBodies: partialBodies)
        return ImageLoader(configuration: configuration, cache: ImageCache())
    }

    func decoded(_ data: Data) throws -> Bitmap {
        try ImageDecoders.Registry.shared.decode(data).bitmap
    }

    @Test(arguments: LoaderKind.all)
    func aTransferCutAtNinetyPercentIsResumedWhereItStopped(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.large
        #expect(png.count > 20_000_000)
        let cut = png.count * 9 / 10
        let sent = Locked(0)
        serve("/large.png", on: server, sent: sent, cuts: [cut]) { Resource(body: png) }

        let response = try await makeLoader(kind).image(for: ImageRequest(url: server.url("/large.png")))
        // Compared first: a failed comparison of 20 MB of pixels would print them.
        let identical = try response.image.bitmap == decoded(png)
        #expect(identical && !response.image.isPartial && response.metrics.attempts == 2)
        let requests = server.requests(for: "/large.png")
        #expect(requests.count == 2)
        #expect(requests.first?.header("Range") == nil)
        #expect(requests.last?.header("Range") == "bytes=\(cut)-")
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        let total = sent.withLock { $0 }
        print("\(kind): \(png.count) bytes cut at \(cut), \(total) bytes sent in all")
        #expect(total <= png.count + 2_500_000)
    }

    @Test(arguments: LoaderKind.all)
    func aChangedResourceStartsOverWithTheNewImage(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let (first, second) = (Self.small, Self.other)
        let served = Locked(0)
        let sent = Locked(0)
        // The first answer is cut; by the retry the image has changed, and with it its ETag.
        serve("/changing.png", on: server, sent: sent, cuts: [first.count / 2]) {
            served.withLock { $0 += 1; return $0 } == 1 ? Resource(body: first) : Resource(body: second, etag: "\"v2\"")
        }
        let response = try await makeLoader(kind).image(for: ImageRequest(url: server.url("/changing.png")))
        #expect(response.image.bitmap == (try decoded(second)))
        let requests = server.requests(for: "/changing.png")
        #expect(requests.count == 2)
        #expect(requests.last?.header("Range") == "bytes=\(first.count / 2)-")
        #expect(requests.last?.header("If-Range") == "\"v1\"")
        #expect(sent.withLock { $0 } == first.count / 2 + second.count)
    }

    @Test(arguments: LoaderKind.all)
    func aServerWithoutRangesIsAskedForTheWholeAgain(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.small
        let sent = Locked(0)
        serve("/plain.png", on: server, sent: sent, cuts: [png.count / 2]) {
            Resource(body: png, acceptsRanges: false)
        }
        // A weak ETag cannot go in If-Range, and nothing else validates.
        serve("/weak.png", on: server, sent: sent, cuts: [png.count / 2]) {
            Resource(body: png, etag: "W/\"v1\"")
        }
        let loader = makeLoader(kind)
        for path in ["/plain.png", "/weak.png"] {
            let response = try await loader.image(for: ImageRequest(url: server.url(path)))
            #expect(response.image.bitmap == (try decoded(png)))
            let requests = server.requests(for: path)
            #expect(requests.count == 2, "\(path)")
            #expect(requests.allSatisfy { $0.header("Range") == nil && $0.header("If-Range") == nil }, "\(path)")
        }
        #expect(sent.withLock { $0 } == 2 * (png.count / 2 + png.count))
    }

    @Test(arguments: LoaderKind.all)
    func aRangeThatDoesNotFitStartsOverWithoutOne(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.small
        let sent = Locked(0)
        let date = "Tue, 01 Dec 2026 10:00:00 GMT"
        // A 206 from the wrong offset, and a 416: both mean asking for the whole.
        serve("/shifted.png", on: server, sent: sent, cuts: [png.count / 2]) { Resource(body: png) } partial: { start, resource in
            var headers = resource.headers
            headers["Content-Range"] = "bytes \(start - 10)-\(png.count - 1)/\(png.count)"
            return TestServer.Response(status: 206, headers: headers, body: Data(png.suffix(from: start - 10)))
        }
        // Validated by its date when the ETag is weak.
        serve("/refused.png", on: server, sent: sent, cuts: [png.count / 2]) {
            Resource(body: png, etag: "W/\"v1\"", lastModified: date)
        } partial: { _, resource in
            var headers = resource.headers
            headers["Content-Range"] = "bytes */\(png.count)"
            return TestServer.Response(status: 416, headers: headers)
        }
        let loader = makeLoader(kind)
        for (path, validator) in [("/shifted.png", "\"v1\""), ("/refused.png", date)] {
            let response = try await loader.image(for: ImageRequest(url: server.url(path)))
            #expect(response.image.bitmap == (try decoded(png)), "\(path)")
            let requests = server.requests(for: path)
            #expect(requests.map { $0.header("Range") } == [nil, "bytes=\(png.count / 2)-", nil], "\(path)")
            #expect(requests[1].header("If-Range") == validator, "\(path)")
            // Asked again at once: the range that did not fit is no failed attempt.
            #expect(response.metrics.attempts == 2, "\(path)")
        }
    }

    @Test(arguments: LoaderKind.all)
    func aLaterLoadResumesFromWhatAFailedOneKept(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.small
        let cut = png.count * 9 / 10
        let sent = Locked(0)
        let further = cut + (png.count - cut) * 9 / 10
        serve("/kept.png", on: server, sent: sent, cuts: [cut, further - cut]) { Resource(body: png) }
        let partialBodies = PartialBodies()
        let loader = makeLoader(kind, attempts: 1, partialBodies: partialBodies)
        let url = server.url("/kept.png")

        // No retries: the load fails, and what arrived is kept.
        await #expect(throws: ImagoError.self) { try await loader.image(for: ImageRequest(url: url)) }
        #expect(partialBodies.count == 1 && partialBodies.totalBytes == cut)

        // The next load asks for the rest only and is cut again, a little further on.
        await #expect(throws: ImagoError.self) { try await loader.image(for: ImageRequest(url: url)) }
        #expect(partialBodies.count == 1 && partialBodies.totalBytes == further)

        // The third gets the rest; nothing is kept once the image is whole.
        let response = try await loader.image(for: ImageRequest(url: url))
        #expect(response.image.bitmap == (try decoded(png)))
        #expect(server.requests(for: "/kept.png").map { $0.header("Range") } == [nil, "bytes=\(cut)-", "bytes=\(further)-"])
        #expect(sent.withLock { $0 } == png.count)
        #expect(partialBodies.count == 0)
    }

    @Test func clearingEverythingForgetsTheBodiesKept() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.small
        serve("/cleared.png", on: server, sent: Locked(0), cuts: [png.count / 2]) { Resource(body: png) }
        let partialBodies = PartialBodies()
        let loader = makeLoader(LoaderKind.all[0], attempts: 1, partialBodies: partialBodies)
        let url = server.url("/cleared.png")
        await #expect(throws: ImagoError.self) { try await loader.image(for: ImageRequest(url: url)) }
        #expect(partialBodies.count == 1)
        try await loader.removeAllCachedData()
        #expect(partialBodies.count == 0)
        _ = try await loader.image(for: ImageRequest(url: url))
        #expect(server.requests(for: "/cleared.png").map { $0.header("Range") } == [nil, nil])
    }

    /// Bytes of a representation the server chose by a request field (`Vary`) are
    /// continued only for the same field: with `Last-Modified` in `If-Range`, the
    /// same for every representation, the rest of another would be joined on.
    @Test func theBytesOfAChosenRepresentationAreContinuedOnlyForItsFields() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let lastModified = "Tue, 01 Dec 2026 10:00:00 GMT"
        let answered = Locked(0)
        server.route("/chosen.png") { request in
            let body = request.header("Foo") == "1" ? Self.small : Self.other
            let headers = ["Content-Type": "image/png", "Accept-Ranges": "bytes", "Last-Modified": lastModified, "Vary": "Foo"]
            if let range = request.header("Range"), request.header("If-Range") == lastModified,
               let first = Int(range.dropFirst("bytes=".count).prefix { $0 != "-" }) {
                var rangeHeaders = headers
                rangeHeaders["Content-Range"] = "bytes \(first)-\(body.count - 1)/\(body.count)"
                return TestServer.Response(status: 206, headers: rangeHeaders, body: Data(body.suffix(from: first)))
            }
            guard answered.withLock({ $0 += 1; return $0 }) > 1 else {
                var cut = TestServer.Response.truncate(declaredLength: body.count, actualBody: Data(body.prefix(body.count / 2)))
                cut.headers = headers
                return cut
            }
            return TestServer.Response(status: 200, headers: headers, body: body)
        }
        let partialBodies = PartialBodies()
        let loader = makeLoader(LoaderKind.all[0], attempts: 1, partialBodies: partialBodies)
        func request(_ foo: String) -> ImageRequest {
            var urlRequest = URLRequest(url: server.url("/chosen.png"))
            urlRequest.setValue(foo, forHTTPHeaderField: "Foo")
            return ImageRequest(urlRequest: urlRequest)
        }
        await #expect(throws: ImagoError.self) { try await loader.image(for: request("1")) }
        #expect(partialBodies.count == 1)
        let other = try await loader.image(for: request("2"))
        #expect(other.image.bitmap == (try decoded(Self.other)))
        #expect(server.requests(for: "/chosen.png").map { $0.header("Range") } == [nil, nil])
    }

    @Test(arguments: LoaderKind.all)
    func aPartialImageShownIsFinishedByTheNextLoad(_ kind: LoaderKind) async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = Self.small
        let sent = Locked(0)
        serve("/shown.png", on: server, sent: sent, cuts: [png.count / 2]) { Resource(body: png) }
        let partialBodies = PartialBodies()
        let loader = makeLoader(kind, partialBodies: partialBodies)
        let url = server.url("/shown.png")

        let partial = try await loader.image(for: ImageRequest(url: url, options: .allowsPartialImages))
        #expect(partial.image.isPartial && partialBodies.count == 1)
        let whole = try await loader.image(for: ImageRequest(url: url, options: .allowsPartialImages))
        let expected = try decoded(png)
        #expect(!whole.image.isPartial && whole.image.bitmap == expected)
        #expect(sent.withLock { $0 } == png.count)
        #expect(partialBodies.count == 0)
    }
}
