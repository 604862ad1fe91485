import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Progressive previews while downloading: the real test server trickles a
/// progressive JPEG or an interlaced PNG, pausing where a scan or pass ends, through
/// the real loader and codecs.
@Suite struct ProgressivePreviewTests {
    let server = TestServer()
    let loader = ImageLoader(configuration: .init(retryPolicy: .none), cache: ImageCache())

    init() throws {
        try server.start()
    }

    static let picture = InterlacedPNG.picture(width: 320, height: 240)
    static let baseline = (try? ImageEncoders.JPEG(quality: 90).encode(picture)) ?? Data()
    static let interlaced = InterlacedPNG.encode(picture, chunkSize: 2048)

    /// Offsets where each PNG chunk ends.
    static func chunkBoundaries(_ data: Data) -> [Int] {
        let bytes = [UInt8](data)
        var ends: [Int] = [], i = 8
        while i + 8 <= bytes.count {
            i += 12 + (Int(bytes[i]) << 24 | Int(bytes[i + 1]) << 16 | Int(bytes[i + 2]) << 8 | Int(bytes[i + 3]))
            ends.append(i)
        }
        return ends
    }

    /// The previews of `task` as they come, and its result.
    static func collect(_ task: ImageTask) async -> ([ImageResponse], Result<ImageResponse, ImagoError>?) {
        let previews = task.previews
        let collected = await withTimeLimit(60) { () async -> [ImageResponse] in
            var all: [ImageResponse] = []
            for await preview in previews { all.append(preview) }
            return all
        } ?? []
        return (collected, await withTimeLimit(60) { await task.value })
    }

    func routeProgressive(pause: Double = 0.15) -> String {
        server.route("/progressive.jpg") { _ in
            .pieces(TestImages.progressiveJPEG, ends: TestImages.scanBoundaries(TestImages.progressiveJPEG), pause: pause)
        }
        return "/progressive.jpg"
    }

    @Test func aProgressiveJPEGYieldsPreviewsThenTheFinalImage() async throws {
        defer { server.stop() }
        let path = routeProgressive()
        let scans = TestImages.scanBoundaries(TestImages.progressiveJPEG).count
        let task = loader.task(with: ImageRequest(url: server.url(path), options: .progressivePreviews))
        let (previews, result) = await Self.collect(task)
        let final = try #require(try? result?.get())
        let finalImage = final.image
        #expect(!finalImage.isPartial)
        let decodes = loader.pipeline.previewDecodes.withLock { $0 }
        print("a progressive JPEG of \(scans) scans gave \(previews.count) previews from \(decodes) preview decodes")
        #expect(previews.count >= 2 && previews.count <= scans)
        #expect(decodes <= scans)
        // Each preview is partial and at the final size; in order, each is at least
        // as close to the final image as the one before, and none is it yet.
        var previous = Double.infinity
        for preview in previews {
            let image = preview.image
            #expect(image.isPartial && image.width == 320 && image.height == 240)
            let difference = image.bitmap.difference(to: finalImage.bitmap).mean
            #expect(difference <= previous + 0.5)
            previous = difference
        }
        // Previews are never cached; the final image is.
        #expect(loader.cache?.image(forKey: ImageRequest(url: server.url(path)).cacheKey).map { !$0.isPartial } == true)
        #expect(server.count(for: path) == 1)
    }

    @Test func withPreviewsOffThereAreNone() async throws {
        defer { server.stop() }
        let path = routeProgressive(pause: 0.05)
        let task = loader.task(with: ImageRequest(url: server.url(path)))
        let (previews, result) = await Self.collect(task)
        #expect(previews.isEmpty && (try? result?.get()) != nil)
        #expect(loader.pipeline.previewDecodes.withLock { $0 } == 0)
    }

    @Test func aBaselineJPEGGivesNone() async throws {
        defer { server.stop() }
        let jpeg = Self.baseline
        server.route("/baseline.jpg") { _ in .trickle(jpeg, bytesPerChunk: jpeg.count / 8, interval: 0.05) }
        let task = loader.task(with: ImageRequest(url: server.url("/baseline.jpg"), options: .progressivePreviews))
        let (previews, result) = await Self.collect(task)
        #expect(previews.isEmpty && (try? result?.get()) != nil)
        #expect(loader.pipeline.previewDecodes.withLock { $0 } == 0)
    }

    @Test func anInterlacedPNGYieldsAPreviewAboutEachPass() async throws {
        defer { server.stop() }
        let png = Self.interlaced
        server.route("/interlaced.png") { _ in .pieces(png, ends: Self.chunkBoundaries(png), pause: 0.05) }
        let task = loader.task(with: ImageRequest(url: server.url("/interlaced.png"), options: .progressivePreviews))
        let (previews, result) = await Self.collect(task)
        let final = try #require(try? result?.get())
        let decodes = loader.pipeline.previewDecodes.withLock { $0 }
        print("an interlaced PNG in \(Self.chunkBoundaries(png).count) chunks gave \(previews.count) previews from \(decodes) decodes")
        #expect(previews.count >= 2 && decodes <= PreviewScanner.maximumPNGPreviews)
        #expect(final.image.bitmap == Self.picture)
        // The first preview already covers the canvas: the first pass widened.
        let first = try #require(previews.first?.image)
        #expect((0..<320).allSatisfy { first.bitmap[$0, 239].a == 255 })
        #expect(first.isPartial)
    }

    /// Previews are made at the request's size and with its processors.
    @Test func previewsHaveTheRequestsSizeAndProcessors() async throws {
        defer { server.stop() }
        // Scans far enough apart for a preview decode with its processor to keep up,
        // even in a sanitizer's build on a busy machine (at 0.1 s one preview of two
        // was seen there).
        let path = routeProgressive(pause: 0.3)
        let request = ImageRequest(
            url: server.url(path), targetSize: TargetSize(width: 80, height: 80, contentMode: .aspectFill),
            processors: [ImageProcessors.Circle()], options: .progressivePreviews)
        let (previews, result) = await Self.collect(loader.task(with: request))
        #expect((try? result?.get())?.image.width == 80)
        #expect(previews.count >= 2)
        for preview in previews {
            let image = preview.image
            // Circled: the corner is transparent.
            #expect(image.width == 80 && image.height == 80 && image.bitmap[0, 0].a == 0 && image.bitmap[40, 40].a == 255)
        }
    }

    /// Two tasks sharing one transfer both get previews, at their own sizes.
    @Test func coalescedTasksBothGetPreviews() async throws {
        defer { server.stop() }
        // Scans far enough apart for both sizes' preview decodes to keep up, even in a
        // sanitizer's build.
        let path = routeProgressive(pause: 0.3)
        let big = loader.task(with: ImageRequest(url: server.url(path), options: .progressivePreviews))
        let small = loader.task(with: ImageRequest(url: server.url(path), targetSize: TargetSize(width: 64, height: 64), options: .progressivePreviews))
        async let a = Self.collect(big)
        async let b = Self.collect(small)
        let ((bigPreviews, _), (smallPreviews, _)) = await (a, b)
        #expect(bigPreviews.count >= 2 && smallPreviews.count >= 2)
        #expect(bigPreviews.allSatisfy { $0.image.width == 320 } && smallPreviews.allSatisfy { $0.image.width == 64 })
        #expect(server.count(for: path) == 1)
    }

    @Test func cancellingMidwayEndsThePreviews() async throws {
        defer { server.stop() }
        let path = routeProgressive(pause: 0.3)
        let task = loader.task(with: ImageRequest(url: server.url(path), options: .progressivePreviews))
        let previews = task.previews
        let counts = await withTimeLimit(60) { () async -> (before: Int, after: Int) in
            var before = 0, after = 0
            for await _ in previews {
                if task.isFinished { after += 1 } else { before += 1 }
                if before == 1 && after == 0 { task.cancel() }
            }
            return (before, after)
        }
        // The stream ends; at most the one preview already buffered (made before the
        // cancellation) is read after it, and a stream asked for now is over at once.
        let (before, after) = try #require(counts)
        #expect(before == 1 && after <= 1)
        var late = 0
        for await _ in task.previews { late += 1 }
        #expect(late == 0)
        guard case .failure(.cancelled)? = task.result else {
            Issue.record("\(String(describing: task.result))")
            return
        }
    }
}

#if os(Linux)
extension ProgressivePreviewTests {
    /// A JPEG XL trickled in sixteenths gives previews at an eighth, a quarter and a
    /// half of its body (libjxl's rendering of what came: the whole picture, blurred
    /// less each time), then the final image.
    @Test func aJPEGXLYieldsPreviewsThenTheFinalImage() async throws {
        defer { server.stop() }
        let jxl = try JXLDecoderTests.encode(JXLDecoderTests.photoLike(width: 1024, height: 768), ["-d", "1", "-e", "3"])
        let ends = (1...16).map { jxl.count * $0 / 16 }
        server.route("/photo.jxl") { _ in .pieces(jxl, ends: ends, pause: 0.15) }
        let task = loader.task(with: ImageRequest(url: server.url("/photo.jxl"), options: .progressivePreviews))
        let (previews, result) = await Self.collect(task)
        let final = try #require(try? result?.get())
        let decodes = loader.pipeline.previewDecodes.withLock { $0 }
        print("a JPEG XL of \(jxl.count) bytes in 16 pieces gave \(previews.count) previews from \(decodes) preview decodes")
        #expect(previews.count >= 2 && decodes <= PreviewScanner.maximumJXLPreviews)
        #expect(!final.image.isPartial)
        #expect(final.image.bitmap == (try ImageDecoders.JXL().decode(jxl, options: DecodingOptions())).bitmap)
        var previous = Double.infinity
        for preview in previews {
            let image = preview.image
            #expect(image.isPartial && image.width == 1024 && image.height == 768)
            let difference = image.bitmap.difference(to: final.image.bitmap).mean
            #expect(difference <= previous + 0.5 && difference > 0)
            previous = difference
        }
    }
}
#endif
