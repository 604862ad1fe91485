#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// What a decode may spend: the scans a JPEG may have, and the time any decode may
/// take, enforced inside the codec so that a small file made to be slow cannot hold
/// a core.
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

    /// A loader gives each decode its `loadingTimeout` as the decode's own limit.
    @Test func aLoaderPassesItsTimeoutToTheDecoder() async throws {
        let seen = Locked<[Double?]>([])
        let registry = ImageDecoders.Registry(decoders: [TimeoutRecordingDecoder(seen: seen)])
        var configuration = ImageLoader.Configuration(diskCache: nil)
        configuration.decoders = registry
        let loader = ImageLoader(configuration: configuration, cache: nil)
        loader.loadingTimeout = 7
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-budget-\(UUID().uuidString).jpg")
        try Self.photo().write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try await loader.image(for: file)
        #expect(seen.withLock { $0 } == [7])
    }

    static func photo() throws -> Data {
        try ImageEncoders.JPEG(quality: 90, progressive: true).encode(InterlacedPNG.picture(width: 320, height: 240))
    }
}

/// Decodes JPEG as the built-in decoder does, noting the time limit it was given.
private struct TimeoutRecordingDecoder: ImageDecoding {
    let seen: Locked<[Double?]>

    func canDecode(_ data: Data, format: ImageFormat?) -> Bool { format == .jpeg }

    func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        seen.withLock { $0.append(options.timeout) }
        return try ImageDecoders.JPEG().decode(data, options: options)
    }
}
#endif
