import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// Repeats of a URL within a run of `imago fetch`: a list naming one image many
/// times asks the server once.
@Suite struct RecentLoadsTests {
    /// A 1400×1000 photo of a shade of its own: ten of them (5.6 MB of pixels each)
    /// are well over the tool's 32 MB memory tier, which listed in turn keeps none.
    static func photo(_ shade: Int) -> Data {
        let width = 1400, height = 1000
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for index in stride(from: 0, to: pixels.count, by: 4) {
            pixels[index] = UInt8(truncatingIfNeeded: index / 4 % width + shade * 20)
            pixels[index + 1] = UInt8(truncatingIfNeeded: index / 4 / width + shade * 7)
            pixels[index + 2] = UInt8(truncatingIfNeeded: shade * 25)
        }
        return try! ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
    }

    private func fetch(_ lines: [String], _ extra: [String] = []) async throws -> (Tool.Result, [String: Any]) {
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("imago-repeats-\(UUID()).txt")
        try lines.joined(separator: "\n").write(to: input, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: input) }
        let result = try await Tool.run(["fetch", "--no-disk-cache", "--json", "--input", input.path] + extra, timeout: 600)
        let summary = result.stdoutLines.last.flatMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }?["summary"] as? [String: Any]
        return (result, summary ?? [:])
    }

    @Test func oneLargePhotoListedManyTimesIsTransferredOnce() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/large.jpg", data: Self.largePhoto)
        let (result, summary) = try await fetch(Array(repeating: server.url("/large.jpg").absoluteString, count: 300))
        #expect(result.status == 0, "\(result.stderr.prefix(1000))")
        #expect(summary["items"] as? Int == 300 && summary["failed"] as? Int == 0, "\(summary)")
        #expect(server.count(for: "/large.jpg") == 1)
    }

    @Test func tenPhotosListedAHundredTimesEachAreTransferredOnceEach() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        for n in 0..<10 { server.route("/\(n).jpg", data: Self.photo(n)) }
        let lines = (0..<100).flatMap { _ in (0..<10).map { server.url("/\($0).jpg").absoluteString } }
        let (result, summary) = try await fetch(lines)
        #expect(result.status == 0, "\(result.stderr.prefix(1000))")
        #expect(summary["items"] as? Int == 1_000 && summary["failed"] as? Int == 0, "\(summary)")
        #expect((0..<10).map { server.count(for: "/\($0).jpg") } == Array(repeating: 1, count: 10))
    }

    @Test func aMissingOrUndecodableImageListedManyTimesIsAskedForOnce() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.logsRequests = false
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        server.route("/page.png") { _ in .text("<html>not an image</html>") }
        let lines = (0..<5_000).flatMap { _ in [server.url("/missing.png").absoluteString, server.url("/page.png").absoluteString] }
        let (result, summary) = try await fetch(lines)
        #expect(result.status == 1)
        #expect(summary["items"] as? Int == 10_000 && summary["failed"] as? Int == 10_000, "\(summary)")
        #expect(server.count(for: "/missing.png") == 1)
        #expect(server.count(for: "/page.png") == 1)
        // Every repeat fails as the first did.
        let errors = result.stdoutLines.filter { $0.contains("/missing.png\"") }.map { $0.contains("HTTP 404") }
        #expect(errors.count == 5_000 && !errors.contains(false), "\(result.stdoutLines.first ?? "")")
    }
}
