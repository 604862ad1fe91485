#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Thumbnails whose memory follows the output, not the source: rows streamed into
/// the resampler as the codec makes them, and a container's claimed size never
/// trusted over its frame's. Peaks are measured in a fresh `imago` process; the
/// large decodes and the hostile files are made off the concurrency pool, which has
/// a thread per core for the whole suite.
/// The sanitizers' allocators and shadow memory make a process's peak meaningless.
private let underSanitizer = ProcessInfo.processInfo.environment["IMAGO_SANITIZER"] != nil

@Suite struct ThumbnailMemoryTests {
    // MARK: PNG rows into the resampler

    /// A thumbnail made from libpng's rows as they come equals the whole image
    /// decoded and then fitted, with and without alpha, fit and fill, and for a file
    /// cut short (the rows missing transparent in both).
    @Test(arguments: [false, true])
    func streamedPNGThumbnailsEqualTheWholeDecodeFitted(_ alpha: Bool) async throws {
        let targets = [TargetSize.thumbnail(256), .thumbnail(500), TargetSize(width: 90, height: 160, contentMode: .aspectFill), .thumbnail(3)]
        let (whole, pairs, cut) = try await offThePool {
            let picture = Self.picture(width: 1200, height: 700, alpha: alpha)
            let data = try ImageEncoders.PNG().encode(picture)
            let whole = try ImageDecoders.PNG().decode(data, options: DecodingOptions())
            let pairs = try targets.map { target in
                (try ImageDecoders.PNG().decode(data, options: DecodingOptions(targetSize: target)).bitmap, whole.bitmap.fitted(to: target))
            }
            let cut = data.prefix(data.count * 2 / 3)
            let partial = try ImageDecoders.PNG().decode(cut, options: DecodingOptions())
            let streamed = try ImageDecoders.PNG().decode(cut, options: DecodingOptions(targetSize: .thumbnail(256)))
            return (whole.bitmap == picture, pairs, (partial.isPartial && streamed.isPartial, streamed.bitmap == partial.bitmap.fitted(to: .thumbnail(256))))
        }
        #expect(whole)
        for (target, (streamed, fitted)) in zip(targets, pairs) { #expect(streamed == fitted, "\(target)") }
        #expect(cut.0 && cut.1)
    }

    /// An interlaced file, whose rows come in seven passes, still decodes whole and
    /// then fits.
    @Test func interlacedPNGThumbnailsStillFit() throws {
        let picture = InterlacedPNG.picture(width: 600, height: 400)
        let data = InterlacedPNG.encode(picture)
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: .thumbnail(256)))
        #expect(thumbnail.bitmap == picture.fitted(to: .thumbnail(256)))
    }

    /// The time limit stops libpng at a row.
    @Test func theTimeLimitStopsLibpng() async throws {
        let data = try await offThePool { Self.hugeBlackPNG }
        var options = DecodingOptions()
        options.timeout = 0.05
        for target in [nil, TargetSize.thumbnail(256)] {
            options.targetSize = target
            #expect(throws: ImagoError.decodingTimedOut(format: .png, seconds: 0.05)) {
                try ImageDecoders.PNG().decode(data, options: options)
            }
        }
    }

    /// A 256 px thumbnail of an 11000² PNG (an all-black image whose rows compress
    /// to almost nothing): its canvas would be 484 MB; the process peaks far lower.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aPNGThumbnailOfAnElevenThousandPixelSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("huge.png")
        try await offThePool { try Self.hugeBlackPNG.write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of an 11000² PNG (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest; its canvas is 461 MB)")
        #expect(peak < 128 * 1024)
    }

    // MARK: TIFF strips into the resampler

    /// A thumbnail made a strip at a time equals the page decoded and then fitted:
    /// strips of 7 rows, whose bands the resampler's blocks do not line up with, and
    /// every fixture (tiles, alpha, the layouts libtiff converts).
    @Test func stripTIFFThumbnailsEqualTheWholeDecodeFitted() throws {
        let picture = InterlacedPNG.picture(width: 700, height: 450)
        let data = Self.stripTIFF(picture, rowsPerStrip: 7)
        #expect(try ImageDecoders.TIFF().decode(data, options: DecodingOptions()).bitmap == picture)
        for target in [TargetSize.thumbnail(256), .thumbnail(64), TargetSize(width: 90, height: 160, contentMode: .aspectFill)] {
            #expect(try ImageDecoders.TIFF().decode(data, options: DecodingOptions(targetSize: target)).bitmap == picture.fitted(to: target), "\(target)")
        }
        for name in try Fixture.files("tiff", suffix: ".tif") {
            let data = try Fixture.data("tiff/\(name)")
            let whole = try ImageDecoders.TIFF().decode(data, options: DecodingOptions())
            let target = TargetSize.thumbnail(11)
            // Turned files decode whole, turn, then fit (the registry fits them).
            let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
            #expect(thumbnail.bitmap == whole.bitmap.fitted(to: target), "\(name)")
        }
    }

    /// A 256 px thumbnail of an 11000² TIFF in Deflate strips of 16 rows.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aTIFFThumbnailOfAnElevenThousandPixelSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("huge.tif")
        try await offThePool { try Self.blackTIFF(width: 11_000, height: 11_000, rowsPerStrip: 16).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of an 11000² TIFF in 688 strips (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    // MARK: Animated WebP on a large canvas

    /// An animated WebP on a `side`² canvas: frames of `frameSide`² in flat colours,
    /// some half transparent and blended, one disposed to the background, placed
    /// across the canvas (lossless, so their edges are exact).
    static func largeCanvasWebP(side: Int, frameSide: Int) throws -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
            Array(fourCC.utf8) + le(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
        }
        let colours: [(UInt8, UInt8, UInt8, UInt8)] = [(200, 40, 40, 255), (20, 60, 100, 128), (40, 160, 60, 255), (90, 90, 0, 180)]
        var frames: [UInt8] = []
        for (number, colour) in colours.enumerated() {
            let pixels = [UInt8]((0..<frameSide * frameSide).flatMap { _ in [colour.0, colour.1, colour.2, colour.3] })
            let still = try ImageEncoders.WebP(lossless: true).encode(Bitmap(width: frameSide, height: frameSide, pixels: pixels))
            let image = [UInt8](still[12...])
            // Even offsets (the format stores half), stepping across the canvas.
            let offset = (side - frameSide) * number / colours.count / 2 * 2
            let flags: UInt8 = number == 2 ? 0x01 : 0x00  // frame 2 disposed; every frame blended
            frames += chunk("ANMF", le(offset / 2, 3) + le(offset / 2, 3) + le(frameSide - 1, 3) + le(frameSide - 1, 3)
                + le(100, 3) + [flags] + image)
        }
        let body = Array("WEBP".utf8) + chunk("VP8X", [0x12, 0, 0, 0] + le(side - 1, 3) + le(side - 1, 3))
            + chunk("ANIM", [0, 0, 0, 0, 0, 0]) + frames
        return Data(Array("RIFF".utf8) + le(body.count, 4) + body)
    }

    /// Composited at the thumbnail's scale, the frames come out as libwebp's
    /// full-size canvases fitted, but for the pixels along frame edges.
    @Test func aLargeCanvasAnimationIsCompositedAtTheThumbnailsScale() async throws {
        #expect(2400 * 2400 > ScaledCanvas.largestFullCanvas)
        let targets = [TargetSize.thumbnail(256), TargetSize(width: 120, height: 200, contentMode: .aspectFill)]
        let frames = try await offThePool {
            let data = try Self.largeCanvasWebP(side: 2400, frameSide: 900)
            let full = try ImageDecoders.WebP().decode(data, options: DecodingOptions()).frames
            return try targets.map { target in
                let thumbnail = try ImageDecoders.WebP().decode(data, options: DecodingOptions(targetSize: target)).frames
                return zip(thumbnail, full).map { ($0.bitmap, $1.bitmap.fitted(to: target)) }
            }
        }
        for (target, pairs) in zip(targets, frames) {
            #expect(pairs.count == 4)
            for (index, (frame, expected)) in pairs.enumerated() {
                // Within a level but along the frame edges (about 4 % of these
                // pixels), where libwebp's box filter and the resampler's cubic differ.
                #expect(Self.closeFraction(frame, expected) > 0.95, "\(target) frame \(index)")
            }
        }
    }

    /// A 256 px thumbnail of an animation on an 11000² canvas (957 MB when libwebp
    /// composited it at full size) peaks far lower.
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aWebPAnimationThumbnailOnAnElevenThousandPixelCanvasStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("canvas.webp")
        try await offThePool { try Self.largeCanvasWebP(side: 11_000, frameSide: 1000).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of a 4-frame animated WebP on an 11000² canvas (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    // MARK: GIF on a large screen

    /// A GIF on a 2400² screen (over the limit for compositing at full size) whose
    /// frames, their rows in order, go through the resampler to their scaled
    /// rectangles: transparent pixels, a frame cleared and one restored after it
    /// shows. Against the full-size composite fitted, all but the frame edges within
    /// a level; an interlaced frame's rows are summed into its average as they come.
    @Test(arguments: [false, true])
    func aLargeScreenGIFIsCompositedAtTheThumbnailsScale(_ interlaced: Bool) async throws {
        let side = 2400, frameSide = 700
        #expect(side * side > ScaledCanvas.largestFullCanvas)
        let pairs = try await offThePool { try Self.largeScreenGIFFrames(side: side, frameSide: frameSide, interlaced: interlaced) }
        #expect(pairs.count == 4)
        for (index, (frame, expected)) in pairs.enumerated() {
            #expect(Self.closeFraction(frame, expected) > 0.95, "frame \(index)")
        }
    }

    /// Each frame of the GIF's 256 px thumbnail, with the full decode's fitted.
    static func largeScreenGIFFrames(side: Int, frameSide: Int, interlaced: Bool) throws -> [(Bitmap, Bitmap)] {
        var gif = TestGIF(width: side, height: side, loop: 0)
        for number in 0..<4 {
            let offset = (side - frameSide) * number / 4
            // A frame of one colour with a transparent diagonal band (index 0).
            let indices = (0..<frameSide * frameSide).map { i -> UInt8 in
                abs(i % frameSide - i / frameSide) < 40 ? 0 : UInt8(1 + number % 3)
            }
            gif.frames.append(.init(
                left: offset, top: offset / 2, width: frameSide, height: frameSide, indices: indices,
                disposal: number == 1 ? 2 : number == 2 ? 3 : 1, delay: 10, transparent: 0, interlaced: interlaced && number == 3))
        }
        let data = Data(gif.encode())
        let full = try ImageDecoders.GIF().decode(data, options: DecodingOptions())
        let target = TargetSize.thumbnail(256)
        let thumbnail = try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
        return zip(thumbnail.frames, full.frames).map { ($0.bitmap, $1.bitmap.fitted(to: target)) }
    }

    /// A 256 px thumbnail of a two-frame GIF whose frames cover an 11000² screen
    /// (the full-size canvas alone would be 484 MB).
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func aGIFThumbnailOfAnElevenThousandPixelScreenStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("screen.gif")
        try await offThePool { try Self.solidGIF(side: 11_000, colours: [1, 2]).write(to: file) }
        let (rest, peak) = try await Self.peaks(of: file)
        print("peak RSS of a 256 px thumbnail of a 2-frame GIF covering an 11000² screen (\(Self.size(of: file))): \(peak / 1024) MB (\(rest / 1024) MB at rest)")
        #expect(peak < 128 * 1024)
    }

    /// A GIF of `side`² whose frames each fill the screen with one colour of
    /// `TestGIF.basicPalette`, LZW-coded as giflib's encoder codes a run: each code
    /// one pixel longer than the last, so 121 million pixels take 90 KB.
    static func solidGIF(side: Int, colours: [UInt8]) -> Data {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        var file = Array("GIF89a".utf8) + le16(side) + le16(side) + [0xF1, 0, 0]
        file += TestGIF.basicPalette.flatMap { $0 }
        file += [0x21, 0xFF, 11] + Array("NETSCAPE2.0".utf8) + [3, 1, 0, 0, 0]
        let codeSize = 2, clear = 4, end = 5
        for colour in colours {
            file += [0x21, 0xF9, 4, 0x04, 10, 0, 0, 0]
            file += [0x2C] + le16(0) + le16(0) + le16(side) + le16(side) + [0, UInt8(codeSize)]
            var data: [UInt8] = [], accumulator = 0, bitCount = 0
            var running = end + 1, bits = codeSize + 1, limit = 1 << bits
            func output(_ code: Int) {
                accumulator |= code << bitCount
                bitCount += bits
                while bitCount >= 8 {
                    data.append(UInt8(accumulator & 0xFF))
                    accumulator >>= 8
                    bitCount -= 8
                }
                if running >= limit && code <= 4095 && bits < 12 {
                    bits += 1
                    limit = 1 << bits
                }
            }
            // The code of the run of each length the table holds.
            var codes = [Int](repeating: 0, count: 4097)
            codes[1] = Int(colour)
            var longest = 1, current = 1, remaining = side * side - 1
            output(clear)
            while remaining > 0 {
                let absorbed = min(longest - current, remaining)
                current += absorbed
                remaining -= absorbed
                guard remaining > 0 else { break }
                output(codes[current])
                remaining -= 1
                if running >= 4095 {
                    output(clear)
                    (running, bits, limit, longest) = (end + 1, codeSize + 1, 1 << (codeSize + 1), 1)
                } else {
                    codes[current + 1] = running
                    running += 1
                    longest = current + 1
                }
                current = 1
            }
            output(codes[current])
            output(end)
            if bitCount > 0 { data.append(UInt8(accumulator & 0xFF)) }
            for start in stride(from: 0, to: data.count, by: 255) {
                let block = data[start..<min(start + 255, data.count)]
                file += [UInt8(block.count)] + block
            }
            file += [0]
        }
        return Data(file + [0x3B])
    }

    // MARK: A container's claim

    /// A 40×24 AVIF whose `ispe` box claims `side`²: libavif would scale its frame
    /// up to the claim.
    static func lyingAVIF(side: Int) throws -> Data {
        var bytes = [UInt8](try Fixture.data("avif/still-420.avif"))
        let ispe = try #require((0..<bytes.count - 4).first { bytes[$0..<$0 + 4].elementsEqual("ispe".utf8) })
        for (offset, value) in [(8, side), (12, side)] {
            for k in 0..<4 { bytes[ispe + offset + k] = UInt8(truncatingIfNeeded: value >> (24 - 8 * k)) }
        }
        return Data(bytes)
    }

    /// The frame is refused for not being the size the container claims, full size
    /// and as a thumbnail, before any canvas of the claimed size exists.
    @Test func anAVIFFrameSmallerThanItsContainerClaimsIsRefused() throws {
        let data = try Self.lyingAVIF(side: 11_000)
        for target in [nil, TargetSize.thumbnail(256)] {
            let error = #expect(throws: ImagoError.self) {
                try ImageDecoders.Registry.shared.decode(data, options: DecodingOptions(targetSize: target))
            }
            guard case .decodingFailed(.avif, let reason, let codec, _)? = error else {
                Issue.record("unexpected \(String(describing: error))")
                continue
            }
            #expect(reason == "frame 1 is not the 11000×11000 the container claims")
            #expect(codec?.library == "libavif")
        }
    }

    /// The tool refusing that file as a thumbnail peaks near its rest (libavif
    /// scaling it took 684 MB).
    @Test(.disabled(if: underSanitizer, "memory figures mean nothing under a sanitizer")) func anAVIFClaimingElevenThousandPixelsSquareStaysSmall() async throws {
        let folder = try AnimationTests.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("lying.avif")
        try Self.lyingAVIF(side: 11_000).write(to: file)
        let (rest, peak) = try await Self.peaks(of: file, refused: true)
        print("peak RSS of a 256 px thumbnail of a \(Self.size(of: file)) AVIF whose ispe claims 11000² over a 40×24 frame: \(peak / 1024) MB (\(rest / 1024) MB at rest), refused")
        #expect(peak < 128 * 1024)
    }

    // MARK: Support

    /// The tool's peak RSS in KB at rest and making a 256 px thumbnail of `file`,
    /// which must decode (or, with `refused`, must fail).
    static func peaks(of file: URL, refused: Bool = false) async throws -> (rest: Int, peak: Int) {
        let rest = try await Tool.peakMemoryAtRest()
        return (rest, try await Tool.peakMemory(decoding: file, thumbnail: 256, refused: refused))
    }

    /// The share of values within a level of each other.
    static func closeFraction(_ a: Bitmap, _ b: Bitmap) -> Double {
        guard a.width == b.width, a.height == b.height else { return 0 }
        let close = zip(a.pixels, b.pixels).filter { abs(Int($0) - Int($1)) <= 1 }.count
        return Double(close) / Double(a.pixels.count)
    }

    static func size(of file: URL) -> String {
        let bytes = (try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int) ?? 0
        return bytes >= 1 << 20 ? "\(bytes >> 20) MB" : bytes >= 1 << 10 ? "\(bytes >> 10) KB" : "\(bytes)-byte"
    }

    /// Smooth gradients with hard edges, and with `alpha` a transparency ramp.
    static func picture(width: Int, height: Int, alpha: Bool) -> Bitmap {
        let opaque = InterlacedPNG.picture(width: width, height: height)
        guard alpha else { return opaque }
        var pixels = opaque.pixels
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                let a = UInt32((x * 255 / width + y * 64 / height) % 256)
                for c in 0..<3 { pixels[i + c] = UInt8((UInt32(pixels[i + c]) * a + 127) / 255) }
                pixels[i + 3] = UInt8(a)
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// An 11000² black PNG, made once.
    static let hugeBlackPNG = blackPNG(side: 11_000)

    /// An 8-bit RGB PNG of `side`² black pixels, its rows one zlib stream of zeros
    /// (filter bytes included): 2.3 MB for 11000².
    static func blackPNG(side: Int) -> Data {
        var file: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ body: [UInt8]) {
            let typed = Array(type.utf8) + body
            file += bigEndian(body.count) + typed
            file += bigEndian(Int(typed.withUnsafeBytes { CRC32.update(0, $0) }))
        }
        chunk("IHDR", bigEndian(side) + bigEndian(side) + [8, 2, 0, 0, 0])
        chunk("IDAT", zerosZlib(count: side * (1 + side * 3)))
        chunk("IEND", [])
        return Data(file)
    }

    /// An 8-bit RGB TIFF of `width` × `height` black pixels in strips of
    /// `rowsPerStrip` rows, each compressed with Deflate, as Adobe's TIFF allows.
    static func blackTIFF(width: Int, height: Int, rowsPerStrip: Int) -> Data {
        rgbTIFF(width: width, height: height, rowsPerStrip: rowsPerStrip, compression: 8) { rows in
            zerosZlib(count: rows.count * width * 3)
        }
    }

    /// An 8-bit RGB TIFF of `picture` (opaque) in uncompressed strips.
    static func stripTIFF(_ picture: Bitmap, rowsPerStrip: Int) -> Data {
        rgbTIFF(width: picture.width, height: picture.height, rowsPerStrip: rowsPerStrip, compression: 1) { rows in
            rows.flatMap { y in (0..<picture.width).flatMap { x in [picture[x, y].r, picture[x, y].g, picture[x, y].b] } }
        }
    }

    /// A little-endian RGB TIFF whose strips `strip` makes from their rows.
    static func rgbTIFF(width: Int, height: Int, rowsPerStrip: Int, compression: Int, strip: (Range<Int>) -> [UInt8]) -> Data {
        func le(_ value: Int, _ count: Int) -> [UInt8] { (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) } }
        let strips = stride(from: 0, to: height, by: rowsPerStrip).map { strip($0..<min(height, $0 + rowsPerStrip)) }
        // Header, directory, the values too long for an entry, then the strips.
        let entryCount = 10
        let extraStart = 8 + 2 + entryCount * 12 + 4
        let stripsStart = extraStart + 6 + strips.count * 8
        var offsets: [Int] = []
        var position = stripsStart
        for strip in strips {
            offsets.append(position)
            position += strip.count
        }
        let entries: [(tag: Int, type: Int, count: Int, value: [UInt8])] = [
            (256, 4, 1, le(width, 4)), (257, 4, 1, le(height, 4)), (258, 3, 3, le(8, 2) + le(8, 2) + le(8, 2)),
            (259, 3, 1, le(compression, 2)), (262, 3, 1, le(2, 2)), (273, 4, strips.count, offsets.flatMap { le($0, 4) }),
            (277, 3, 1, le(3, 2)), (278, 4, 1, le(rowsPerStrip, 4)), (279, 4, strips.count, strips.flatMap { le($0.count, 4) }),
            (284, 3, 1, le(1, 2)),
        ]
        var file: [UInt8] = Array("II".utf8) + le(42, 2) + le(8, 4) + le(entries.count, 2)
        var extra: [UInt8] = []
        for entry in entries {
            file += le(entry.tag, 2) + le(entry.type, 2) + le(entry.count, 4)
            if entry.value.count <= 4 {
                file += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
            } else {
                file += le(extraStart + extra.count, 4)
                extra += entry.value
            }
        }
        file += le(0, 4) + extra
        precondition(file.count == stripsStart, "TIFF layout")
        for strip in strips { file += strip }
        return Data(file)
    }

    static func bigEndian(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// A zlib stream of `count` zero bytes: one literal zero, then copies of 258
    /// bytes at distance 1 in a fixed-Huffman block, 13 bits each.
    static func zerosZlib(count: Int) -> [UInt8] {
        var deflate: [UInt8] = []
        deflate.reserveCapacity(count / 258 * 13 / 8 + 64)
        var bits: UInt64 = 0, bitCount = 0
        // Huffman codes go most significant bit first into a stream filled from
        // each byte's least significant bit: reversed here.
        func put(_ value: UInt64, _ count: Int, reversed: Bool = false) {
            var v = value
            if reversed {
                v = 0
                for i in 0..<count where value >> i & 1 == 1 { v |= 1 << (count - 1 - i) }
            }
            bits |= v << bitCount
            bitCount += count
            while bitCount >= 8 {
                deflate.append(UInt8(bits & 0xFF))
                bits >>= 8
                bitCount -= 8
            }
        }
        put(1, 1)  // the last block
        put(1, 2)  // fixed Huffman codes
        put(0x30, 8, reversed: true)  // literal 0
        // Length 258 is symbol 285 (8 bits, 11000101), distance 1 is code 0 (5 bits).
        let match: UInt64 = {
            var v: UInt64 = 0
            for i in 0..<8 where 0b1100_0101 >> i & 1 == 1 { v |= 1 << (7 - i) }
            return v
        }()
        var left = count - 1
        while left >= 258 {
            put(match, 13)
            left -= 258
        }
        for _ in 0..<left { put(0x30, 8, reversed: true) }
        put(0, 7)  // end of block
        if bitCount > 0 { put(0, 8 - bitCount) }
        let adler = UInt32(count % 65521) << 16 | 1
        return [0x78, 0x01] + deflate + bigEndian(Int(adler))
    }
}
#endif
