#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago sheet` end to end: the real executable against the test server on
/// 127.0.0.1, its PNG read back with the library's decoder.
@Suite struct SheetCommandTests {
    let server = TestServer()
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-sheet-\(UUID())")

    /// The sample images of the repository, each a different format or layout.
    static let samples = ["photo-exif-6.jpg", "alpha.png", "cmyk.jpg", "progressive.jpg", "squares.webp", "moon.gif"]
    static let samplesFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Samples")

    /// What the tool composites cells over, and a placeholder's fill.
    static let background: (UInt8, UInt8, UInt8) = (32, 32, 32)
    static let placeholderGray: UInt8 = 128

    init() throws {
        try server.start()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in Self.samples {
            server.route("/\(name)", data: try Data(contentsOf: Self.samplesFolder.appendingPathComponent(name)))
        }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/broken.png") { _ in .ok(Data("not an image".utf8)) }
    }

    private func cleanUp() {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    private func sheet(_ path: String) throws -> Bitmap {
        try ImageDecoders.Registry.shared.decode(Data(contentsOf: URL(fileURLWithPath: path)), options: DecodingOptions()).bitmap
    }

    private func records(_ result: Tool.Result) throws -> [[String: Any]] {
        try result.stdoutLines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test func cellsShowTheImagesFittedToTheirBoxes() async throws {
        defer { cleanUp() }
        let out = folder.appendingPathComponent("sheet.png").path
        let size = 64, columns = 4
        let urls = Self.samples.map { server.url("/\($0)").absoluteString }
        let result = try await Tool.run(["sheet", "--no-disk-cache", "--json", "-o", out, "--size", "\(size)", "--columns", "\(columns)"] + urls)
        #expect(result.status == 0, "\(result.stderr)")
        let sheet = try sheet(out)
        #expect(sheet.width == columns * size && sheet.height == 2 * size)
        let records = try records(result)
        #expect(records.count == Self.samples.count + 1)

        for (index, name) in Self.samples.enumerated() {
            // What a view of the cell's box shows: the sample decoded to fit it.
            let expected = try ImageDecoders.Registry.shared.decode(
                Data(contentsOf: Self.samplesFolder.appendingPathComponent(name)),
                options: DecodingOptions(targetSize: .thumbnail(size))).bitmap
            #expect(records[index]["cell"] as? Int == index && records[index]["ok"] as? Bool == true, "\(name)")
            #expect(records[index]["width"] as? Int == expected.width && records[index]["height"] as? Int == expected.height, "\(name)")
            #expect(records[index]["source"] as? String == "network")
            let cellX = (index % columns) * size, cellY = (index / columns) * size
            let left = cellX + (size - expected.width) / 2, top = cellY + (size - expected.height) / 2
            // A pixel inside the image, composited over the background as the tool does.
            for (x, y) in [(expected.width / 2, expected.height / 2), (expected.width / 4, expected.height * 3 / 4)] {
                let source = expected[x, y], shown = sheet[left + x, top + y]
                let rest = 255 - Int(source.a)
                func over(_ c: UInt8, _ bg: UInt8) -> Int { min(255, Int(c) + (Int(bg) * rest + 127) / 255) }
                let want = (over(source.r, Self.background.0), over(source.g, Self.background.1), over(source.b, Self.background.2))
                #expect(Int(shown.r) == want.0 && Int(shown.g) == want.1 && Int(shown.b) == want.2 && shown.a == 255,
                        "\(name) at (\(x), \(y)): \(shown) against \(want)")
            }
            // Outside a box-shaped image the cell shows the background.
            if expected.width < size - 1 || expected.height < size - 1 {
                let corner = sheet[cellX, cellY]
                #expect((corner.r, corner.g, corner.b) == Self.background, "\(name)")
            }
        }
        // The cells after the last URL are empty.
        let empty = sheet[sheet.width - size / 2, sheet.height - size / 2]
        #expect((empty.r, empty.g, empty.b) == Self.background)
    }

    @Test func failedURLsGetPlaceholdersAndTheirReasons() async throws {
        defer { cleanUp() }
        let out = folder.appendingPathComponent("sheet.png").path
        let input = folder.appendingPathComponent("urls.txt")
        let lines = ["# a contact sheet", server.url("/alpha.png").absoluteString, server.url("/missing.png").absoluteString, "",
                     server.url("/broken.png").absoluteString, "ftp://example.com/x.png", "no url at all"]
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        let result = try await Tool.run(["sheet", "--no-disk-cache", "--retries", "0", "--json", "--size", "32", "-o", out, "--input", input.path])
        #expect(result.status == 1, "\(result.stderr)")
        let records = try records(result)
        try #require(records.count == 6)
        #expect(records.map { $0["line"] as? Int } == [2, 3, 5, 6, 7, nil])
        #expect(records.prefix(5).map { $0["ok"] as? Bool } == [true, false, false, false, false])
        #expect((records[1]["error"] as? String)?.contains("HTTP 404") == true)
        #expect((records[2]["error"] as? String)?.contains("not an image") == true)
        #expect((records[3]["error"] as? String)?.contains("is not a URL the data loader takes") == true)
        // Words with no scheme are a file path, here of no file.
        #expect((records[4]["error"] as? String)?.hasSuffix("no url at all: no such file") == true, "\(records[4])")
        let summary = try #require(records.last?["summary"] as? [String: Any])
        #expect(summary["items"] as? Int == 5 && summary["failed"] as? Int == 4)
        #expect(summary["output"] as? String == out)

        // The sheet is written all the same; each failed cell shows the placeholder:
        // gray off its diagonals, the background at its edge.
        let sheet = try sheet(out)
        #expect(sheet.width == 5 * 32 && sheet.height == 32)
        for cell in 1...4 {
            let fill = sheet[cell * 32 + 8, 16], edge = sheet[cell * 32, 0]
            #expect((fill.r, fill.g, fill.b) == (Self.placeholderGray, Self.placeholderGray, Self.placeholderGray), "cell \(cell)")
            #expect((edge.r, edge.g, edge.b) == Self.background, "cell \(cell)")
        }
        let image = sheet[16, 16]
        #expect((image.r, image.g, image.b) != (Self.placeholderGray, Self.placeholderGray, Self.placeholderGray))
    }

    @Test func aHumanSummaryNamesTheTiersAndTheFile() async throws {
        defer { cleanUp() }
        let out = folder.appendingPathComponent("sheet.png").path
        let cache = folder.appendingPathComponent("cache").path
        server.route("/fresh.jpg", data: try Data(contentsOf: Self.samplesFolder.appendingPathComponent("cmyk.jpg")),
                     headers: ["Cache-Control": "max-age=3600"])
        let urls = [server.url("/fresh.jpg").absoluteString, server.url("/missing.png").absoluteString]
        let cold = try await Tool.run(["sheet", "--retries", "0", "--cache-dir", cache, "-o", out] + urls)
        #expect(cold.status == 1)
        #expect(cold.stdout.contains("2 items, 1 failed") && cold.stdout.contains("1 network"), "\(cold.stdout)")
        #expect(cold.stdout.contains("wrote \(out)"))
        // The URL once per failure line, with the reason.
        let failures = cold.stderrLines.filter { $0.contains("missing.png") }
        #expect(failures.count == 1 && failures[0].components(separatedBy: "missing.png").count == 2, "\(cold.stderr)")

        let warm = try await Tool.run(["sheet", "--retries", "0", "--cache-dir", cache, "-o", out, urls[0]])
        #expect(warm.status == 0, "\(warm.stderr)")
        #expect(warm.stdout.contains("1 disk") && warm.stdout.contains("0 transfers"), "\(warm.stdout)")
        #expect(server.count(for: "/fresh.jpg") == 1)
    }

    @Test func columnsAndSizeGiveTheDimensions() async throws {
        defer { cleanUp() }
        let url = server.url("/cmyk.jpg").absoluteString
        for (count, arguments, width, height) in [
            (10, ["--columns", "4", "--size", "32"], 128, 96), (2, [], 512, 256), (7, [], 1536, 512), (3, ["--size", "40", "--columns", "1"], 40, 120),
        ] {
            let out = folder.appendingPathComponent("sheet-\(count).png").path
            let result = try await Tool.run(["sheet", "--no-disk-cache", "-o", out] + arguments + Array(repeating: url, count: count))
            #expect(result.status == 0, "\(result.stderr)")
            let sheet = try sheet(out)
            #expect(sheet.width == width && sheet.height == height, "\(count) cells \(arguments)")
        }
        // One transfer for the repeated URL.
        #expect(server.count(for: "/cmyk.jpg") <= 4)
    }

    @Test func aFailedWriteLeavesNothingHalfWritten() async throws {
        defer { cleanUp() }
        let url = server.url("/cmyk.jpg").absoluteString
        // The path is a directory, or in a folder that does not exist: said before any
        // load, and nothing written anywhere.
        let directory = folder.appendingPathComponent("taken.png")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let blocked = try await Tool.run(["sheet", "--no-disk-cache", "-o", directory.path, url])
        #expect(blocked.status == 2 && blocked.stderr.contains("is a directory"), "\(blocked.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["taken.png"])
        let nowhere = folder.appendingPathComponent("no/such/folder/sheet.png").path
        let missing = try await Tool.run(["sheet", "--no-disk-cache", "-o", nowhere, url])
        #expect(missing.status == 2 && missing.stderr.contains("there is no directory"), "\(missing.stderr)")
        #expect(!FileManager.default.fileExists(atPath: nowhere) && server.count(for: "/cmyk.jpg") == 0)

        // A run stopped while loading leaves an earlier sheet as it was.
        let out = folder.appendingPathComponent("sheet.png")
        try Data("earlier sheet".utf8).write(to: out)
        server.route("/stall.png") { _ in .stall() }
        let process = Process()
        process.executableURL = Tool.url
        process.arguments = ["sheet", "--no-disk-cache", "-o", out.path, url, server.url("/stall.png").absoluteString]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        await waitUntil { server.count(for: "/stall.png") > 0 }
        process.terminate()
        process.waitUntilExit()
        #expect(try Data(contentsOf: out) == Data("earlier sheet".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["sheet.png", "taken.png"])
    }

    @Test func helpAndBadUsage() async throws {
        defer { cleanUp() }
        let help = try await Tool.run(["sheet", "--help"])
        #expect(help.status == 0 && help.stdout.contains("usage: imago sheet") && help.stdout.contains("--columns"))
        let list = try await Tool.run(["--help"])
        #expect(list.stdout.contains("sheet"))
        let url = server.url("/cmyk.jpg").absoluteString
        let out = folder.appendingPathComponent("s.png").path
        for arguments in [["sheet", url], ["sheet", "-o", out], ["sheet", "-o", folder.appendingPathComponent("s.gif").path, url],
                          ["sheet", "-o", out, "--size", "0", url], ["sheet", "-o", out, "--columns", "x", url],
                          ["sheet", "-o", out, "--no-disk-cache", "--cache-dir", "/tmp/x", url],
                          ["sheet", "-o", folder.appendingPathComponent("no/such/s.png").path, url], ["sheet", "-o", folder.path, url],
                          ["sheet", "-o", out, "--size", "4096", "--columns", "1"] + Array(repeating: url, count: 20)] {
            let result = try await Tool.run(arguments)
            #expect(result.status == 2, "\(arguments.prefix(6))")
            #expect(!result.stderr.isEmpty)
        }
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(server.count(for: "/cmyk.jpg") == 0)
    }

    /// A list with no URL (empty, or only comments and blank lines) is bad usage, as
    /// it is for fetch: a sheet of no cells is no picture.
    @Test func aListWithNoURLIsBadUsage() async throws {
        defer { cleanUp() }
        let list = folder.appendingPathComponent("list.txt")
        let out = folder.appendingPathComponent("s.png").path
        for text in ["", "# nothing yet\n\n"] {
            try Data(text.utf8).write(to: list)
            let result = try await Tool.run(["sheet", "--input", list.path, "-o", out])
            #expect(result.status == 2 && result.stderr.contains("held none"), "\(result)")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
    }
}
#endif
