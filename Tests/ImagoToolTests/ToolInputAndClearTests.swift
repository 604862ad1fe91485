import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The tool with what other programs hand it: an `--input` file saved with a
/// byte-order mark or in UTF-16, and a cache directory another process is writing to.
@Suite struct ToolInputAndClearTests {
    @Test func anInputFileStartingWithAByteOrderMarkLoadsItsFirstLine() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/a.png", data: pngData(1))
        server.route("/b.png", data: pngData(2))
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-bom-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        let text = "\u{FEFF}" + server.url("/a.png").absoluteString + "\r\n" + server.url("/b.png").absoluteString + "\r\n"
        try Data(text.utf8).write(to: input)
        #expect(try Data(contentsOf: input).prefix(3) == Data([0xEF, 0xBB, 0xBF]))
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--input", input.path])
        #expect(result.status == 0, "\(result.stdout)")
        let records = result.stdoutLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
        let first = records.first { $0["line"] as? Int == 1 }
        #expect(first?["ok"] as? Bool == true && first?["url"] as? String == server.url("/a.png").absoluteString, "\(records)")
        #expect(server.count(for: "/a.png") == 1 && server.count(for: "/b.png") == 1)
    }

    /// Whitespace around a line is dropped as Foundation's `.whitespacesAndNewlines`
    /// has it, ASCII's and other scripts' alike; a line of whitespace is blank, and a
    /// comment may be indented. Each URL is loaded once, as written between them.
    @Test func whitespaceAroundALineIsDroppedWhateverItsScript() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let paths = (0..<6).map { "/w\($0).png" }
        for (index, path) in paths.enumerated() { server.route(path, data: pngData(UInt8(index + 1))) }
        let urls = paths.map { server.url($0).absoluteString }
        let lines = [
            " \t" + urls[0] + "\t \r",
            "\u{0B}\u{0C}" + urls[1],
            "\u{A0}" + urls[2] + "\u{3000}",
            "\u{2028}\u{85} " + urls[3] + " \u{2029}",
            "   # " + server.url("/commented.png").absoluteString,
            " \t\r",
            "\u{A0}\u{2003}",
            urls[4] + "  ",
            urls[5],
        ]
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-spaces-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        try Data(lines.joined(separator: "\n").utf8).write(to: input)
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--input", input.path])
        #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
        let records = result.stdoutLines.compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            .filter { $0["summary"] == nil }
            .sorted { ($0["line"] as? Int ?? 0) < ($1["line"] as? Int ?? 0) }
        #expect(records.compactMap { $0["url"] as? String } == urls, "\(records)")
        #expect(records.allSatisfy { $0["ok"] as? Bool == true }, "\(records)")
        #expect(records.compactMap { $0["line"] as? Int } == [1, 2, 3, 4, 8, 9])
        #expect(paths.allSatisfy { server.count(for: $0) == 1 } && server.count(for: "/commented.png") == 0)
    }

    /// A UTF-16 list (as Windows editors save "Unicode" text), with or without its
    /// byte-order mark, is refused as bad usage saying so, not read as garbage URLs.
    @Test func aUTF16InputFileIsRefusedSayingSo() async throws {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-utf16-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        let text = "http://127.0.0.1:9/a.png\r\nhttp://127.0.0.1:9/b.png\r\n"
        for (bytes, name) in [(Data([0xFF, 0xFE]) + text.data(using: .utf16LittleEndian)!, "UTF-16"),
                              (text.data(using: .utf16BigEndian)!, "UTF-16"),
                              (text.data(using: .utf32LittleEndian)!, "UTF-32")] {
            try bytes.write(to: input)
            let result = try await Tool.run(["fetch", "--no-disk-cache", "--input", input.path])
            #expect(result.status == 2 && result.stderr.contains("is \(name), not UTF-8"), "\(result.status) \(result.stderr)")
        }
    }

    /// Records another process writes while `cache clear` runs are its own, written
    /// after the clear began: not records the clear failed to delete.
    @Test func clearingWhileAnotherProcessWritesIsNoFailure() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-clear-\(UUID())", isDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let writer = Process()
        writer.executableURL = Tool.url
        writer.arguments = ["cache", "fill", "--cache-dir", directory.path, "--count", "1000000", "--size", "20000"]
        writer.standardOutput = FileHandle.nullDevice
        writer.standardError = FileHandle.nullDevice
        try writer.run()
        defer {
            if writer.isRunning { writer.terminate() }
            writer.waitUntilExit()
        }
        // Until the writer has stored something.
        for _ in 0..<600 where ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).count < 10 {
            try await Task.sleep(for: .milliseconds(100))
        }
        // Twenty rounds: a write lands between a clear's deletions and its look at the
        // directory in about one round in fifteen.
        var overlapping = 0
        for round in 1...20 {
            let clear = try await Tool.run(["cache", "clear", "--cache-dir", directory.path])
            if writer.isRunning { overlapping += 1 }
            #expect(clear.status == 0, "round \(round): \(clear.stderr)")
            #expect(!clear.stderr.contains("could not be deleted"), "round \(round): \(clear.stderr)")
        }
        #expect(overlapping == 20, "the writer ended before the clears did")
    }
}
