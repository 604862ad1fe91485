#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What a decode may spend: the scans a JPEG may have, the time any decode may
/// take, enforced inside the codec so that a small file made to be slow cannot hold
/// a core, and the memory it may hold, counted before any pixel buffer exists.
@Suite struct DecodeBudgetTests {
    /// A progressive grayscale JPEG of `side`² whose `scans` scans are all empty: 10
    /// bytes each, yet libjpeg passes over every block of the image for each.
    static func emptyScansJPEG(side: Int, scans: Int) -> Data {
        var bytes: [UInt8] = [0xFF, 0xD8]
        bytes += [0xFF, 0xDB, 0x00, 0x43, 0x00] + [UInt8](repeating: 1, count: 64)
        bytes += [0xFF, 0xC2, 0x00, 0x0B, 0x08, UInt8(side >> 8), UInt8(side & 0xFF), UInt8(side >> 8), UInt8(side & 0xFF),
                  0x01, 0x01, 0x11, 0x00]
        // One DC code: symbol 0 (no difference), one bit long.
        bytes += [0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01] + [UInt8](repeating: 0, count: 15) + [0x00]
        for _ in 0..<scans {
            bytes += [0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00]
        }
        bytes += [0xFF, 0xD9]
        return Data(bytes)
    }

    static let sizes: [(side: Int, thumbnail: Int?)] = [(8192, nil), (8192, 256), (1024, nil), (1024, 256)]

    /// 65,535 empty scans, full size and as a thumbnail, at 8192² (four minutes of a
    /// core without a limit) and 1024²: refused by the scan limit, in a few
    /// milliseconds, before libjpeg has read a scan.
    @Test(arguments: sizes.indices)
    func aJPEGOfTensOfThousandsOfEmptyScansIsRefusedByTheScanLimit(_ index: Int) throws {
        let (side, thumbnail) = Self.sizes[index]
        let data = Self.emptyScansJPEG(side: side, scans: 65_535)
        var options = DecodingOptions()
        options.targetSize = thumbnail.map { .thumbnail($0) }
        let limit = DecodingOptions.defaultMaximumScanCount
        let elapsed = threadCPUTime {
            #expect(throws: ImagoError.tooManyScans(count: 65_535, limit: limit)) {
                try ImageDecoders.Registry.shared.decode(data, options: options)
            }
        }
        print("\(side)² JPEG of 65,535 empty scans (\(data.count / 1024) KB), \(thumbnail.map { "\($0) px thumbnail" } ?? "full size"): refused in \(elapsed) of CPU time")
        #expect(elapsed < .seconds(2))
        #expect(ImagoError.tooManyScans(count: 65_535, limit: limit).description
            == "the JPEG has too many scans to decode: 65535 exceeds the limit of \(limit)")
    }

    /// Within the limit the scans decode: the limit counts scans, it does not refuse
    /// progressive files.
    @Test func scansWithinTheLimitDecode() throws {
        let data = Self.emptyScansJPEG(side: 64, scans: DecodingOptions.defaultMaximumScanCount)
        let image = try ImageDecoders.JPEG().decode(data, options: DecodingOptions())
        #expect(image.width == 64 && image.height == 64)
        var options = DecodingOptions()
        options.maximumScanCount = 10
        #expect(throws: ImagoError.tooManyScans(count: DecodingOptions.defaultMaximumScanCount, limit: 10)) {
            try ImageDecoders.JPEG().decode(data, options: options)
        }
    }

    /// With the scan limit (and the memory budget, which an 8192² thumbnail's
    /// coefficients exceed) lifted, the same files are stopped by the decode's time
    /// limit in the middle of libjpeg's work, full size and as a thumbnail.
    @Test(arguments: sizes.indices)
    func theTimeLimitStopsLibjpegInTheMiddle(_ index: Int) throws {
        let (side, thumbnail) = Self.sizes[index]
        let data = Self.emptyScansJPEG(side: side, scans: 65_535)
        var options = DecodingOptions()
        options.targetSize = thumbnail.map { .thumbnail($0) }
        options.maximumScanCount = .max
        options.memoryBudget = .max
        options.timeout = 0.25
        let elapsed = threadCPUTime {
            #expect(throws: ImagoError.decodingTimedOut(format: .jpeg, seconds: 0.25)) {
                try ImageDecoders.Registry.shared.decode(data, options: options)
            }
        }
        print("\(side)² JPEG of 65,535 empty scans, \(thumbnail.map { "\($0) px thumbnail" } ?? "full size"), scan limit lifted: stopped by a 0.25 s time limit after \(elapsed) of CPU time")
        #expect(elapsed < .seconds(2))
        #expect(ImagoError.decodingTimedOut(format: .jpeg, seconds: 0.25).description == "JPEG decoding stopped: not done within 0.25 s")
    }

    /// A time limit that is not reached changes nothing.
    @Test func anAmpleTimeLimitLeavesTheImageAlone() throws {
        let data = try Self.photo()
        var options = DecodingOptions()
        options.timeout = 600
        #expect(try ImageDecoders.JPEG().decode(data, options: options).bitmap == ImageDecoders.JPEG().decode(data, options: DecodingOptions()).bitmap)
    }

    /// A loader gives each decode what is left of the load's `loadingTimeout` as the
    /// decode's own limit.
    @Test func aLoaderPassesItsTimeoutToTheDecoder() async throws {
        let seen = Locked<[Double?]>([])
        let registry = ImageDecoders.Registry(decoders: [TimeoutRecordingDecoder(seen: seen)])
        var configuration = ImageLoader.Configuration(diskCache: nil)
        configuration.decoders = registry
        let loader = ImageLoader(configuration: configuration, cache: nil)
        // Long enough that a loaded machine never times the load out before its decode.
        loader.loadingTimeout = 120
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-budget-\(UUID().uuidString).jpg")
        try Self.photo().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await loader.image(for: file)
        let given = try #require(seen.withLock { $0 }.first ?? nil)
        #expect(given > 0 && given <= 120, "\(given)")
    }

    // MARK: The memory budget

    /// A picture of 2400×1800 (over `ScaledCanvas.largestFullCanvas`), opaque.
    static let largePicture = InterlacedPNG.picture(width: 2400, height: 1800)

    /// An Adam7 PNG's thumbnail is summed pass by pass into the resampler's average:
    /// the same pixels, exactly, as the same picture stored without interlace gives,
    /// fit, fill and a larger thumbnail; never the image itself.
    @Test func anInterlacedPNGThumbnailEqualsTheNonInterlacedOne() async throws {
        let results = try await offThePool {
            let interlaced = InterlacedPNG.encode(Self.largePicture, chunkSize: 1 << 20)
            let plain = try ImageEncoders.PNG().encode(Self.largePicture)
            return try [TargetSize.thumbnail(256), .thumbnail(400), TargetSize(width: 90, height: 160, contentMode: .aspectFill)].map { target in
                var options = DecodingOptions(targetSize: target)
                // Less than the 17 MB picture: only the passes summed fit.
                options.memoryBudget = 12 << 20
                let streamed = try ImageDecoders.PNG().decode(interlaced, options: options).bitmap
                return (target, streamed, try ImageDecoders.PNG().decode(plain, options: DecodingOptions(targetSize: target)).bitmap)
            }
        }
        for (target, streamed, reference) in results {
            #expect(streamed == reference, "\(target)")
        }
    }

    /// A budget smaller than any way through the file is refused, naming it: the
    /// interlaced PNG at full size and as a thumbnail under a budget too small even
    /// for the sums.
    @Test func anInterlacedPNGOverTheBudgetIsRefused() async throws {
        let data = try await offThePool { InterlacedPNG.encode(Self.largePicture, chunkSize: 1 << 20) }
        var options = DecodingOptions()
        options.memoryBudget = 8 << 20
        #expect(throws: ImagoError.overMemoryBudget(format: .png, bytes: 2400 * 1800 * 4, budget: 8 << 20)) {
            try ImageDecoders.PNG().decode(data, options: options)
        }
        options.targetSize = .thumbnail(256)
        options.memoryBudget = 1 << 20
        #expect { try ImageDecoders.PNG().decode(data, options: options) } throws: { error in
            guard case .overMemoryBudget(.png, let bytes, 1 << 20) = error as? ImagoError else { return false }
            return bytes > 1 << 20 && bytes < 8 << 20
        }
        #expect(ImagoError.overMemoryBudget(format: .png, bytes: 805_306_368, budget: 64 << 20).description
            == "PNG decoding would need 768 MiB of memory, over the decode's budget of 64 MiB")
    }

    /// A GIF whose one frame is interlaced and covers a screen over
    /// `ScaledCanvas.largestFullCanvas` is composited at the thumbnail's scale, its
    /// rows summed as they come: the pixels of the same frame stored in order.
    @Test func anInterlacedGIFThumbnailEqualsTheNonInterlacedOne() async throws {
        let side = 2100
        let (interlaced, plain) = try await offThePool {
            let indices = (0..<side * side).map { i -> UInt8 in UInt8((i % side / 50 + i / side / 70) % 4) }
            let thumbnails = try [true, false].map { interlaced in
                var gif = TestGIF(width: side, height: side)
                gif.frames.append(.init(left: 0, top: 0, width: side, height: side, indices: indices, interlaced: interlaced))
                return try ImageDecoders.GIF().decode(Data(gif.encode()), options: DecodingOptions(targetSize: .thumbnail(256))).bitmap
            }
            return (thumbnails[0], thumbnails[1])
        }
        #expect(interlaced.width == 256 && interlaced.height == 256)
        #expect(interlaced == plain)
    }

    /// A TIFF page in a Deflate strip of nearly all its rows (the test writer
    /// lays out two strips or more), too large to hold as a band within the budget,
    /// is read a scanline at a time into the thumbnail, which equals the picture
    /// fitted; under a budget too small for a scanline it is refused.
    @Test func aSingleStripTIFFIsReadByScanlines() throws {
        let picture = InterlacedPNG.picture(width: 700, height: 450)
        let data = ThumbnailMemoryTests.rgbTIFF(width: 700, height: 450, rowsPerStrip: 449, compression: 8) { rows in
            Self.storedZlib(rows.flatMap { y in (0..<700).flatMap { x in [picture[x, y].r, picture[x, y].g, picture[x, y].b] } })
        }
        #expect(try ImageDecoders.TIFF().decode(data, options: DecodingOptions()).bitmap == picture)
        for target in [TargetSize.thumbnail(256), TargetSize(width: 90, height: 160, contentMode: .aspectFill)] {
            var options = DecodingOptions(targetSize: target)
            // The band: 1.3 MB of RGBA, the strip's 945 KB decoded and as stored.
            options.memoryBudget = 2 << 20
            #expect(try ImageDecoders.TIFF().decode(data, options: options).bitmap == picture.fitted(to: target), "\(target)")
        }
        var options = DecodingOptions(targetSize: .thumbnail(256))
        options.memoryBudget = 512 << 10
        #expect { try ImageDecoders.TIFF().decode(data, options: options) } throws: { error in
            if case .overMemoryBudget(.tiff, _, 512 << 10) = error as? ImagoError { return true }
            return false
        }
    }

    /// A zlib stream of `bytes` in stored blocks: Deflate with nothing compressed.
    static func storedZlib(_ bytes: [UInt8]) -> [UInt8] {
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65535, bytes.count - offset)
            zlib += [offset + count == bytes.count ? 1 : 0, UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8(~count >> 8 & 0xFF)]
            zlib += bytes[offset..<offset + count]
            offset += count
        } while offset < bytes.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65521
            b = (b + a) % 65521
        }
        return zlib + ThumbnailMemoryTests.bigEndian(Int(b << 16 | a))
    }

    /// A progressive JPEG's coefficients are counted before libjpeg allocates them:
    /// 2 bytes a sample of the whole image at any scale, so an 11584² grey picture's
    /// thumbnail needs 256 MiB and is refused under the thumbnail budget, a 4:4:4 one
    /// three times that; a baseline decode at 1/8 scale holds no coefficients.
    @Test func aProgressiveJPEGsCoefficientsCountAgainstTheBudget() throws {
        let grey = Self.emptyScansJPEG(side: 11_584, scans: 10)
        #expect { try ImageDecoders.JPEG().decode(grey, options: DecodingOptions(targetSize: .thumbnail(256))) } throws: { error in
            guard case .overMemoryBudget(.jpeg, let bytes, DecodingOptions.defaultThumbnailMemoryBudget) = error as? ImagoError else { return false }
            return bytes >= 1448 * 1448 * 128
        }
        // Within the budget the same kind of file decodes.
        let small = Self.emptyScansJPEG(side: 1024, scans: 10)
        #expect(try ImageDecoders.JPEG().decode(small, options: DecodingOptions(targetSize: .thumbnail(256))).bitmap.width == 256)
        var options = DecodingOptions(targetSize: .thumbnail(256))
        options.memoryBudget = 1 << 20
        #expect(throws: ImagoError.overMemoryBudget(format: .jpeg, bytes: 128 * 128 * 128 + 256 * 256 * 4 * 2, budget: 1 << 20)) {
            try ImageDecoders.JPEG().decode(small, options: options)
        }
    }

    /// An animation on an 11000² canvas at full size: libwebp's two canvases, the
    /// frame copied out and the first frame kept are 1.9 GB, over the full-size
    /// budget the pixel limit gives; refused before libwebp allocates.
    @Test func aFullSizeAnimationOverTheBudgetIsRefused() async throws {
        let data = try await offThePool { try ThumbnailMemoryTests.largeCanvasWebP(side: 11_000, frameSide: 1000) }
        let options = DecodingOptions()
        #expect(throws: ImagoError.overMemoryBudget(format: .webp, bytes: 11_000 * 11_000 * 16, budget: DecodingOptions.defaultMaximumPixelCount * 8)) {
            try ImageDecoders.WebP().decode(data, options: options)
        }
    }

    /// A loader gives each decode its configuration's budget.
    @Test func aLoaderPassesItsMemoryBudgetToTheDecoder() async throws {
        let seen = Locked<[Double?]>([])
        let budgets = Locked<[Int?]>([])
        let registry = ImageDecoders.Registry(decoders: [TimeoutRecordingDecoder(seen: seen, budgets: budgets)])
        var configuration = ImageLoader.Configuration(diskCache: nil)
        configuration.decoders = registry
        configuration.decodeMemoryBudget = 5 << 20
        let loader = ImageLoader(configuration: configuration, cache: nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-budget-\(UUID().uuidString).jpg")
        try Self.photo().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await loader.image(for: file)
        #expect(budgets.withLock { $0 } == [5 << 20])
    }

    static func photo() throws -> Data {
        try ImageEncoders.JPEG(quality: 90, progressive: true).encode(InterlacedPNG.picture(width: 320, height: 240))
    }
}

/// Decodes JPEG as the built-in decoder does, noting the time limit it was given.
private struct TimeoutRecordingDecoder: ImageDecoding {
    let seen: Locked<[Double?]>
    var budgets: Locked<[Int?]>? = nil

    func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .jpeg }

    func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        seen.withLock { $0.append(options.timeout) }
        budgets?.withLock { $0.append(options.memoryBudget) }
        return try ImageDecoders.JPEG().decode(data, options: options)
    }
}
#endif
