#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `make soak`, through the tool: `imago fetch` of 20,000 distinct URLs, one in ten
/// faulty, with a disk cache. Every input line gets exactly one record, each image is
/// its own URL's, the disk cache verifies record by record, and the process's peak
/// memory is the same as for 2,000 URLs: what the tool holds is bounded by its
/// concurrency, not by its input.
@Suite(.serialized) struct ToolSoakTests {
    /// The size of image `n`: its dimensions name it, so a record shows whose image it got.
    static func size(_ n: Int) -> (width: Int, height: Int) {
        (160 + n % 97, 120 + (n / 97) % 61)
    }

    static func jpeg(_ n: Int) -> Data {
        let (width, height) = size(n)
        return try! ImageEncoders.JPEG(quality: 80).encode(Bitmap.smoothPhoto(width: width, height: height))
    }

    @Test(.enabled(if: Soak.enabled, "the soak runs with make soak (IMAGO_SOAK=1)"))
    func twentyThousandURLsThroughTheToolInBoundedMemory() async throws {
        let server = TestServer()
        server.logsRequests = false
        try server.start()
        defer { server.stop() }
        let images = 2000
        var faulty = Set<Int>()
        for n in 0..<images {
            let answer = Soak.answer(n, body: Self.jpeg(n))
            if answer.fails { faulty.insert(n) }
            let response = answer.response
            server.route("/img/\(n)") { _ in response() }
        }
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("imago-tool-soak-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }

        var peaks: [Int: Int] = [:]
        for count in [2000, 20_000] {
            // Distinct URLs (the query differs), so neither tier can answer twice.
            let urls = (0..<count).map { (i: $0, image: Int.random(in: 0..<images)) }
            let input = work.appendingPathComponent("urls-\(count).txt")
            try urls.map { server.url("/img/\($0.image)?u=\($0.i)-\(count)").absoluteString }
                .joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
            let cache = work.appendingPathComponent("cache-\(count)")
            let start = ContinuousClock.now
            let result = try await Tool.run(
                ["fetch", "--json", "--concurrency", "16", "--retries", "1", "--timeout", "20",
                 "--cache-dir", cache.path, "--input", input.path], timeout: 900)
            let seconds = (ContinuousClock.now - start).seconds
            #expect(result.status == 1, "\(result.stderr.suffix(300))")

            let lines = result.stdoutLines
            let records = try lines.dropLast().map { line in
                try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            }
            // One record per input line, each line once.
            let numbers = records.compactMap { $0["line"] as? Int }
            #expect(numbers.count == count && Set(numbers) == Set(1...count))
            var wrong: [String] = [], failures = 0
            for record in records {
                guard let line = record["line"] as? Int, (1...count).contains(line) else { continue }
                let n = urls[line - 1].image
                if record["ok"] as? Bool == true {
                    let expected = Self.size(n)
                    if faulty.contains(n) || record["width"] as? Int != expected.width || record["height"] as? Int != expected.height {
                        wrong.append("line \(line): image \(n) gave \(record)")
                    }
                } else {
                    failures += 1
                    if !faulty.contains(n) { wrong.append("line \(line): image \(n) failed: \(record["error"] ?? "")") }
                }
            }
            #expect(wrong.isEmpty, "\(wrong.prefix(5))")
            #expect(failures == urls.filter { faulty.contains($0.image) }.count)

            let summaryLine = try #require(lines.last)
            let summary = try #require(
                (JSONSerialization.jsonObject(with: Data(summaryLine.utf8)) as? [String: Any])?["summary"] as? [String: Any])
            let peak = try #require(summary["peakMemory"] as? Int)
            peaks[count] = peak

            let disk = DiskCache(directory: cache)
            await disk.flush()
            let (checked, bad) = Soak.verify(disk)
            #expect(bad.isEmpty, "damaged records: \(bad.prefix(5))")
            print(String(
                format: "tool soak: %d URLs in %.1f s, %d failed (one image in ten faulty), peak memory %.1f MB, %d disk records verified",
                count, seconds, failures, Double(peak) / 1e6, checked))
        }
        let small = try #require(peaks[2000]), large = try #require(peaks[20_000])
        #expect(large < 250 << 20, "peak \(large >> 20) MB for 20,000 URLs")
        #expect(large < small + (48 << 20), "peak \(small >> 20) MB for 2,000 URLs, \(large >> 20) MB for 20,000")
    }
}
#endif
