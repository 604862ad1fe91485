#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago decode` end to end: the real executable over real files.
@Suite struct DecodeCommandTests {
    /// Every valid file of the corpus, of all four formats.
    static func validFiles() throws -> [URL] {
        let webp = try ["gallery1", "gallery2", "animated", "regression"].flatMap {
            try Corpus.files("webp/image-webp/\($0)", ext: "webp")
        }
        let gif = try ["samples", "regression", "benches", "benches/samples"].flatMap {
            try Corpus.files("gif/image-gif/\($0)", ext: "gif")
        }
        let png = try Corpus.files("png/pngsuite", ext: "png").filter { !$0.lastPathComponent.hasPrefix("x") }
            + Corpus.files("photos/kodak", ext: "png")
        return try Corpus.decodableJPEGs() + png + gif + webp
    }

    /// Files that must fail: corrupt on purpose, JPEG variants beyond libjpeg-turbo 2.1,
    /// JPEG, PNG and WebP stills cut before their first pixel, and an animated WebP
    /// before its first whole frame (cut later, they decode what arrived, as browsers
    /// show it).
    static func failingFiles(truncatedInto folder: URL) throws -> [URL] {
        let corruptPNG = try Corpus.files("png/pngsuite", ext: "png").filter { $0.lastPathComponent.hasPrefix("x") }
        let crashGIF = try Corpus.files("gif/image-gif/crashtest", ext: "gif")
        let unsupportedJPEG = try ["lossless_huffman", "lossless_arithmetic", "ls"].flatMap {
            try Corpus.files("jpeg/jpegsuite/\($0)", ext: "jpg")
        } + [try Corpus.folder("jpeg/libjpeg-turbo/monkey12.jpg")]
        var truncated: [URL] = []
        // Not GIF: a GIF cut short shows the frames that arrived, as in browsers.
        let sources = ["jpeg/exif-orientation/Portrait_3.jpg", "png/pngsuite/basi6a16.png",
                       "webp/image-webp/gallery2/1_webp_a.webp",
                       "webp/image-webp/animated/random_lossy.webp"]
        for path in sources {
            let data = try Corpus.data(path)
            let cuts = switch (path as NSString).pathExtension {
            case "jpg": [data.prefix(100), data.prefix(400), data.prefix(try TestImages.firstScanData(data))]
            case "png": [data.prefix(20), data.prefix(40), data.prefix(TestImages.chunkOffset("IDAT", in: data)! + 8)]
            case _ where !path.contains("animated"):
                // A still: up to its first image chunk's header (ALPH, then VP8).
                [data.prefix(20), data.prefix(40), data.prefix(data.firstRange(of: Data("ALPH".utf8))!.lowerBound + 8)]
            default:
                // An animation: within its first frame.
                [data.prefix(20), data.prefix(40), data.prefix(data.firstRange(of: Data("ANMF".utf8))!.lowerBound + 40)]
            }
            for (index, cut) in cuts.enumerated() {
                let url = folder.appendingPathComponent("cut\(index)-" + (path as NSString).lastPathComponent)
                try cut.write(to: url)
                truncated.append(url)
            }
        }
        return corruptPNG + crashGIF + unsupportedJPEG + truncated
    }

    @Test(Corpus.available) func everyValidCorpusFileDecodesAndExitsZero() async throws {
        let files = try Self.validFiles()
        #expect(files.count > 450)
        let result = try await Tool.run(["decode"] + files.map(\.path))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines.count == files.count)
        #expect(result.stderr.isEmpty)
    }

    @Test(Corpus.available) func everyFailingFileExitsOneWithOneClearLine() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-decode-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let files = try Self.failingFiles(truncatedInto: folder)
        #expect(files.count > 100)

        // All at once, as JSON: every record says why, and the run exits 1.
        let all = try await Tool.run(["decode", "--json"] + files.map(\.path))
        #expect(all.status == 1)
        let records = try all.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(records.count == files.count + 1)
        for record in records.dropLast() {
            #expect(record["ok"] as? Bool == false, "\(record["file"] ?? "?") decoded")
            #expect((record["error"] as? String)?.isEmpty == false)
        }
        let summary = records.last?["summary"] as? [String: Int]
        #expect(summary?.filter { $0.key != "peakMemory" } == ["files": files.count, "decoded": 0, "failed": files.count])
        #expect((summary?["peakMemory"] ?? 0) > 0)

        // One by one for a sample of each kind: one line on standard error, naming
        // the file and the format, nothing on standard output.
        for file in stride(from: 0, to: files.count, by: 7).map({ files[$0] }) {
            let result = try await Tool.run(["decode", file.path])
            #expect(result.status == 1, "\(file.lastPathComponent)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderrLines.count == 1, "\(result.stderr)")
            #expect(result.stderr.hasPrefix("imago: \(file.path): "), "\(result.stderr)")
        }
    }

    @Test(Corpus.available) func aBadFileDoesNotStopTheOthers() async throws {
        let good = try Corpus.folder("png/pngsuite/basn2c08.png").path
        let bad = try Corpus.folder("png/pngsuite/xcrn0g04.png").path
        let result = try await Tool.run(["decode", good, bad, good])
        #expect(result.status == 1)
        #expect(result.stdoutLines.count == 2)
        #expect(result.stderrLines.count == 1 && result.stderr.contains("xcrn0g04.png"))
    }

    /// A JPEG cut halfway decodes, exit status 0, and says it is partial; the whole
    /// file does not.
    @Test(Corpus.available) func aTruncatedPhotoDecodesAndSaysItIsPartial() async throws {
        let whole = try Corpus.folder("jpeg/exif-orientation/Landscape_1.jpg")
        let cut = FileManager.default.temporaryDirectory.appendingPathComponent("imago-cut-\(UUID()).jpg")
        defer { try? FileManager.default.removeItem(at: cut) }
        let data = try Data(contentsOf: whole)
        try data.prefix(data.count / 2).write(to: cut)
        let result = try await Tool.run(["decode", "--json", whole.path, cut.path])
        #expect(result.status == 0, "\(result.stderr)")
        let records = try result.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        try #require(records.count == 3)
        #expect(records[0]["partial"] == nil && records[1]["partial"] as? Bool == true)
        let line = try await Tool.run(["decode", cut.path])
        #expect(line.stdout.contains("partial"), "\(line.stdout)")
    }

    @Test(Corpus.available) func jsonRecordsDescribeEachImage() async throws {
        let gif = try Corpus.folder("gif/image-gif/samples/moon_impact.gif").path
        let jpeg = try Corpus.folder("jpeg/exif-orientation/Portrait_8.jpg").path
        let result = try await Tool.run(["decode", "--json", gif, jpeg])
        #expect(result.status == 0)
        let records = try result.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(records.count == 3)
        #expect(records[0]["format"] as? String == "gif" && records[0]["frames"] as? Int == 14)
        #expect(records[1]["format"] as? String == "jpeg" && records[1]["orientation"] as? Int == 8)
        #expect(records[1]["width"] as? Int == 1200 && records[1]["height"] as? Int == 1800)
        #expect((records[2]["summary"] as? [String: Int])?.filter { $0.key != "peakMemory" } == ["files": 2, "decoded": 2, "failed": 0])
    }

    @Test(Corpus.available) func writesDecodedImagesAsPNG() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-out-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let source = try Corpus.folder("jpeg/exif-orientation/Landscape_5.jpg")
        let out = folder.appendingPathComponent("one.png")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(try await Tool.run(["decode", source.path, "--out", out.path]).status == 0)
        let original = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: source))
        let written = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: out))
        #expect(written.format == .png && written.width == 1800 && written.height == 1200)
        #expect(written.bitmap.pixels == original.bitmap.pixels)

        // By extension: JPEG and WebP too, at the quality asked for.
        for (name, format) in [("small.jpg", ImageFormat.jpeg), ("small.webp", .webp)] {
            let path = folder.appendingPathComponent(name).path
            #expect(try await Tool.run(["decode", source.path, "--thumbnail", "100", "--quality", "70", "--out", path]).status == 0)
            let image = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: URL(fileURLWithPath: path)))
            #expect(image.format == format && image.width == 100 && image.height == 67, "\(name)")
        }

        let gif = try Corpus.folder("gif/image-gif/samples/alpha_gif_a.gif")
        let result = try await Tool.run(["decode", "--out-dir", folder.appendingPathComponent("many").path, source.path, gif.path])
        #expect(result.status == 0)
        for name in ["Landscape_5.png", "alpha_gif_a.png"] {
            let path = folder.appendingPathComponent("many/\(name)").path
            #expect(FileManager.default.fileExists(atPath: path), "\(name)")
        }
    }

    @Test func badUsageExitsTwo() async throws {
        let cases: [[String]] = [
            ["decode"],
            ["decode", "a.png", "--out", "x.png", "--out-dir", "d"],
            ["decode", "a.png", "b.png", "--out", "x.png"],
            ["decode", "a.png", "--out", "x.tga"],
            ["decode", "a.png", "--out", "x.jpg", "--quality", "0"],
            ["decode", "a.png", "--quality", "80"],
            ["decode", "a.png", "--out-dir", "d", "--quality", "80"],
            ["decode", "a.png", "--out", "-"],
            ["decode", "a.png", "--out", "/tmp"],
            ["decode", "a.png", "--out", "noextension"],
            ["decode", "a.png", "--out", "/nonexistent/folder/x.png"],
            ["decode", "a.png", "--frobnicate"],
            ["decode", "a.png", "--max-pixels", "many"],
            ["decode", "one/photo.png", "two/photo.jpg", "--out-dir", "out"],
            ["nosuchcommand"],
            [],
        ]
        for arguments in cases {
            let result = try await Tool.run(arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stdout.isEmpty && !result.stderr.isEmpty, "\(arguments)")
        }
        let help = try await Tool.run(["decode", "--help"])
        #expect(help.status == 0 && help.stdout.contains("usage: imago decode"))
        // Each output path that cannot be a file says why, not "cannot write '.' files".
        for (path, reason) in [("-", "standard output"), ("/tmp", "is a directory"), ("noextension", "has no extension"),
                               ("/nonexistent/folder/x.png", "there is no directory /nonexistent/folder")] {
            let result = try await Tool.run(["decode", "a.png", "--out", path])
            #expect(result.stderr.contains(reason), "\(path): \(result.stderr)")
        }
    }

    /// The list of commands gives each one's first sentence whole, not cut at a full
    /// stop inside a file name's extension.
    @Test func theListOfCommandsGivesWholeSentences() async throws {
        let help = try await Tool.run(["--help"])
        #expect(help.status == 0)
        let lines = help.stdout.split(separator: "\n").filter { $0.hasPrefix("  ") }
        #expect(lines.count == 5)
        for line in lines {
            #expect(line.filter { $0 == "(" }.count == line.filter { $0 == ")" }.count, "\(line)")
        }
        #expect(lines.contains { $0.hasPrefix("  sheet") && $0.hasSuffix("(or .jpg, .webp by extension)") })
    }

    /// `--version` says the version, and `help COMMAND` gives the command's own help,
    /// as git, swift and most tools take them.
    @Test func versionAndHelpOfACommand() async throws {
        let version = try await Tool.run(["--version"])
        #expect(version.status == 0 && version.stdout == "imago \(HTTPLoaderConfiguration.version)\n")
        for name in ["decode", "fetch", "sheet", "cache", "hash"] {
            let help = try await Tool.run(["help", name])
            #expect(help.status == 0 && help.stdout.contains("usage: imago \(name)"), "\(name): \(help.stdout)")
        }
        // An unknown command's help is an unknown command, as `imago nothing` is.
        let unknown = try await Tool.run(["help", "nothing"])
        #expect(unknown.status == 2 && unknown.stderr.contains("unknown command 'nothing'") && unknown.stdout.isEmpty, "\(unknown)")
    }

    /// A file of the user's own is read whatever the loader's limit for a server's
    /// response (64 MiB): a 70 MB file is decoded (here, found not to be an image),
    /// not refused for its size; the pixel limit bounds what it may cost.
    @Test func aLargeFileIsDecodedNotRefused() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-large-\(UUID()).tif")
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
        let handle = try FileHandle(forWritingTo: file)
        try handle.truncate(atOffset: 70_000_000)
        try handle.close()
        let result = try await Tool.run(["decode", file.path])
        #expect(result.status == 1 && result.stderr.contains("not an image"), "\(result.stderr)")
        #expect(!result.stderr.contains("larger than the limit"))
    }

    @Test func aMissingFileIsReported() async throws {
        let result = try await Tool.run(["decode", "/nonexistent/photo.jpg"])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("imago: /nonexistent/photo.jpg: "))
    }

    /// What is not a regular file is named for what it is, once, and nothing is read
    /// from a device that never ends.
    @Test func aDeviceOrADirectoryIsNamedForWhatItIs() async throws {
        let result = try await Tool.run(["decode", "/dev/zero", "Samples"])
        #expect(result.status == 1)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines == ["imago: /dev/zero: is not a regular file", "imago: Samples: is a directory, not a file"], "\(lines)")
    }

    /// Many files decoded on all cores still report in the order given: large and
    /// tiny files alternate, so they finish out of order, and failures keep their place.
    @Test func manyFilesReportInTheOrderGiven() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-order-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let large = try ImageEncoders.JPEG().encode(Bitmap(width: 900, height: 700, pixels: (0..<900 * 700 * 4).map { UInt8(truncatingIfNeeded: $0 / 7) | 1 }))
        var files: [String] = []
        for n in 0..<120 {
            let file = folder.appendingPathComponent(String(format: "f%03d.%@", n, n % 10 == 9 ? "bad" : n % 2 == 0 ? "jpg" : "png")).path
            let data = n % 10 == 9 ? Data("not an image".utf8) : n % 2 == 0 ? large : pngData(UInt8(n), width: n + 1, height: 1)
            try data.write(to: URL(fileURLWithPath: file))
            files.append(file)
        }
        let human = try await Tool.run(["decode"] + files)
        #expect(human.status == 1)
        let good = files.enumerated().filter { $0.offset % 10 != 9 }.map(\.element)
        let bad = files.enumerated().filter { $0.offset % 10 == 9 }.map(\.element)
        #expect(human.stdoutLines.map { String($0.prefix { $0 != ":" }) } == good)
        #expect(human.stderrLines.map { String($0.dropFirst("imago: ".count).prefix { $0 != ":" }) } == bad)
        #expect(human.stdoutLines[1].contains("PNG 2×1"))

        let json = try await Tool.run(["decode", "--json", "--thumbnail", "64"] + files)
        let records = try json.stdoutLines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(records.dropLast().map { $0["file"] as? String } == files)
        #expect(records.dropLast().map { $0["ok"] as? Bool } == files.indices.map { $0 % 10 != 9 })
        #expect(records[0]["width"] as? Int == 64 && records[0]["description"] == nil)
        #expect((records.last?["summary"] as? [String: Any])?["failed"] as? Int == 12)
    }

    /// What a decode left aside and said so (here a damaged ICC profile, ignored) is
    /// on the file's line and in its JSON record, as the library's `notes` are; a
    /// clean file has none.
    @Test func aDecodesNotesAreReported() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-notes-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let plain = try ImageEncoders.JPEG().encode(Bitmap(width: 8, height: 8, pixels: [UInt8](repeating: 200, count: 256)))
        let profile = Data(repeating: 0, count: 200)
        var marker = Data([0xFF, 0xE2, UInt8((16 + profile.count) >> 8), UInt8((16 + profile.count) & 0xFF)])
        marker += Data("ICC_PROFILE".utf8) + Data([0, 1, 1]) + profile
        let damaged = folder.appendingPathComponent("damaged.jpg"), clean = folder.appendingPathComponent("clean.jpg")
        try (plain.prefix(2) + marker + plain.dropFirst(2)).write(to: damaged)
        try plain.write(to: clean)
        let note = "the embedded ICC profile is damaged and was ignored"

        let human = try await Tool.run(["decode", damaged.path, clean.path])
        #expect(human.status == 0)
        #expect(human.stdoutLines == ["\(damaged.path): JPEG 8×8, 1 frame; \(note)", "\(clean.path): JPEG 8×8, 1 frame"])
        let json = try await Tool.run(["decode", "--json", damaged.path, clean.path])
        let records = try json.stdoutLines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(records[0]["notes"] as? [String] == [note] && records[1]["notes"] == nil)
        let fetched = try await Tool.run(["fetch", "--json", "--no-disk-cache", damaged.path])
        let record = try JSONSerialization.jsonObject(with: Data((fetched.stdoutLines.first ?? "").utf8)) as? [String: Any]
        #expect(record?["notes"] as? [String] == [note], "\(fetched.stdout)")
    }
}
#endif
