#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
import CImagoSystem

/// The JPEG XL decoder against files written by libjxl's `cjxl`
/// (`Fixtures/jxl/make_fixtures.sh`), each checked against `djxl`'s decode of it,
/// made at test time and read back by Imago's PNG decoder: the same library, so
/// equal pixels. The lossless file must give back its source PNG.
@Suite struct JXLDecoderTests {
    static let stills = ["lossless-alpha.jxl", "lossy.jxl", "container.jxl", "orientation-6.jxl", "gray-alpha.jxl"]

    /// `djxl`'s decode of the fixture `name`, premultiplied as Imago's bitmaps are.
    static func reference(_ name: String) throws -> Bitmap {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("imago-jxl-\(UUID()).png")
        defer { try? FileManager.default.removeItem(at: output) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/djxl")
        process.arguments = [Fixture.url("jxl/" + name).path, output.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "djxl failed on \(name)")
        return try ImageDecoders.PNG().decode(try Data(contentsOf: output), options: DecodingOptions()).bitmap
    }

    /// Gradients under noise, as a photo's detail is: most of a lossy file is then
    /// its high frequencies, after the low ones libjxl can show a cut file from.
    static func photoLike(width: Int, height: Int) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        var state: UInt32 = 12345
        for y in 0..<height {
            for x in 0..<width {
                state = state &* 1_103_515_245 &+ 12345
                let noise = Int(state >> 16 & 31)
                let i = (y * width + x) * 4
                pixels[i] = UInt8(x * 200 / width + noise)
                pixels[i + 1] = UInt8(y * 200 / height + noise)
                pixels[i + 2] = UInt8((x + y) * 120 / (width + height) + 60 + Int(state >> 8 & 15))
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// `bitmap` encoded by `cjxl` with `settings` (`-d 0` lossless, `-d 1` lossy).
    static func encode(_ bitmap: Bitmap, _ settings: [String]) throws -> Data {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-cjxl-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (png, jxl) = (folder.appendingPathComponent("in.png"), folder.appendingPathComponent("out.jxl"))
        try Pixels.png(bitmap).write(to: png)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/cjxl")
        process.arguments = [png.path, jxl.path] + settings
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "cjxl \(settings) failed")
        return try Data(contentsOf: jxl)
    }

    static func decode(_ name: String, _ options: DecodingOptions = DecodingOptions()) throws -> DecodedImage {
        try ImageDecoders.Registry.shared.decode(try Fixture.data("jxl/" + name), options: options)
    }

    @Test(arguments: JXLDecoderTests.stills)
    func decodesLikeDjxl(_ name: String) throws {
        let image = try Self.decode(name)
        let reference = try Self.reference(name)
        #expect(image.format == .jxl && image.frameCount == 1)
        try #require(image.width == reference.width && image.height == reference.height, "\(name): \(image.width)×\(image.height)")
        let difference = image.bitmap.difference(to: reference)
        #expect(difference.maximum == 0, "\(name): off by up to \(difference.maximum)")
        #expect(image.bitmap.isPremultiplied)
    }

    @Test func losslessGivesBackItsSource() throws {
        let image = try Self.decode("lossless-alpha.jxl")
        let source = try Fixture.reference("jxl/rgba.png")
        #expect(image.bitmap.hasAlpha)
        #expect(image.bitmap == source)
        #expect(try Self.decode("container.jxl").bitmap == Fixture.reference("jxl/rgb.png"))
    }

    @Test func aLosslessImageInAnotherColourSpaceComesOutInSRGB() throws {
        // Stored in Adobe RGB with its profile: converted as the PNG it was made from
        // is (through Little CMS), not read as sRGB numbers.
        let image = try Self.decode("lossless-adobe-rgb.jxl")
        let png = try ImageDecoders.PNG().decode(try Fixture.data("jxl/adobe-rgb.png"), options: DecodingOptions()).bitmap
        let unconverted = try Fixture.reference("jxl/rgb.png")
        #expect(image.bitmap.difference(to: png).maximum <= 1)
        #expect(image.bitmap.difference(to: unconverted).maximum > 20)
        #expect(image.notes.isEmpty)
        // An sRGB lossless file takes no conversion: its source, exactly.
        #expect(try Self.decode("container.jxl").bitmap == unconverted)
    }

    /// A gray ramp over the whole 16-bit signal, tagged PQ or HLG in BT.2100 (and
    /// stored as gray): tone mapped from its 16 bits as the PNG, AVIF and HEIF
    /// decoders map theirs (the documented mapping), lossless within a level, lossy
    /// within the codec's error.
    /// Asked for sRGB, libjxl clipped the lossy file's highlights, and the lossless
    /// one's profile through Little CMS put the ramp's middle at 31 of 255 (the
    /// mapping gives 214 there).
    @Test(arguments: [("pq.jxl", false, 1.0), ("hlg.jxl", true, 1.0), ("pq-lossy.jxl", false, 3.0), ("gray-pq.jxl", false, 1.0)])
    func hdrImagesAreToneMappedFromTheirSixteenBits(name: String, hlg: Bool, tolerance: Double) throws {
        let image = try Self.decode(name)
        #expect(image.width == 256 && image.height == 8 && image.notes.isEmpty)
        var worst = 0.0, previous = 0
        for x in 0..<256 {
            let p = image.bitmap[x, 4]
            #expect(Int(max(p.r, p.g, p.b)) - Int(min(p.r, p.g, p.b)) <= 2 && p.a == 255, "\(name) x \(x): gray stays gray")
            let code = (Double(x) / 255 * 65535).rounded() / 65535
            worst = max(worst, abs(Double(p.g) - documentedToneMapping(code, hlg: hlg)))
            #expect(Int(p.g) >= previous - 1, "\(name) x \(x): the ramp goes down")
            previous = Int(p.g)
        }
        #expect(worst <= tolerance, "\(name): the largest difference from the documented mapping: \(worst) levels")
        // Reference white (203 cd/m²: PQ 0.58, HLG 0.75) is a light gray.
        let white = Int(image.bitmap[hlg ? 191 : 148, 4].g)
        #expect((215...235).contains(white), "\(name): reference white at \(white)")
    }

    @Test func isSniffedInBothForms() throws {
        #expect(ImageFormat.detect(try Fixture.data("jxl/lossy.jxl")) == .jxl)
        #expect(try Fixture.data("jxl/lossy.jxl").prefix(2) == Data([0xFF, 0x0A]))
        #expect(ImageFormat.detect(try Fixture.data("jxl/container.jxl")) == .jxl)
        #expect(try Fixture.data("jxl/container.jxl")[4..<8] == Data("JXL ".utf8))
    }

    @Test func theOrientationIsAppliedAndReported() throws {
        let upright = try Self.decode("orientation-6.jxl")
        #expect(upright.orientation == .right && upright.width == 24 && upright.height == 40)
        let stored = try Self.decode("orientation-6.jxl", DecodingOptions(appliesOrientation: false))
        #expect(stored.width == 40 && stored.height == 24)
        #expect(stored.bitmap.applying(.right) == upright.bitmap)
        #expect(try stored.bitmap == Fixture.reference("jxl/rgb.png"))
    }

    /// Three frames of 100, 300 and 100 ms, red, green and blue, from a GIF.
    @Test func animationsGiveEveryFrameWithItsDuration() throws {
        let image = try Self.decode("animated.jxl")
        #expect(image.isAnimated && image.frameCount == 3 && image.loopCount == 0)
        #expect(image.frameDurations == [0.1, 0.3, 0.1])
        let colours: [(UInt8, UInt8, UInt8, UInt8)] = [(255, 0, 0, 255), (0, 255, 0, 255), (0, 0, 255, 255)]
        let frames = image.frames
        try #require(frames.count == 3)
        for (frame, colour) in zip(frames, colours) {
            #expect(frame.bitmap.width == 20 && frame.bitmap.height == 12)
            #expect(frame.bitmap[0, 0] == colour && frame.bitmap[19, 11] == colour)
        }
        #expect(throws: ImagoError.tooManyFrames(count: 3, limit: 2)) {
            try Self.decode("animated.jxl", DecodingOptions(maximumFrameCount: 2))
        }
        // Fitted to a target frame by frame, as it plays.
        let small = try Self.decode("animated.jxl", DecodingOptions(targetSize: .thumbnail(10)))
        #expect(small.width == 10 && small.height == 6 && small.frames.map(\.bitmap.width) == [10, 10, 10])
    }

    @Test func theTargetSizeIsFittedByTheResampler() throws {
        let image = try Self.decode("lossy.jxl", DecodingOptions(targetSize: .thumbnail(20)))
        #expect(image.width == 20 && image.height == 12)
        #expect(image.bitmap == (try Self.decode("lossy.jxl")).bitmap.fitted(to: .thumbnail(20)))
    }

    @Test func thePixelLimitIsCheckedBeforeDecoding() {
        #expect(throws: ImagoError.imageTooLarge(width: 40, height: 24, frames: 1, limit: 500)) {
            try Self.decode("lossy.jxl", DecodingOptions(maximumPixelCount: 500))
        }
        var budget = DecodingOptions()
        budget.memoryBudget = 1000
        // A lossy image: its RGBA and libjxl's 3 bytes a pixel.
        #expect(throws: ImagoError.overMemoryBudget(format: .jxl, bytes: 40 * 24 * 7, budget: 1000)) {
            try Self.decode("lossy.jxl", budget)
        }
    }

    /// Files of one group, cut anywhere, have nothing libjxl can show: a typed error
    /// (the stills' cuts of larger files show what arrived, below).
    @Test(arguments: JXLDecoderTests.stills + ["animated.jxl"])
    func truncatedFilesGetATypedError(_ name: String) throws {
        let data = try Fixture.data("jxl/" + name)
        for length in Set([2, 5, 12, 20, data.count / 3, data.count / 2, data.count - 10, data.count - 1]) where length < data.count {
            let cut = Data(data.prefix(length))
            do {
                let image = try ImageDecoders.JXL().decode(cut, options: DecodingOptions())
                // The frame headers may all have arrived with the first frame: the
                // animation then ends where its data does, as in browsers.
                #expect(name == "animated.jxl" && image.frames.count < 3, "\(name) cut to \(length) decoded in full")
            } catch {
                #expect(error.isDecodingFailure(.jxl), "\(name) cut to \(length): \(error)")
            }
        }
    }

    /// A still cut short shows what arrived, as browsers show it, and says it is
    /// partial: a lossy file the whole picture, blurred, once its low frequencies are
    /// in; a lossless one its groups received, exactly, the rest left out. A cut
    /// before libjxl can show anything is a typed error; an animation's frames are
    /// whole or not shown.
    @Test func aStillCutShortShowsWhatArrived() throws {
        let picture = Self.photoLike(width: 1024, height: 768)
        let lossy = try Self.encode(picture, ["-d", "1", "-e", "3"])
        let whole = try ImageDecoders.JXL().decode(lossy, options: DecodingOptions())
        #expect(!whole.isPartial)
        let half = try ImageDecoders.JXL().decode(Data(lossy.prefix(lossy.count / 2)), options: DecodingOptions())
        #expect(half.isPartial && half.width == 1024 && half.height == 768)
        let blur = half.bitmap.difference(to: whole.bitmap)
        print("a lossy JPEG XL of \(lossy.count) bytes cut in half: off the whole by \(blur.mean) on average, \(blur.maximum) at most")
        #expect(blur.mean < 8)
        #expect(throws: ImagoError.self) { try ImageDecoders.JXL().decode(Data(lossy.prefix(lossy.count / 50)), options: DecodingOptions()) }

        let lossless = try Self.encode(picture, ["-d", "0", "-e", "1"])
        let cut = try ImageDecoders.JXL().decode(Data(lossless.prefix(lossless.count * 2 / 3)), options: DecodingOptions())
        #expect(cut.isPartial && cut.width == 1024)
        // The first row of groups (256 rows) is in, as the source; the last row is not.
        let top = (0..<256).allSatisfy { y in (0..<1024).allSatisfy { x in cut.bitmap[x, y] == picture[x, y] } }
        #expect(top)
        #expect((0..<1024).allSatisfy { cut.bitmap[$0, 767].r == 0 && cut.bitmap[$0, 767].g == 0 })
    }

    @Test func theTargetSizeFitsAPartialImageToo() throws {
        let lossy = try Self.encode(Self.photoLike(width: 1024, height: 768), ["-d", "1", "-e", "3"])
        let half = try ImageDecoders.Registry.shared.decode(Data(lossy.prefix(lossy.count / 2)), options: DecodingOptions(targetSize: .thumbnail(100)))
        #expect(half.isPartial && half.width == 100 && half.height == 75)
    }

    /// libjxl keeps a lossy image with an alpha channel in floats: this 35 KB file of
    /// 2048² took 177 MB (42 bytes a pixel), which the budget now sees before libjxl
    /// decodes; counted as its RGBA alone (16 MiB) it passed any budget.
    @Test func aLossyImageWithAlphaCountsLibjxlsFloats() throws {
        let data = try Fixture.data("jxl/slow/lossy-alpha.jxl")
        var options = DecodingOptions()
        options.memoryBudget = 128 << 20
        #expect(throws: ImagoError.overMemoryBudget(format: .jxl, bytes: 2048 * 2048 * 42, budget: 128 << 20)) {
            try ImageDecoders.JXL().decode(data, options: options)
        }
    }

    @Test func garbageAfterTheSignatureGetsATypedError() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let garbage = Data([0xFF, 0x0A] + (0..<200).map { _ in UInt8.random(in: 0...255, using: &generator) })
            do {
                _ = try ImageDecoders.Registry.shared.decode(garbage)
            } catch {
                switch error {
                case .decodingFailed(format: .jxl, _, _, _), .imageTooLarge, .overMemoryBudget: break
                default: Issue.record("unexpected \(error)")
                }
            }
        }
    }

    /// A file whose basic information reads but whose colour encoding does not (found
    /// by the fuzzer): the decoder, some 4 MB of libjxl's, was kept after each failure.
    @Test func aMalformedColourEncodingFailsWithoutKeepingTheDecoder() throws {
        let data = try Fixture.data("jxl/fuzz-malformed-colour-encoding.jxl")
        func failOnce() {
            #expect(throws: ImagoError.decodingFailed(format: .jxl, reason: "the header is malformed", codec: .init(library: "libjxl", message: "JXL_DEC_ERROR"))) {
                try ImageDecoders.Registry.shared.decode(data)
            }
        }
        // The heap in use, mapped blocks included (libjxl's large buffers are mapped,
        // and untouched pages of them would not show as resident).
        func heapBytes() -> Int { let info = mallinfo2(); return info.uordblks + info.hblkhd }
        failOnce()
        // A kept decoder is 420 MB over 100 failures. Suites running beside this one
        // allocate too, so the growth counts only if each of three tries shows it.
        var growths: [Int] = []
        for _ in 0..<3 {
            let before = heapBytes()
            for _ in 0..<100 { failOnce() }
            growths.append(heapBytes() - before)
            if growths.last! < 200_000_000 { break }
        }
        #expect(growths.last! < 200_000_000, "the heap grew by \(growths) bytes over each 100 failed decodes")
    }

    @Test func aDeadlineThatHasPassedStopsTheDecode() {
        var options = DecodingOptions()
        options.timeout = 0
        #expect(throws: ImagoError.decodingTimedOut(format: .jxl, seconds: 0)) { try Self.decode("lossy.jxl", options) }
    }
}
#endif
