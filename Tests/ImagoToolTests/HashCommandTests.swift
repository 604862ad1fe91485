import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `imago hash` end to end: the real executable on a real file and over HTTP from the
/// test server on 127.0.0.1.
@Suite struct HashCommandTests {
    /// A PNG of the hash tests' gradient, and the hashes the library gives its pixels.
    static func gradientFile() throws -> (url: URL, data: Data) {
        let data = try ImageEncoders.PNG().encode(TestImages.hashGradient)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("imago-hash-\(UUID()).png")
        try data.write(to: url)
        return (url, data)
    }

    @Test func printsTheThumbHashAndTheBlurHashOfAFile() async throws {
        let (file, _) = try Self.gradientFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let plain = try await Tool.run(["hash", file.path])
        #expect(plain.status == 0, "\(plain.stderr)")
        // The reference's hashes of these pixels (PlaceholderHashTests).
        #expect(plain.stdoutLines == ["4RYKNZpwdndwd3h3h2iHd4CACPeI"])
        let both = try await Tool.run(["hash", file.path, "--blurhash"])
        #expect(both.stdoutLines == ["4RYKNZpwdndwd3h3h2iHd4CACPeI", "LxH27]2qwvX7mGWVjsf6gHfifQfj"], "\(both.stderr)")
        let fewer = try await Tool.run(["hash", file.path, "--blurhash", "--components", "1x1"])
        #expect(fewer.stdoutLines.last == "00H27]")
    }

    @Test func loadsAURL() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let (file, data) = try Self.gradientFile()
        defer { try? FileManager.default.removeItem(at: file) }
        server.route("/gradient.png", data: data)
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let result = try await Tool.run(["hash", server.url("/gradient.png").absoluteString, "--blurhash"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdoutLines == ["4RYKNZpwdndwd3h3h2iHd4CACPeI", "LxH27]2qwvX7mGWVjsf6gHfifQfj"])
        let missing = try await Tool.run(["hash", server.url("/missing.png").absoluteString])
        #expect(missing.status == 1 && missing.stdout.isEmpty && missing.stderr.contains("404"), "\(missing.stderr)")
        // Behind a login: the request carries --header's field.
        server.route("/private.png") { request in
            request.header("authorization") == "Bearer t" ? .ok(data) : .text("who are you", status: 401)
        }
        let signedIn = try await Tool.run(["hash", "--header", "Authorization: Bearer t", server.url("/private.png").absoluteString])
        #expect(signedIn.status == 0 && signedIn.stdoutLines == ["4RYKNZpwdndwd3h3h2iHd4CACPeI"], "\(signedIn.stderr)")
        #expect(try await Tool.run(["hash", server.url("/private.png").absoluteString]).status == 1)
        #expect(try await Tool.run(["hash", "--header", "no colon", server.url("/private.png").absoluteString]).status == 2)
    }

    @Test func badInputAndUsage() async throws {
        let corrupt = FileManager.default.temporaryDirectory.appendingPathComponent("imago-hash-\(UUID()).png")
        try Data("not an image".utf8).write(to: corrupt)
        defer { try? FileManager.default.removeItem(at: corrupt) }
        let failed = try await Tool.run(["hash", corrupt.path])
        #expect(failed.status == 1 && failed.stdout.isEmpty && !failed.stderr.isEmpty)
        let absent = try await Tool.run(["hash", "/nonexistent/imago-hash.png"])
        #expect(absent.status == 1 && absent.stderr.contains("/nonexistent/imago-hash.png"))
        #expect(try await Tool.run(["hash"]).status == 2)
        #expect(try await Tool.run(["hash", "a.png", "b.png"]).status == 2)
        #expect(try await Tool.run(["hash", "a.png", "--components", "10x3"]).status == 2)
        let help = try await Tool.run(["--help"])
        #expect(help.stdout.contains("hash"))
        let own = try await Tool.run(["hash", "--help"])
        #expect(own.status == 0 && own.stdout.contains("--blurhash"))
    }
}
