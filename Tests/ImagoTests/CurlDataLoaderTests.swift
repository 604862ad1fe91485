import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What the network loaders must do beyond the shared data-loading tests: refuse
/// header injection, decompress, load IPv6 literals, and (the curl loader) keep
/// connections open across many origins within a budget set by the descriptor limit.
extension DataLoadingTests {
    /// A CR or LF in a header would end the field on the wire and smuggle whatever
    /// follows to the server as fields of its own.
    @Test(arguments: LoaderKind.all, [
        ("X-Note", "fine\r\nX-Injected: yes"),
        ("X-Note", "fine\nX-Injected: yes"),
        ("X-Bad\r\nX-Injected", "yes"),
        ("X Bad", "yes"),
    ])
    func headersThatWouldSplitTheRequestAreRefusedBeforeSending(_ kind: LoaderKind, _ field: (name: String, value: String)) async throws {
        try await Self.withServer(kind) { server, loader in
            server.route("/h", data: Data("ok".utf8))
            var request = URLRequest(url: server.url("/h"))
            request.setValue(field.value, forHTTPHeaderField: field.name)
            // Foundation may tidy a header itself; the test is whether the loader
            // refuses what it is actually given.
            guard let given = request.allHTTPHeaderFields, given.contains(where: { key, value in
                key.contains(where: { $0 == "\r" || $0 == "\n" || $0 == " " }) || value.contains(where: { $0 == "\r" || $0 == "\n" })
            }) else { return }
            let result: Result<DataResponse, ImagoError>
            do throws(ImagoError) {
                result = .success(try await loader.loadData(for: request, options: DataLoadingOptions()) { _ in })
            } catch {
                result = .failure(error)
            }
            guard case .failure(.invalidRequest(_, let reason)) = result else {
                Issue.record("expected a refusal, got \(result)")
                return
            }
            #expect(reason.contains("not sent"), "\(reason)")
            #expect(result.error.map { RetryPolicy.default.isRetryable($0) } == false)
            #expect(server.connectionsAccepted == 0)
        }
    }

    @Test(arguments: LoaderKind.all) func gzipBodiesArriveDecompressed(_ kind: LoaderKind) async throws {
        try await Self.withServer(kind) { server, loader in
            let body = Self.bytes(30_000)
            server.route("/z") { request in
                guard request.header("accept-encoding")?.contains("gzip") == true else { return .ok(body) }
                return .ok(Self.gzipStored(body), headers: ["Content-Encoding": "gzip"])
            }
            let reports = Locked<[Int64?]>([])
            let response = try await Self.load(loader, server.url("/z")) { _, expected in
                reports.withLock { $0.append(expected) }
            }.get()
            #expect(response.data == body)
            #expect(server.requests(for: "/z").first?.header("accept-encoding")?.contains("gzip") == true)
            // The declared length is the compressed one, so no total is promised.
            #expect(reports.withLock { $0.allSatisfy { $0 == nil } })
        }
    }

    /// A 304 declares the stored resource's length and carries no body: a length
    /// over the limit is no reason to refuse it.
    @Test(arguments: LoaderKind.all) func notModifiedWithALargeDeclaredLengthIsNotTooLarge(_ kind: LoaderKind) async throws {
        try await Self.withServer(kind, .init(maximumResponseSize: 1000)) { server, loader in
            server.route("/same") { _ in
                .raw(Data("HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 500000\r\nConnection: close\r\n\r\n".utf8))
            }
            let response = try await Self.load(loader, server.url("/same"), headers: ["If-None-Match": "\"v1\""]).get()
            #expect(response.statusCode == 304)
            #expect(response.data.isEmpty)
        }
    }

    /// gzip of `data` in stored (uncompressed) deflate blocks: a valid gzip stream
    /// without a compressor.
    static func gzipStored(_ data: Data) -> Data {
        var out = Data([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF])
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            let last = offset + count == data.count
            out.append(last ? 1 : 0)
            out.append(contentsOf: [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)])
            out.append(data[offset..<offset + count])
            offset += count
        } while offset < data.count
        let crc = data.withUnsafeBytes { CRC32.update(0, $0) }
        for value in [crc, UInt32(truncatingIfNeeded: data.count)] {
            withUnsafeBytes(of: value.littleEndian) { out.append(contentsOf: $0) }
        }
        return out
    }
}

#if os(Linux)
extension DataLoadingTests {
    /// URLSession on Linux refuses IPv6 literal URLs with `.badURL`; the URLSession
    /// loader hands them to the curl loader. The literal here is 127.0.0.1 written as
    /// an IPv4-mapped IPv6 address, so the test server (on 127.0.0.1 only) answers
    /// over an IPv6 socket.
    @Test(arguments: LoaderKind.all)
    func ipv6LiteralURLsLoad(_ kind: LoaderKind) async throws {
        try await Self.withServer(kind) { server, loader in
            server.route("/six", data: Data("v6".utf8))
            let url = try #require(URL(string: "http://[::ffff:127.0.0.1]:\(server.port)/six"))
            let response = try await Self.load(loader, url).get()
            #expect(response.statusCode == 200)
            #expect(response.data == Data("v6".utf8))
            #expect(response.url == url)
        }
    }

    /// Trailer fields after a chunked body end neither the body nor the response.
    /// (URLSession on Linux takes them for a response of their own and ends the
    /// process: "Transfer completed, but there's no response".)
    @Test func trailersAfterAChunkedBodyKeepTheBody() async throws {
        try await Self.withServer(.curl) { server, loader in
            server.route("/t") { _ in
                .raw(Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 11\r\n\r\n".utf8))
            }
            let response = try await Self.load(loader, server.url("/t")).get()
            #expect(response.statusCode == 200)
            #expect(response.data == Data("hello world".utf8))
        }
    }

    /// Loads spread over eight origins keep their connections: each origin's idle
    /// connections wait in libcurl's cache for the next load to it, instead of being
    /// closed to make room for another origin's.
    @Test func connectionsAreReusedAcrossManyOrigins() async throws {
        let servers = (0..<8).map { _ in TestServer() }
        for server in servers {
            try server.start()
            server.route("/img", data: Self.bytes(2000))
        }
        defer { servers.forEach { $0.stop() } }
        let loader = CurlDataLoader(configuration: .init(httpMaximumConnectionsPerHost: 2))
        let urls = (0..<400).map { servers[$0 % servers.count].url("/img?n=\($0)") }
        let failures = await withTimeLimit(120) {
            await withTaskGroup(of: Bool.self) { group in
                var next = 0, failed = 0
                for _ in 0..<16 {
                    let url = urls[next]
                    next += 1
                    group.addTask { (try? await loader.loadData(for: URLRequest(url: url), options: DataLoadingOptions()) { _ in })?.data.count == 2000 }
                }
                while let ok = await group.next() {
                    if !ok { failed += 1 }
                    if next < urls.count {
                        let url = urls[next]
                        next += 1
                        group.addTask { (try? await loader.loadData(for: URLRequest(url: url), options: DataLoadingOptions()) { _ in })?.data.count == 2000 }
                    }
                }
                return failed
            }
        }
        #expect(failures == 0)
        let accepted = servers.map(\.connectionsAccepted)
        // Two per origin at most; a few more if a server closed an idle one.
        #expect(accepted.reduce(0, +) <= servers.count * 2 + 4, "connections per origin: \(accepted)")
    }

    /// A response's head as libcurl hands it over, line by line: the status is the
    /// second word of the status line, however many spaces stand around it; field
    /// names come lower-cased, names and values without the spaces and tabs around
    /// them.
    @Test func theHeadIsReadFromItsBytes() async throws {
        try await Self.withServer(.curl) { server, loader in
            server.route("/h") { _ in
                .raw(Data("HTTP/1.1   203   Odd  Reason\r\nX-MiXeD-Case :\t a b \t\r\nÉtrange: é\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8))
            }
            let response = try await Self.load(loader, server.url("/h")).get()
            #expect(response.statusCode == 203)
            #expect(response.headers["x-mixed-case"] == "a b")
            #expect(response.headers["étrange"] == "é")
            #expect(response.data == Data("ok".utf8))
        }
        // Against the reading of the line as words: the same code for every line.
        for line in ["HTTP/1.1 304 Not Modified", "HTTP/2 200", "HTTP/1.1  404  x", "HTTP/1.1 abc", "HTTP/1.1",
                     "HTTP/1.1 ", "HTTP/1.1 +201 x", "HTTP/1.1 -1", "HTTP/1.1 20x", "HTTP/1.1 9999999999 big",
                     "HTTP/1.1 0200", "HTTP/1.1\t200"] {
            let words = line.split(separator: " ", maxSplits: 2)
            let expected = words.count > 1 ? Int(words[1]) ?? 0 : 0
            let read = Array(line.utf8).withUnsafeBytes { CurlTransfer.statusCode(of: $0[...]) }
            #expect(read == expected, "\(line)")
        }
    }

    @Test func theConnectionBudgetLeavesDescriptorsForTheRestOfTheProcess() {
        #expect(CurlDataLoader.connectionBudget(descriptorLimit: 64, open: 10) == 19)
        #expect(CurlDataLoader.connectionBudget(descriptorLimit: 1024, open: 12) == 378)
        #expect(CurlDataLoader.connectionBudget(descriptorLimit: 1 << 20, open: 12) == 512)
        #expect(CurlDataLoader.connectionBudget(descriptorLimit: 20, open: 10) == 1)
        #expect(CurlDataLoader().connectionLimit >= 1)
        #expect(CurlDataLoader(maximumConnections: 3).connectionLimit == 3)
    }
}
#endif
