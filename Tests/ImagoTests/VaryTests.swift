import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// A response the server chose by the request's fields (`Vary`) answers later only
/// requests that send the same in them (RFC 9111 §4.1), in every tier that keeps
/// originals: the disk, its thumbnails, the recent originals. Against the test
/// server on 127.0.0.1, which picks a picture by the `Foo` field, and a real disk
/// cache.
@Suite struct VaryTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-vary-\(UUID())")

    /// The picture's red channel for each value of `Foo`, nil for none sent.
    static func red(_ foo: String?) -> UInt8 {
        switch foo { case "1": 10; case "2": 200; default: 50 }
    }

    init() throws {
        try server.start()
        server.route("/chosen.png") { request in
            .ok(pngData(Self.red(request.header("Foo")), width: 32, height: 32),
                headers: ["Cache-Control": "max-age=3600", "Vary": "Foo"])
        }
    }

    /// Loads with a loader of its own on the shared disk directory, as a restarted
    /// app would (the memory tier and the loads in flight go by the image key, so a
    /// loader's memory tier would answer another request's fields as it is), and
    /// waits until what it keeps is on disk.
    func loadAfresh(foo: String?, target: TargetSize? = nil, path: String = "/chosen.png") async throws -> ImageResponse {
        let disk = DiskCache(directory: directory)
        let response = try await load(ImageLoader(configuration: .init(retryPolicy: .none, diskCache: disk), cache: ImageCache()),
                                      foo: foo, target: target, path: path)
        await disk.flush()
        return response
    }

    func load(_ loader: ImageLoader, foo: String?, target: TargetSize? = nil, path: String = "/chosen.png") async throws -> ImageResponse {
        var urlRequest = URLRequest(url: server.url(path))
        if let foo { urlRequest.setValue(foo, forHTTPHeaderField: "Foo") }
        let task = loader.task(with: ImageRequest(urlRequest: urlRequest, targetSize: target))
        return try #require(await withTimeLimit(30) { await task.value }).get()
    }

    func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: directory)
    }

    @Test func theDiskAnswersOnlyTheFieldsThatChoseWhatItKeeps() async throws {
        defer { cleanUp() }
        #expect(try await loadAfresh(foo: "1").source == .network)
        // The same field: the disk answers. Another value, or none: the server is
        // asked, and its answer replaces the record.
        let same = try await loadAfresh(foo: "1")
        #expect(same.source == .disk && same.image.bitmap[0, 0].r == 10)
        let other = try await loadAfresh(foo: "2")
        #expect(other.source == .network && other.image.bitmap[0, 0].r == 200)
        let kept = try await loadAfresh(foo: "2")
        #expect(kept.source == .disk && kept.image.bitmap[0, 0].r == 200)
        let none = try await loadAfresh(foo: nil)
        #expect(none.source == .network && none.image.bitmap[0, 0].r == 50)
        #expect(server.count(for: "/chosen.png") == 3)
    }

    /// A stale record is confirmed only for the fields that chose it: another
    /// request's record is not this one's to revalidate.
    @Test func onlyTheFieldsThatChoseARecordRevalidateIt() async throws {
        defer { cleanUp() }
        server.route("/confirmed.png") { request in
            let etag = "\"v\(request.header("Foo") ?? "-")\""
            let headers = ["Cache-Control": "no-cache", "Vary": "Foo", "ETag": etag]
            if request.header("If-None-Match") == etag { return .init(status: 304, headers: headers) }
            return .ok(pngData(Self.red(request.header("Foo"))), headers: headers)
        }
        var sources: [ImageResponse.Source] = []
        for foo in ["1", "2", "2"] { sources.append(try await loadAfresh(foo: foo, path: "/confirmed.png").source) }
        #expect(sources == [.network, .network, .revalidated])
        #expect(server.requests(for: "/confirmed.png").map { $0.header("If-None-Match") } == [nil, nil, "\"v2\""])
    }

    /// The fields every load of a loader sends alike, those the pipeline prepares
    /// (`Accept`) and those the HTTP loader adds beneath them (`Accept-Encoding`,
    /// `User-Agent`), select the stored response for the next load: what CDNs name
    /// on most images keeps them cached.
    @Test func fieldsEveryLoadSendsAlikeKeepTheRecordInUse() async throws {
        defer { cleanUp() }
        server.route("/negotiated.png") { _ in
            .ok(pngData(90), headers: ["Cache-Control": "max-age=3600", "Vary": "Accept, Accept-Encoding, User-Agent, Origin"])
        }
        var sources: [ImageResponse.Source] = []
        for _ in 0..<2 { sources.append(try await loadAfresh(foo: nil, path: "/negotiated.png").source) }
        #expect(sources == [.network, .disk])
        let sent = try #require(server.requests(for: "/negotiated.png").first)
        #expect(sent.header("Accept") != nil && sent.header("Accept-Encoding") != nil && sent.header("User-Agent") != nil)
    }

    /// A thumbnail made from a chosen original is chosen with it.
    @Test func storedThumbnailsAnswerOnlyTheFieldsOfTheirOriginal() async throws {
        defer { cleanUp() }
        let size = TargetSize(width: 8, height: 8)
        #expect(try await loadAfresh(foo: "1", target: size).source == .network)
        let same = try await loadAfresh(foo: "1", target: size)
        #expect(same.source == .disk && same.image.width == 8 && same.image.bitmap[0, 0].r == 10)
        let other = try await loadAfresh(foo: "2", target: size)
        #expect(other.source == .network && other.image.width == 8 && other.image.bitmap[0, 0].r == 200)
        #expect(server.count(for: "/chosen.png") == 2)
    }

    /// The bytes of a recent load, kept in memory for the repeats of its URL, answer
    /// only a repeat that sends the same fields.
    @Test func recentOriginalsAnswerOnlyTheFieldsThatChoseThem() async throws {
        defer { cleanUp() }
        let loader = ImageLoader(configuration: .init(retryPolicy: .none), cache: ImageCache())
        #expect(try await load(loader, foo: "1").source == .network)
        // Another size misses the memory tier and finds the recent original.
        let same = try await load(loader, foo: "1", target: TargetSize(width: 8, height: 8))
        #expect(same.source == .recent && same.image.bitmap[0, 0].r == 10)
        let other = try await load(loader, foo: "2", target: TargetSize(width: 16, height: 16))
        #expect(other.source == .network && other.image.bitmap[0, 0].r == 200)
    }

    /// The fields a loader's configuration adds select as a request's own do.
    @Test func theConfigurationsFieldsSelectToo() async throws {
        defer { cleanUp() }
        func loader(_ foo: String) -> ImageLoader {
            var configuration = ImageLoader.Configuration(retryPolicy: .none, diskCache: DiskCache(directory: directory))
            configuration.headers = ["Foo": foo]
            return ImageLoader(configuration: configuration, cache: ImageCache())
        }
        let url = server.url("/chosen.png")
        let first = loader("1")
        #expect(try await first.image(for: ImageRequest(url: url)).source == .network)
        await first.configuration.diskCache?.flush()
        #expect(try await loader("1").image(for: ImageRequest(url: url)).source == .disk)
        let other = try await loader("2").image(for: ImageRequest(url: url))
        #expect(other.source == .network && other.image.bitmap[0, 0].r == 200)
    }

    /// What is written down of a request: each field `Vary` names once, its list
    /// members without the whitespace around them, a field sent empty apart from one
    /// not sent; and it survives the stored form.
    @Test func theSelectionIsWrittenDownAndKept() throws {
        let url = URL(string: "https://images.example/a.png")!
        func fields(_ values: [String: String]) -> RequestFields {
            RequestFields { Dictionary(uniqueKeysWithValues: values.map { ($0.key.lowercased(), $0.value) }) }
        }
        var metadata = try #require(HTTPCacheMetadata(
            url: url, statusCode: 200, headers: ["cache-control": "max-age=60", "vary": "Foo, bar ,foo"], storedAt: Date()))
        #expect(metadata.selectingNames == ["foo", "bar"])
        metadata.select(by: fields(["Foo": "1,2", "Bar": ""]))
        #expect(metadata.isSelected(by: fields(["foo": " 1 , 2 ", "BAR": ""])))
        #expect(!metadata.isSelected(by: fields(["foo": "1,2"])))
        #expect(!metadata.isSelected(by: fields(["foo": "1", "bar": ""])))
        #expect(!metadata.isSelected(by: .none))
        let read = try #require(HTTPCacheMetadata(encoded: metadata.encoded()))
        #expect(read == metadata && read.isSelected(by: fields(["foo": "1,2", "bar": ""])))

        // Without Vary any request is answered; a record kept before requests were
        // written down answers none its Vary selects by.
        var plain = try #require(HTTPCacheMetadata(url: url, statusCode: 200, headers: ["cache-control": "max-age=60"], storedAt: Date()))
        plain.select(by: fields(["foo": "9"]))
        #expect(plain.selection == nil && plain.isSelected(by: fields(["foo": "1"])))
        var older = metadata
        older.selection = nil
        #expect(!older.isSelected(by: fields(["foo": "1,2", "bar": ""])) && !older.isSelected(by: .none))
        // A server naming thousands of fields costs one preparation of the request
        // a question, not one a field.
        let made = Locked(0)
        let counted = RequestFields { made.withLock { $0 += 1 }; return ["f7": "x"] }
        let names = (0..<5_000).map { "F\($0)" }.joined(separator: ", ")
        var many = try #require(HTTPCacheMetadata(
            url: url, statusCode: 200, headers: ["cache-control": "max-age=60", "vary": names], storedAt: Date()))
        many.select(by: counted)
        #expect(many.isSelected(by: counted) && !many.isSelected(by: .none) && made.withLock { $0 } == 2)
        // A 304 that names other fields leaves nothing written down for them.
        #expect(metadata.updated(with: ["vary": "Baz"], at: Date()).selection == nil)
        #expect(metadata.updated(with: ["cache-control": "max-age=120"], at: Date()).selection == metadata.selection)
    }
}
