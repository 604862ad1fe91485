#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago fetch` on long and open-ended inputs: records as loads complete, input line
/// numbers, standard input read as a stream, and memory that does not grow with the
/// input.
@Suite struct FetchStreamingTests {
    let server = TestServer()

    init() throws {
        try server.start()
        for n in 0..<3 { server.route("/\(n).png", data: pngData(UInt8(n * 10))) }
    }

    private func record(_ line: Substring) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
    }

    @Test func recordsComeAsLoadsCompleteWithTheirLineNumbers() async throws {
        defer { server.stop() }
        // The first URL takes about a second to arrive; the others are quick, and
        // are reported before it.
        server.route("/slow.png") { _ in .trickle(pngData(200, width: 64, height: 64), bytesPerChunk: 16, interval: 0.2) }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-stream-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        let lines = [server.url("/slow.png").absoluteString, "# quick ones", server.url("/0.png").absoluteString, "",
                     server.url("/1.png").absoluteString, "not a url"]
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--concurrency", "4", "--input", input.path])
        #expect(result.status == 1)
        let records = try result.stdoutLines.map(record)
        try #require(records.count == 5)
        #expect(records.last?["summary"] != nil)
        let order = records.dropLast().map { $0["line"] as? Int }
        #expect(order.last == 1, "the slow URL comes last: \(order)")
        #expect(Set(order.compactMap { $0 }) == [1, 3, 5, 6])
        let bad = try #require(records.first { $0["line"] as? Int == 6 })
        #expect(bad["ok"] as? Bool == false && bad["url"] as? String == "not a url")
    }

    @Test func standardInputIsLoadedWhileStillBeingWritten() async throws {
        defer { server.stop() }
        let process = Process()
        process.executableURL = Tool.url
        process.arguments = ["fetch", "--no-disk-cache", "--json", "--input", "-"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }

        // Lines of standard output, read on a thread of their own as they come.
        let lines = AsyncStream<Substring> { continuation in
            Thread {
                var pending = Data()
                while case let chunk = output.fileHandleForReading.availableData, !chunk.isEmpty {
                    pending += chunk
                    while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                        continuation.yield(Substring(String(decoding: pending[..<end], as: UTF8.self)))
                        pending = Data(pending[(end + 1)...])
                    }
                }
                continuation.finish()
            }.start()
        }
        var iterator = lines.makeAsyncIterator()
        input.fileHandleForWriting.write(Data("# first\n\(server.url("/0.png").absoluteString)\n".utf8))
        // The first record arrives while the input is still open.
        let first = try record(try #require(await iterator.next()))
        #expect(first["line"] as? Int == 2 && first["ok"] as? Bool == true)
        #expect(process.isRunning)
        input.fileHandleForWriting.write(Data("\(server.url("/1.png").absoluteString)\n".utf8))
        try input.fileHandleForWriting.close()
        let second = try record(try #require(await iterator.next()))
        #expect(second["line"] as? Int == 3 && second["ok"] as? Bool == true)
        let last = try record(try #require(await iterator.next()))
        let summary = try #require(last["summary"] as? [String: Any])
        #expect(summary["items"] as? Int == 2)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test func anEmptyStreamIsBadUsage() async throws {
        defer { server.stop() }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-empty-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        try "# nothing here\n\n".write(to: input, atomically: true, encoding: .utf8)
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--input", input.path])
        #expect(result.status == 2 && result.stderr.contains("held none"), "\(result.stderr)")
    }

    /// The peak memory `imago fetch` reports for each count of distinct URLs of
    /// `path` (a query makes each URL its own), every load checked to succeed.
    private func peakMemory(fetching path: String, counts: [Int]) async throws -> [Int: Int] {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-many-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        var peaks: [Int: Int] = [:]
        for count in counts {
            let urls = (0..<count).map { server.url("\(path)?n=\($0)").absoluteString }
            try urls.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
            let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--concurrency", "8", "--input", input.path], timeout: 600)
            #expect(result.status == 0, "\(result.stderr.prefix(500))")
            let last = try record(try #require(result.stdoutLines.last))
            let summary = try #require(last["summary"] as? [String: Any])
            #expect(summary["items"] as? Int == count && summary["failed"] as? Int == 0)
            peaks[count] = try #require(summary["peakMemory"] as? Int)
        }
        return peaks
    }

    /// 2,000 distinct full-size images, each 2.3 MB decoded (4.6 GB if all were
    /// kept): the process's peak stays under a bound set by the concurrency, the
    /// same for 200 images as for 2,000.
    @Test(.disabled(if: ProcessInfo.processInfo.environment["IMAGO_SANITIZER"] != nil, "memory figures mean nothing under a sanitizer"))
    func memoryIsBoundedByTheConcurrencyNotTheInput() async throws {
        defer { server.stop() }
        let photo = try ImageEncoders.JPEG(quality: 80).encode(Bitmap.smoothPhoto(width: 800, height: 720))
        server.route("/photo.jpg", data: photo)
        let peaks = try await peakMemory(fetching: "/photo.jpg", counts: [200, 2000])
        let small = try #require(peaks[200]), large = try #require(peaks[2000])
        print("imago fetch peak: \(small >> 20) MB for 200 full-size images, \(large >> 20) MB for 2,000")
        #expect(large < 250 << 20, "peak \(large >> 20) MB for 2,000 images")
        #expect(large < small + (48 << 20), "peak \(small >> 20) MB for 200 images, \(large >> 20) MB for 2,000")
        #expect(server.count(for: "/photo.jpg") == 2200)
    }

    /// Many loads of a small image: what each load leaves behind shows, where
    /// full-size images would drown it. Each load's deadline timer stayed alive for the
    /// whole timeout after the load ended (about 0.6 KB a load), and the memory tier
    /// kept up to 10,000 small images: 12,000 loads grew the tool by about 15 MB
    /// against 2,000, and 8,000 would by 10 MB against 1,000. Both are bounded now,
    /// and the peak with them.
    @Test(.disabled(if: ProcessInfo.processInfo.environment["IMAGO_SANITIZER"] != nil, "memory figures mean nothing under a sanitizer"))
    func manySmallLoadsLeaveNothingBehind() async throws {
        defer { server.stop() }
        let peaks = try await peakMemory(fetching: "/1.png", counts: [1000, 8000])
        let small = try #require(peaks[1000]), large = try #require(peaks[8000])
        print("imago fetch peak: \(Double(small) / 1e6) MB for 1,000 small loads, \(Double(large) / 1e6) MB for 8,000")
        #expect(large < small + (3 << 20), "peak \(small >> 20) MB for 1,000 loads, \(large >> 20) MB for 8,000")
    }
}
#endif
