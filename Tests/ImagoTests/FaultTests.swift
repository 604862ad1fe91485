import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// One bad input or fault a server can give, and what a load of it must end in.
struct Fault: Sendable, CustomTestStringConvertible {
    let name: String
    /// What the server answers at `/fault`; nil for faults found before any request.
    let response: (@Sendable (TestServer) -> TestServer.Response)?
    /// Requests the server sees: 1, or more where the policy retries.
    let attempts: Int
    /// Words the error's message must hold.
    let words: String
    /// The whole load's bound: short for the faults that only a deadline ends, long
    /// for the rest, which must end on their own however busy the machine.
    var timeout: Double { words.hasPrefix("not loaded within") ? 3 : 60 }
    let matches: @Sendable (ImagoError) -> Bool

    var testDescription: String { name }

    /// A photo cut off inside its header, served with that length: cut later, what
    /// arrived would decode as a partial image.
    static let truncatedJPEG = (try? Data(contentsOf: URL(fileURLWithPath: "Samples/progressive.jpg"))).map { $0.prefix(60) } ?? Data()

    /// 1,100 × 1,000 pixels, over the tests' limit of a million.
    static let overLimit = pngData(9, width: 1100, height: 1000)

    /// 64 MB of zeros, gzip-compressed to about 64 KB.
    static let gzipBomb: Data = {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "head -c 67108864 /dev/zero | gzip -c"]
        let pipe = Pipe()
        process.standardOutput = pipe
        try? process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return data
    }()

    static let all: [Fault] = [
        Fault(name: "an unsupported scheme", response: nil, attempts: 0, words: "is not a URL the data loader takes (Imago's own takes http and https") {
            if case .invalidURL = $0 { true } else { false }
        },
        Fault(name: "a header smuggling a line", response: nil, attempts: 0, words: "holds a line break") {
            if case .invalidRequest = $0 { true } else { false }
        },
        Fault(name: "HTTP 404", response: { _ in .text("gone", status: 404) }, attempts: 1, words: "HTTP 404") {
            if case .httpStatus(404, _) = $0 { true } else { false }
        },
        Fault(name: "HTTP 503, retried", response: { _ in .text("busy", status: 503) }, attempts: 2, words: "HTTP 503") {
            if case .httpStatus(503, _) = $0 { true } else { false }
        },
        Fault(name: "HTTP 429, retried", response: { _ in .text("slow down", status: 429) }, attempts: 2, words: "HTTP 429") {
            if case .httpStatus(429, _) = $0 { true } else { false }
        },
        Fault(name: "a captive portal's page", response: { _ in .text("<html>Sign in</html>") }, attempts: 1, words: "not an image") {
            if case .unsupportedFormat(nil, _) = $0 { true } else { false }
        },
        Fault(name: "a corrupt PNG",
              response: { _ in .ok((try? Data(contentsOf: URL(fileURLWithPath: "Samples/corrupt/bad-crc.png"))) ?? Data()) },
              attempts: 1, words: "PNG decoding failed") {
            if case .decodingFailed(.png, _, _, _) = $0 { true } else { false }
        },
        Fault(name: "a JPEG cut short, length matching", response: { _ in .ok(Fault.truncatedJPEG) }, attempts: 1,
              words: "JPEG decoding failed") {
            if case .decodingFailed(.jpeg, _, _, _) = $0 { true } else { false }
        },
        Fault(name: "an image over the pixel limit", response: { _ in .ok(Fault.overLimit) }, attempts: 1,
              words: "too large to decode") {
            if case .imageTooLarge(1100, 1000, _, _) = $0 { true } else { false }
        },
        Fault(name: "a stalled server", response: { _ in .stall() }, attempts: 1, words: "not loaded within 3 s") {
            if case .timedOut = $0 { true } else { false }
        },
        Fault(name: "a trickling server", response: { _ in .trickle(pngData(1), bytesPerChunk: 1, interval: 0.5) }, attempts: 1,
              words: "not loaded within 3 s") {
            if case .timedOut = $0 { true } else { false }
        },
        Fault(name: "a connection reset mid-body, retried", response: { _ in .resetAfter(40, of: pngData(1, width: 64, height: 64)) },
              attempts: 2, words: "connection") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "a response over the size limit", response: { _ in .ok(Data(count: 2 << 20)) }, attempts: 1,
              words: "larger than the limit") {
            if case .responseTooLarge = $0 { true } else { false }
        },
        Fault(name: "an endless body", response: { _ in .endless(Data(count: 64 << 10)) }, attempts: 1, words: "larger than the limit") {
            if case .responseTooLarge = $0 { true } else { false }
        },
        Fault(name: "a gzip bomb", response: { _ in
            var response = TestServer.Response.ok(Fault.gzipBomb, headers: ["Content-Encoding": "gzip"])
            response.delivery = .untilClose
            return response
        }, attempts: 1, words: "the response") {
            // Inflated, it is stopped at the size limit; passed on as it is, it is not
            // an image. Either way nothing grows without bound.
            switch $0 {
            case .responseTooLarge, .unsupportedFormat(nil, _): true
            default: false
            }
        },
        Fault(name: "a redirect loop", response: { _ in .redirect(to: "/fault") }, attempts: 1, words: "redirect refused") {
            if case .redirectRefused = $0 { true } else { false }
        },
        Fault(name: "a redirect to a file", response: { _ in .redirect(to: "file:///etc/passwd") }, attempts: 1, words: "redirect refused") {
            if case .redirectRefused = $0 { true } else { false }
        },
        Fault(name: "response headers of 1 MB", response: { _ in .ok(pngData(1), headers: ["X-Big": String(repeating: "a", count: 1 << 20)]) },
              attempts: 1, words: "response headers too large") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "response headers of 1 MB in 1,024 lines", response: { _ in
            .ok(pngData(1), headers: Dictionary(uniqueKeysWithValues: (0..<1_024).map { ("X-Line-\($0)", String(repeating: "b", count: 1_000)) }))
        }, attempts: 1, words: "response headers too large") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "100,000 response headers", response: { _ in
            .ok(pngData(1), headers: Dictionary(uniqueKeysWithValues: (0..<100_000).map { ("X-\($0)", "c") }))
        }, attempts: 1, words: "response headers too large") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "a negative Content-Length",
              response: { _ in .raw(Data("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nabc".utf8)) },
              attempts: 1, words: "invalid Content-Length") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "an invalid Content-Length",
              response: { _ in .raw(Data("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nabc".utf8)) },
              attempts: 1, words: "invalid Content-Length") {
            if case .network = $0 { true } else { false }
        },
        Fault(name: "broken chunking",
              response: { _ in .raw(Data("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n".utf8)) },
              attempts: 1, words: "chunked encoding is broken") {
            if case .network = $0 { true } else { false }
        },
    ]
}

/// Every bad input and fault a server can give ends in its typed error with a message
/// a person can act on, and leaves nothing in the memory or the disk tier: the real
/// test server on 127.0.0.1, the real loader, codecs and disk cache.
@Suite struct FaultTests {
    let server = TestServer()
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-faults-\(UUID())")

    init() throws {
        try server.start()
    }

    /// A loader with both tiers, 1 MB responses, one retry and a 1-megapixel limit;
    /// `smuggling` gives it a configured header that would inject another.
    func makeLoader(smuggling: Bool = false) -> (ImageLoader, ImageCache, DiskCache) {
        let memory = ImageCache()
        let disk = DiskCache(directory: directory)
        let loader = ImageLoader(
            configuration: .init(
                dataLoader: DefaultDataLoader(configuration: .init(maximumResponseSize: 1 << 20)),
                retryPolicy: RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02),
                maximumPixelCount: 1_000_000, headers: smuggling ? ["X-Note": "a\r\nX-Injected: yes"] : [:],
                diskCache: disk),
            cache: memory)
        return (loader, memory, disk)
    }

    @Test(arguments: Fault.all)
    func aFaultEndsInItsErrorAndLeavesNothingCached(_ fault: Fault) async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        if let response = fault.response {
            let server = self.server
            // Made once before the load, so that making a large body never counts
            // against the load's time.
            _ = response(server)
            server.route("/fault") { _ in response(server) }
        }
        var request = ImageRequest(url: server.url("/fault"))
        switch fault.name {
        case "an unsupported scheme":
            request = ImageRequest(url: URL(string: "ftp://127.0.0.1:\(server.port)/fault")!)
        default: break
        }
        let (loader, memory, disk) = makeLoader(smuggling: fault.name == "a header smuggling a line")
        loader.loadingTimeout = fault.timeout
        let task = loader.task(with: request)
        let result = await withTimeLimit(120) { await task.value }
        guard case .failure(let error)? = result else {
            Issue.record("\(fault.name): \(String(describing: result))")
            return
        }
        #expect(fault.matches(error), "\(fault.name): \(error)")
        #expect(error.description.contains(fault.words), "\(fault.name): \(error)")
        #expect(server.count(for: "/fault") == fault.attempts, "\(fault.name)")
        await disk.flush()
        #expect(memory.count == 0 && disk.statistics.count == 0, "\(fault.name) left \(memory.count) in memory, \(disk.statistics)")
    }

    /// Slow answers under load: forty images each answered after 300 ms, two
    /// transfers at a time, all load (the timeout counts from each transfer's start,
    /// not from when it was queued).
    @Test func slowAnswersUnderLoadAllArrive() async throws {
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        for n in 0..<40 {
            server.route("/slow/\(n).png") { _ in
                usleep(300_000)
                return .ok(pngData(UInt8(n)))
            }
        }
        let (loader, memory, _) = makeLoader()
        let tasks = (0..<40).map { loader.task(with: ImageRequest(url: server.url("/slow/\($0).png"))) }
        for (n, task) in tasks.enumerated() {
            let response = try await task.response
            #expect(response.image.bitmap[0, 0].r == UInt8(n))
        }
        #expect(memory.count == 40)
    }
}
