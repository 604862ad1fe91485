import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What values and errors say when printed, logged or shown: a line a person can read,
/// never the pixels; errors in the same words through `localizedDescription`; a
/// load's decoding error naming its URL.
@Suite struct DescriptionTests {
    @Test func bitmapsAndImagesPrintTheirSizeNotTheirPixels() throws {
        let bitmap = Bitmap(width: 512, height: 512, pixels: [UInt8](repeating: 7, count: 512 * 512 * 4))
        #expect(bitmap.description == "512×512 RGBA bitmap")
        #expect(String(reflecting: bitmap) == "Bitmap(512×512, 2048 bytes a row)")

        let still = DecodedImage(bitmap: bitmap, format: .jpeg)
        #expect(still.description == "jpeg 512×512, 1 frame")
        #expect(String(reflecting: still) == "DecodedImage(jpeg 512×512, 1 frame)")
        // Containers print their elements with debugDescription: an array of frames,
        // an optional, a Result.
        #expect(String(describing: still.frames) == "[Frame(512×512 RGBA bitmap for 0 s)]")
        #expect(String(describing: Optional(still)) == "Optional(DecodedImage(jpeg 512×512, 1 frame))")

        let gif = try ImageDecoders.Registry.shared.decode(Data(contentsOf: URL(fileURLWithPath: "Samples/moon.gif")))
        #expect(gif.description == "gif \(gif.width)×\(gif.height), \(gif.frameCount) frames")
        #expect(DecodedImage(bitmap: bitmap, format: .png, isPartial: true).description == "png 512×512, 1 frame, partial")
    }

    @Test func aLoadedImagePrintsInOneLine() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = pngData(40, width: 512, height: 512)
        server.route("/cat.png", data: png, headers: ["Content-Type": "image/png"])
        let loader = ImageLoader(cache: ImageCache())
        let url = server.url("/cat.png")
        let task = loader.task(with: ImageRequest(url: url))
        let result = try #require(await withTimeLimit(120) { await task.value })
        let response = try result.get()
        #expect(response.description == "png 512×512, 1 frame, from network")
        #expect(String(reflecting: response) == "ImageResponse(png 512×512, 1 frame, from network, \(url.absoluteString))")
        // What `print(result)` writes: one short line, not a million pixels.
        let printed = String(describing: result)
        #expect(printed == "success(ImageResponse(png 512×512, 1 frame, from network, \(url.absoluteString)))")
    }

    @Test(arguments: [
        ImagoError.unsupportedFormat(nil),
        .unsupportedFormat(.svg, url: "https://example.com/a.svg"),
        .decodingFailed(format: .png, reason: "IDAT: CRC error", codec: .init(library: "libpng", message: "IDAT: CRC error")),
        .imageTooLarge(width: 20000, height: 20000, frames: 1, limit: 1 << 27),
        .httpStatus(404, url: "https://example.com/missing.jpg"),
        .network(url: "https://example.com/a.jpg", reason: "connection refused", code: .cannotConnectToHost, errno: 111),
        .timedOut(url: "https://example.com/a.jpg", seconds: 60),
        .cancelled,
    ])
    func errorsReadTheSameThroughLocalizedDescription(_ error: ImagoError) {
        let any: any Error = error
        #expect(any.localizedDescription == error.description)
        #expect(!any.localizedDescription.contains("The operation could not be completed"))
    }

    /// Timeouts say their time as given: a tiny one is not rounded to "0 s".
    @Test func timeoutsSayTheirTime() {
        #expect(ImagoError.timedOut(url: "u", seconds: 60).description == "u: not loaded within 60 s")
        #expect(ImagoError.timedOut(url: "u", seconds: 0.0000001).description == "u: not loaded within 0.0000001 s")
        #expect(ImagoError.decodingTimedOut(format: .png, seconds: 0.25).description.hasSuffix("not done within 0.25 s"))
    }

    /// A decoding error from a decoder has no URL to name; the same error from a load
    /// names the URL, and stays the case it was, so code can still switch on it.
    @Test func aLoadsDecodingErrorNamesItsURL() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        server.route("/page") { _ in .text("<html>a captive portal</html>") }
        let corrupt = try Data(contentsOf: URL(fileURLWithPath: "Samples/corrupt/bad-crc.png"))
        server.route("/bad.png", data: corrupt, headers: ["Content-Type": "image/png"])
        let loader = ImageLoader(cache: ImageCache())
        func failure(_ path: String) async throws -> ImagoError {
            let task = loader.task(with: ImageRequest(url: server.url(path)))
            let result = try #require(await withTimeLimit(120) { await task.value })
            guard case .failure(let error) = result else {
                Issue.record("\(path) decoded")
                return .cancelled
            }
            return error
        }

        #expect(throws: ImagoError.unsupportedFormat(nil)) { try ImageDecoders.Registry.shared.decode(Data("<html>".utf8)) }
        let page = server.url("/page").absoluteString
        let notAnImage = try await failure("/page")
        #expect(notAnImage == .unsupportedFormat(nil, url: page))
        #expect(notAnImage.description == "\(page): the data is not an image in any known format")
        #expect(notAnImage.localizedDescription == notAnImage.description)

        let bad = server.url("/bad.png").absoluteString
        let decoderError = try #require(throws: ImagoError.self) { try ImageDecoders.Registry.shared.decode(corrupt) }
        let loadError = try await failure("/bad.png")
        #expect(loadError == decoderError.naming(URL(string: bad)!))
        guard case .decodingFailed(.png, _, _, nil) = decoderError, case .decodingFailed(.png, _, _, bad?) = loadError else {
            Issue.record("\(decoderError) / \(loadError)")
            return
        }
        #expect(loadError.description == "\(bad): \(decoderError.description)")
    }

    @Test func dataURLsAreNamedByTheirMediaTypeOnly() {
        let error = ImagoError.unsupportedFormat(nil).naming(URL(string: "data:text/plain;base64,aGVsbG8gd29ybGQ=")!)
        #expect(error.description == "data:text/plain;base64,…: the data is not an image in any known format")
    }

    /// A cache opened on a directory that earlier runs filled counts those records at
    /// once: `statistics` waits for the directory's first scan.
    @Test func diskStatisticsCountTheRecordsOnDiskAsSoonAsTheCacheIsOpened() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-statistics-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 3000
        let writer = DiskCache(directory: folder)
        for n in 0..<count { writer.store(Data("record \(n)".utf8), forKey: "key-\(n)") }
        writer.flush()
        let stored = writer.statistics

        let start = ContinuousClock.now
        let reopened = DiskCache(directory: folder)
        let opened = ContinuousClock.now
        let statistics = reopened.statistics
        let counted = ContinuousClock.now
        print("a disk cache of \(count) records: opened in \(opened - start), its statistics read \(counted - opened) later")
        #expect(statistics.count == count)
        #expect(statistics.totalSize == stored.totalSize)
        #expect(reopened.record(forKey: "key-9")?.data == Data("record 9".utf8))
    }
}
