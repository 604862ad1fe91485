import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago fetch` end to end: the real executable against the test server on 127.0.0.1.
@Suite struct FetchCommandTests {
    let server = TestServer()

    init() throws {
        try server.start()
        for n in 0..<5 { server.route("/\(n).png", data: pngData(UInt8(n * 10))) }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/broken.png") { _ in .ok(Data("not an image".utf8)) }
    }

    @Test func loadsEveryURLAndSummarises() async throws {
        defer { server.stop() }
        let urls = (0..<5).map { server.url("/\($0).png").absoluteString }
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--concurrency", "3"] + urls + urls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("10 items, 0 failed") && result.stdout.contains("5 transfers"), "\(result.stdout)")
        // Duplicates coalesce or hit memory: each URL reached the server once.
        #expect((0..<5).map { server.count(for: "/\($0).png") } == [1, 1, 1, 1, 1])
        // Not a terminal: no progress bar on standard error.
        #expect(result.stderr.isEmpty)
    }

    /// A list read from a file is looked through for repeats first: with one, the
    /// images stay in memory for it; with none, nothing is kept there, and every
    /// image still loads.
    @Test func aListWithARepeatKeepsImagesInMemoryForIt() async throws {
        defer { server.stop() }
        let list = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-list-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: list) }
        // The repeat comes a dozen loads later, one load at a time: long after the
        // first load ended, so only memory can answer it.
        for n in 0..<12 { server.route("/other-\(n).png", data: pngData(UInt8(100 + n))) }
        let (a, b) = (server.url("/0.png").absoluteString, server.url("/1.png").absoluteString)
        let others = (0..<12).map { server.url("/other-\($0).png").absoluteString }
        try ([a, "# a comment"] + others + [a]).joined(separator: "\n").write(to: list, atomically: true, encoding: .utf8)
        let repeated = try await Tool.run(["fetch", "--json", "--no-disk-cache", "--concurrency", "1", "--input", list.path])
        #expect(repeated.status == 0, "\(repeated.stderr)")
        let last = repeated.stdout.split(separator: "\n").first { $0.contains("\"line\":15,") }
        #expect(last?.contains("\"source\":\"memory\"") == true, "\(repeated.stdout)")
        #expect(server.count(for: "/0.png") == 1)

        try "\(a)\n\(b)\n".write(to: list, atomically: true, encoding: .utf8)
        let distinct = try await Tool.run(["fetch", "--json", "--no-disk-cache", "--input", list.path])
        #expect(distinct.status == 0 && distinct.stdout.contains("\"items\":2,"), "\(distinct.stdout)")
        #expect(server.count(for: "/0.png") == 2, "a new process asks again")
    }

    @Test func aFailingURLIsReportedWhileTheOthersLoad() async throws {
        defer { server.stop() }
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-\(UUID()).txt")
        defer { try? FileManager.default.removeItem(at: input) }
        let lines = ["# a comment", server.url("/0.png").absoluteString, "", server.url("/missing.png").absoluteString,
                     server.url("/broken.png").absoluteString, "ftp://example.com/x.png", server.url("/1.png").absoluteString]
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--input", input.path, "--json", "--retries", "0"])
        #expect(result.status == 1)
        let records = try result.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(records.count == 6)
        let byURL = Dictionary(uniqueKeysWithValues: records.dropLast().map { ($0["url"] as! String, $0) })
        #expect(byURL[server.url("/0.png").absoluteString]?["ok"] as? Bool == true)
        #expect(byURL[server.url("/0.png").absoluteString]?["source"] as? String == "network")
        #expect(byURL[server.url("/1.png").absoluteString]?["width"] as? Int == 2)
        #expect((byURL[server.url("/missing.png").absoluteString]?["error"] as? String)?.contains("HTTP 404") == true)
        #expect((byURL[server.url("/broken.png").absoluteString]?["error"] as? String)?.contains("not an image") == true)
        #expect((byURL["ftp://example.com/x.png"]?["error"] as? String)?.contains("is not a URL the data loader takes") == true)
        let summary = try #require(records.last?["summary"] as? [String: Any])
        #expect(summary["items"] as? Int == 5 && summary["failed"] as? Int == 3)
        #expect(summary["hits"] as? [String: Int] == ["network": 2])
    }

    /// `--partial`: a transfer cut short shows what arrived, and its record says so;
    /// without it, the same transfer fails.
    @Test func partialKeepsWhatArrivedOfATransferCutShort() async throws {
        defer { server.stop() }
        let jpeg = TestImages.jpeg
        server.route("/cut.jpg") { _ in .truncate(declaredLength: jpeg.count, actualBody: jpeg.prefix(jpeg.count / 2)) }
        let url = server.url("/cut.jpg").absoluteString
        let strict = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--retries", "0", url])
        #expect(strict.status == 1 && strict.stdout.contains("\"ok\":false"), "\(strict.stdout)")
        let partial = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--retries", "0", "--partial", url, server.url("/0.png").absoluteString])
        #expect(partial.status == 0, "\(partial.stderr)")
        let records = try partial.stdoutLines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        let byURL = Dictionary(uniqueKeysWithValues: records.dropLast().map { ($0["url"] as! String, $0) })
        #expect(byURL[url]?["ok"] as? Bool == true && byURL[url]?["partial"] as? Bool == true && byURL[url]?["width"] as? Int == 160, "\(partial.stdout)")
        // A whole image's record has no "partial".
        #expect(byURL[server.url("/0.png").absoluteString]?["partial"] == nil)
    }

    @Test func thumbnailsAndTimeouts() async throws {
        defer { server.stop() }
        server.route("/stall.png") { _ in .stall() }
        let photo = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--thumbnail", "1", server.url("/0.png").absoluteString])
        #expect(photo.status == 0)
        #expect(photo.stdout.contains("\"width\":1"))
        let stalled = try await Tool.run(["fetch", "--no-disk-cache", "--timeout", "1", "--retries", "0", server.url("/stall.png").absoluteString])
        #expect(stalled.status == 1 && stalled.stderr.contains("not loaded within 1 s"), "\(stalled.stderr)")
        // The server never answers, and without the option the tool would wait its
        // default 60 s; the margin is for a process starting under the address
        // sanitizer on two loaded cores (12.6 s was seen).
        #expect(stalled.elapsed < .seconds(40))
    }

    @Test func aSecondRunIsAnsweredByTheDiskCache() async throws {
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-cache-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        server.route("/fresh.png", data: pngData(1), headers: ["Cache-Control": "max-age=3600"])
        let url = server.url("/fresh.png").absoluteString
        let first = try await Tool.run(["fetch", "--json", "--cache-dir", directory.path, url])
        let second = try await Tool.run(["fetch", "--json", "--cache-dir", directory.path, url])
        #expect(first.status == 0 && second.status == 0)
        #expect(first.stdout.contains("\"source\":\"network\"") && second.stdout.contains("\"source\":\"disk\""), "\(second.stdout)")
        #expect(second.stdout.contains("\"transfers\":0"))
        #expect(server.count(for: "/fresh.png") == 1)
    }

    /// A response the server chose by a field the run sends (`Vary`) answers a later
    /// run from the disk only when that run sends the same.
    @Test func theDiskAnswersARunThatSendsWhatChoseTheImage() async throws {
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-vary-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        server.route("/chosen.png") { request in
            .ok(pngData(request.header("Foo") == "1" ? 1 : 2), headers: ["Cache-Control": "max-age=3600", "Vary": "Foo"])
        }
        let url = server.url("/chosen.png").absoluteString
        var sources: [String] = []
        for foo in ["1", "1", "2"] {
            let run = try await Tool.run(["fetch", "--json", "--cache-dir", directory.path, "--header", "Foo: \(foo)", url])
            #expect(run.status == 0, "\(run.stderr)")
            let record = try JSONSerialization.jsonObject(with: Data((run.stdoutLines.first ?? "").utf8)) as? [String: Any]
            sources.append(record?["source"] as? String ?? "?")
        }
        #expect(sources == ["network", "disk", "network"])
        #expect(server.count(for: "/chosen.png") == 2)
    }

    /// A stale image that `stale-while-revalidate` lets a run answer at once is
    /// revalidated in the background, and the run waits for that answer (a second
    /// late here) before it exits: the next run finds the new image on disk.
    @Test func aRunWaitsForItsBackgroundRevalidation() async throws {
        defer { server.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-swr-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let version = Locked(1)
        server.route("/swr.png") { request in
            let current = version.withLock { $0 }
            let headers = ["ETag": "\"v\(current)\"", "Cache-Control": "max-age=0, stale-while-revalidate=3600"]
            if request.header("If-None-Match") != nil { Thread.sleep(forTimeInterval: 1) }
            return .ok(pngData(UInt8(current * 10)), headers: headers)
        }
        let url = server.url("/swr.png").absoluteString
        let first = try await Tool.run(["fetch", "--json", "--cache-dir", directory.path, url])
        version.withLock { $0 = 2 }
        let second = try await Tool.run(["fetch", "--json", "--cache-dir", directory.path, url])
        #expect(first.status == 0 && second.status == 0)
        #expect(second.stdout.contains("\"source\":\"disk\""), "\(second.stdout)")
        #expect(server.requests(for: "/swr.png").last?.header("If-None-Match") == "\"v1\"")
        let record = try #require(DiskCache(directory: directory).record(forKey: ImageCacheKey.originalRecordName(url)))
        #expect(try ImageDecoders.Registry.shared.decode(record.data).bitmap[0, 0].r == 20)
    }

    /// `--header` sends its fields with every request, as curl's does, the last of a
    /// name winning; one that is no header field is a usage error before any load.
    @Test func headersGoWithEveryRequest() async throws {
        defer { server.stop() }
        let urls = (0..<2).map { server.url("/\($0).png").absoluteString }
        let result = try await Tool.run(
            ["fetch", "--no-disk-cache", "--header", "Authorization: Bearer one", "--header=X-Trace:  7 ",
             "--header", "authorization: Bearer two"] + urls)
        #expect(result.status == 0, "\(result.stderr)")
        for n in 0..<2 {
            let request = try #require(server.requests(for: "/\(n).png").first)
            #expect(request.headers["authorization"] == "Bearer two")
            #expect(request.headers["x-trace"] == "7")
        }
        for bad in ["NoColon", ": no name", "Bad Name: x", "X-Split: a\r\nInjected: 1"] {
            let refused = try await Tool.run(["fetch", "--no-disk-cache", "--header", bad, urls[0]])
            #expect(refused.status == 2 && refused.stderr.contains("--header"), "\(bad): \(refused.stderr)")
        }
        #expect(server.count(for: "/0.png") == 1)
    }

    @Test func badUsageExitsTwo() async throws {
        defer { server.stop() }
        for arguments in [["fetch"], ["fetch", "--concurrency", "0", "http://x/"], ["fetch", "--timeout", "soon", "http://x/"],
                          ["fetch", "--input", "/nonexistent/list.txt"], ["fetch", "--bogus"],
                          ["fetch", "--no-disk-cache", "--cache-dir", "/tmp/x", "http://x/"], ["fetch", "--events", "http://x/"]] {
            let result = try await Tool.run(arguments)
            #expect(result.status == 2, "\(arguments)")
        }
    }

    /// Any length of timeout works: an absurd one, or none at all.
    @Test(arguments: ["1e19", "inf"])
    func anyTimeoutWorks(timeout: String) async throws {
        defer { server.stop() }
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--timeout", timeout, server.url("/0.png").absoluteString])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A cache directory that cannot be one is said once; the loads go on without it.
    @Test func anUnusableCacheDirectoryIsSaidOnce() async throws {
        defer { server.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-not-a-dir-\(UUID())")
        try Data("x".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let urls = (0..<3).map { server.url("/\($0).png").absoluteString }
        let result = try await Tool.run(["fetch", "--cache-dir", file.path] + urls)
        #expect(result.status == 0)
        #expect(result.stderrLines == ["imago: the disk cache cannot be used ('\(file.path)' is not a directory); nothing will be kept on disk"],
                "\(result.stderr)")
    }

    @Test func aFailureLineNamesItsURLOnce() async throws {
        defer { server.stop() }
        let url = server.url("/missing.png").absoluteString
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--retries", "0", url])
        #expect(result.status == 1)
        let lines = result.stderrLines
        #expect(lines.count == 1 && lines[0].components(separatedBy: url).count == 2, "\(result.stderr)")
        #expect(lines.first?.contains("HTTP 404") == true)
        #expect(lines.first?.hasPrefix("imago: \(url): ") == true)
    }

    /// A file path is taken where a URL is, as `imago hash` takes one: absolute,
    /// relative to the working directory, with a space in it. A word that names no
    /// file is reported as a missing file, and a URL of a scheme the loader does not
    /// take as that.
    @Test func filePathsLoadAsFileURLsDo() async throws {
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fetch-paths-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try pngData(40, width: 32, height: 8).write(to: folder.appendingPathComponent("a photo.png"))
        let b = folder.appendingPathComponent("b.png")
        try pngData(80, width: 32, height: 8).write(to: b)
        let inputs = [b.path, "a photo.png", "./b.png", b.absoluteString, "not here", "ftp://example.com/c.png"]
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json"] + inputs, directory: folder)
        #expect(result.status == 1)
        let records = try result.stdoutLines.dropLast().map {
            try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(records.count == inputs.count)
        for input in inputs.prefix(4) {
            let record = records.first { $0["url"] as? String == input }
            #expect(record?["ok"] as? Bool == true && record?["width"] as? Int == 32, "\(input): \(String(describing: record))")
        }
        let missing = records.first { $0["url"] as? String == "not here" }?["error"] as? String
        #expect(missing?.hasSuffix("no such file") == true, "\(String(describing: missing))")
        let foreign = records.first { $0["url"] as? String == "ftp://example.com/c.png" }?["error"] as? String
        #expect(foreign?.contains("is not a URL the data loader takes") == true, "\(String(describing: foreign))")
    }

    @Test func retriesAreCountedAmongTheTransfers() async throws {
        defer { server.stop() }
        // Fails twice with 503, then answers.
        let attempts = Locked(0)
        server.route("/flaky.png") { _ in
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt <= 2 ? .text("busy", status: 503) : .ok(pngData(7))
        }
        let urls = [server.url("/flaky.png").absoluteString, server.url("/0.png").absoluteString]
        let human = try await Tool.run(["fetch", "--no-disk-cache", "--retries", "3"] + urls)
        #expect(human.status == 0, "\(human.stderr)")
        #expect(human.stdout.contains("in 4 transfers (2 retries)"), "\(human.stdout)")
        attempts.withLock { $0 = 0 }
        let json = try await Tool.run(["fetch", "--no-disk-cache", "--retries", "3", "--json"] + urls)
        let summary = try #require(JSONSerialization.jsonObject(with: Data(json.stdoutLines.last!.utf8)) as? [String: Any])["summary"] as? [String: Any]
        #expect(summary?["transfers"] as? Int == 4 && summary?["retries"] as? Int == 2, "\(json.stdout)")
    }

    /// A transfer cut short is tried again as a failed one is, and counted so: the
    /// loader asks for cut bodies (to resume them), so it comes back as a response.
    @Test func retriesOfTransfersCutShortAreCounted() async throws {
        defer { server.stop() }
        let jpeg = TestImages.jpeg
        let attempts = Locked(0)
        server.route("/cut.jpg") { _ in
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt <= 2 ? .truncate(declaredLength: jpeg.count, actualBody: jpeg.prefix(jpeg.count / 2)) : .ok(jpeg)
        }
        let urls = [server.url("/cut.jpg").absoluteString, server.url("/0.png").absoluteString]
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--retries", "3"] + urls)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("in 4 transfers (2 retries)"), "\(result.stdout)")
    }

    @Test func foundationLeavesNoEmptyCacheFolders() async throws {
        defer { server.stop() }
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("imago-home-\(UUID())")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        let result = try await Tool.run(
            ["fetch", "--no-disk-cache", server.url("/0.png").absoluteString],
            environment: ["HOME": home.path, "XDG_CACHE_HOME": nil])
        #expect(result.status == 0, "\(result.stderr)")
        let caches = home.appendingPathComponent(".cache")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: caches.path)) ?? []
        #expect(!left.contains("org.swift.foundation.URLCache"), "\(left)")
    }
}
