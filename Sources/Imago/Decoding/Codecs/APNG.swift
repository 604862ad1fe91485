#if os(Linux)
import Foundation

/// APNG animation on top of the PNG decoder: each frame's chunks are handed to libpng
/// as a small PNG of their own (the frame's IHDR, the file's shared chunks such as
/// PLTE and tRNS, its `fdAT` data as IDAT), and the frames are composited on a canvas
/// with their dispose and blend operations, as browsers do.
///
/// A malformed animation (chunks out of sequence, a frame outside the canvas, a first
/// frame libpng refuses) leaves the default image, as in browsers that fall back to
/// the still picture; the file itself has already passed libpng in full. Frames are
/// decoded as they are played; a later frame libpng refuses ends the animation at
/// the frame before it.
enum APNG {
    /// One chunk's type and data, located in the file.
    struct Chunk: Sendable {
        let type: String
        let data: Range<Int>
    }

    /// What an `fcTL` chunk says about the frame whose data follows it.
    struct FrameControl: Sendable {
        let width: Int, height: Int, x: Int, y: Int
        let duration: Double
        let dispose: UInt8
        let blend: UInt8
    }

    /// Where everything of an animation is in the file, found by a walk over its
    /// chunks without decoding: what each frame's cursor needs.
    struct Plan: Sendable {
        let width: Int, height: Int
        let ihdr: Chunk
        let shared: [Chunk]
        let frames: [(control: FrameControl, data: [Range<Int>])]
        let plays: Int
    }

    /// The animation with its first frame decoded and the others decoded as they are
    /// played, or nil when the file is not an animation or its animation is malformed
    /// (the default image then stands, as in browsers without APNG support). Throws
    /// only `imageTooLarge` and `tooManyFrames`, from `acTL` and the canvas size, and
    /// `decodingTimedOut` when the first frame is not made by `deadline`.
    static func animation(
        _ data: Data, still: DecodedImage, options: DecodingOptions, deadline: DecodeDeadline
    ) throws(ImagoError) -> DecodedImage? {
        try data.withBytes { bytes throws(ImagoError) -> DecodedImage? in
            // A default image cut short is shown as it is, never animated.
            guard !still.isPartial, let plan = try plan(bytes, options: options) else { return nil }
            let applied = options.appliesOrientation ? still.orientation : .up
            // The fitted size in the stored orientation: frames are scaled, then turned.
            let target = options.targetSize.map { target in
                applied.swapsDimensions
                    ? TargetSize(width: target.height, height: target.width, contentMode: target.contentMode, allowsUpscaling: target.allowsUpscaling)
                    : target
            }
            let pinned = PinnedBytes(bytes)
            let open = { @Sendable () throws(ImagoError) -> any FrameProducing in
                APNGFrameCursor(pinned, plan: plan, orientation: applied, target: target)
            }
            let first: Bitmap
            do throws(ImagoError) {
                guard let made = try APNGFrameCursor(pinned, plan: plan, orientation: applied, target: target, deadline: deadline).nextFrame()
                else { return nil }
                first = made
            } catch {
                if case .decodingTimedOut = error { throw .decodingTimedOut(format: .png, seconds: deadline.seconds) }
                return nil
            }
            let animation = DecodedImage.AnimatedFrames(
                frameCount: plan.frames.count, durations: plan.frames.map(\.control.duration), loopCount: plan.plays,
                width: first.width, height: first.height, retainedCost: pinned.count, open: open)
            return DecodedImage(
                firstFrame: .init(bitmap: first, duration: plan.frames[0].control.duration), animation: animation,
                loopCount: plan.plays, format: .png, orientation: still.orientation)
        }
    }

    /// The animation's layout, or nil when the file is not an animation or its
    /// animation is malformed.
    static func plan(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> Plan? {
        guard let chunks = chunks(bytes), let actl = chunks.first(where: { $0.type == "acTL" }), actl.data.count == 8 else {
            return nil
        }
        guard let ihdr = chunks.first, ihdr.type == "IHDR", ihdr.data.count == 13 else { return nil }
        let width = Int(be32(bytes, ihdr.data.lowerBound)), height = Int(be32(bytes, ihdr.data.lowerBound + 4))
        let declared = Int(be32(bytes, actl.data.lowerBound)), plays = Int(be32(bytes, actl.data.lowerBound + 4))
        let controls = chunks.filter { $0.type == "fcTL" }.count
        guard declared > 0, controls == declared else { return nil }
        try options.checkSize(width: width, height: height, frames: declared)

        // Shared chunks: everything before the first IDAT that describes the pixels.
        let shared = chunks.prefix { $0.type != "IDAT" }.filter {
            !["IHDR", "acTL", "fcTL", "fdAT", "eXIf", "IEND"].contains($0.type)
        }

        // Frames: each fcTL, then its IDAT or fdAT chunks; sequence numbers must count up.
        var pieces: [(FrameControl, [Range<Int>], Bool)] = []
        var sequence: UInt32 = 0
        for chunk in chunks {
            switch chunk.type {
            case "fcTL":
                guard chunk.data.count == 26, be32(bytes, chunk.data.lowerBound) == sequence else { return nil }
                sequence += 1
                let o = chunk.data.lowerBound
                let numerator = Int(be16(bytes, o + 20)), denominator = Int(be16(bytes, o + 22))
                var duration = Double(numerator) / Double(denominator == 0 ? 100 : denominator)
                // As for GIF, browsers show frames of 10 ms or less for 100 ms.
                if duration <= 0.01 { duration = 0.1 }
                let control = FrameControl(
                    width: Int(be32(bytes, o + 4)), height: Int(be32(bytes, o + 8)),
                    x: Int(be32(bytes, o + 12)), y: Int(be32(bytes, o + 16)),
                    duration: duration, dispose: bytes[o + 24], blend: bytes[o + 25])
                guard control.width > 0, control.height > 0, control.x + control.width <= width,
                      control.y + control.height <= height, control.dispose <= 2, control.blend <= 1 else { return nil }
                pieces.append((control, [], false))
            case "IDAT":
                // The default image is the first frame only when an fcTL came before it.
                if let last = pieces.indices.last, pieces.count == 1, pieces[last].1.isEmpty || pieces[last].2 {
                    pieces[last].1.append(chunk.data)
                    pieces[last].2 = true
                }
            case "fdAT":
                guard let last = pieces.indices.last, !pieces[last].2, chunk.data.count > 4,
                      be32(bytes, chunk.data.lowerBound) == sequence else { return nil }
                sequence += 1
                pieces[last].1.append(chunk.data.lowerBound + 4..<chunk.data.upperBound)
            default:
                break
            }
        }
        guard pieces.allSatisfy({ !$0.1.isEmpty }) else { return nil }
        return Plan(width: width, height: height, ihdr: ihdr, shared: shared, frames: pieces.map { ($0.0, $0.1) }, plays: plays)
    }

    /// The chunks of a PNG whose signature has been checked; nil when they do not
    /// tile the data or a chunk's CRC is wrong (libpng does not check the CRC of the
    /// APNG chunks, which it does not know).
    static func chunks(_ bytes: UnsafeBufferPointer<UInt8>) -> [Chunk]? {
        var chunks: [Chunk] = []
        var offset = 8
        while offset + 12 <= bytes.count {
            let length = Int(be32(bytes, offset))
            guard length <= bytes.count - offset - 12 else { return nil }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            let crc = CRC32.update(0, UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[offset + 4..<offset + 8 + length])))
            if ["acTL", "fcTL", "fdAT"].contains(type) && crc != be32(bytes, offset + 8 + length) { return nil }
            chunks.append(Chunk(type: type, data: offset + 8..<offset + 8 + length))
            offset += 12 + length
            if type == "IEND" { break }
        }
        return chunks
    }

    /// A PNG file holding one frame: its size in IHDR, the shared chunks, its data as IDAT.
    static func framePNG(
        _ bytes: UnsafeBufferPointer<UInt8>, ihdr: Chunk, shared: [Chunk], data: [Range<Int>], width: Int, height: Int
    ) -> Data {
        var out = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        func append(_ type: String, _ body: some Collection<UInt8>) {
            let length = UInt32(body.count)
            out.append(contentsOf: [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
            var chunk = Array(type.utf8)
            chunk.append(contentsOf: body)
            out.append(contentsOf: chunk)
            let crc = chunk.withUnsafeBytes { CRC32.update(0, $0) }
            out.append(contentsOf: [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)])
        }
        var header = Array(bytes[ihdr.data])
        for (i, value) in [width, height].enumerated() {
            header[i * 4] = UInt8(value >> 24 & 0xFF)
            header[i * 4 + 1] = UInt8(value >> 16 & 0xFF)
            header[i * 4 + 2] = UInt8(value >> 8 & 0xFF)
            header[i * 4 + 3] = UInt8(value & 0xFF)
        }
        append("IHDR", header)
        for chunk in shared { append(chunk.type, bytes[chunk.data]) }
        for range in data { append("IDAT", bytes[range]) }
        append("IEND", [UInt8]())
        return out
    }

    /// Draws a frame's premultiplied pixels at its offset: replacing what is there
    /// (blend 0) or over it (blend 1).
    static func draw(_ frame: Bitmap, over canvas: inout [UInt8], width: Int, _ control: FrameControl) {
        frame.pixels.withUnsafeBufferPointer { source in
            canvas.withUnsafeMutableBufferPointer { canvas in
                for row in 0..<control.height {
                    let s = row * frame.bytesPerRow, d = ((control.y + row) * width + control.x) * 4
                    if control.blend == 0 {
                        for i in 0..<control.width * 4 { canvas[d + i] = source[s + i] }
                        continue
                    }
                    for x in 0..<control.width {
                        let sp = s + x * 4, dp = d + x * 4
                        let inverse = 255 - Int(source[sp + 3])
                        for c in 0..<4 {
                            let t = Int(canvas[dp + c]) * inverse + 128
                            canvas[dp + c] = UInt8(min(255, Int(source[sp + c]) + (t + (t >> 8)) >> 8))
                        }
                    }
                }
            }
        }
    }

    static func region(_ canvas: [UInt8], width: Int, _ control: FrameControl) -> [UInt8] {
        var saved: [UInt8] = []
        saved.reserveCapacity(control.width * control.height * 4)
        for row in 0..<control.height {
            let d = ((control.y + row) * width + control.x) * 4
            saved.append(contentsOf: canvas[d..<d + control.width * 4])
        }
        return saved
    }

    static func restore(_ saved: [UInt8], into canvas: inout [UInt8], width: Int, _ control: FrameControl) {
        for row in 0..<control.height {
            let d = ((control.y + row) * width + control.x) * 4, s = row * control.width * 4
            canvas.replaceSubrange(d..<d + control.width * 4, with: saved[s..<s + control.width * 4])
        }
    }

    static func be32(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func be16(_ bytes: UnsafeBufferPointer<UInt8>, _ offset: Int) -> UInt16 {
        UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }
}
/// An APNG's frames in order: each decoded by libpng as a small PNG of its own and
/// composited on a canvas kept between frames.
final class APNGFrameCursor: FrameProducing {
    private let storage: PinnedBytes
    private let plan: APNG.Plan
    private let orientation: ImageOrientation
    private let target: TargetSize?
    private var canvas: [UInt8]
    private var index = 0
    /// Stops the first frame's decode with the still's; none for frames played later.
    private let deadline: DecodeDeadline

    init(_ storage: PinnedBytes, plan: APNG.Plan, orientation: ImageOrientation, target: TargetSize?, deadline: DecodeDeadline = .none) {
        self.storage = storage
        self.deadline = deadline
        self.plan = plan
        self.orientation = orientation
        self.target = target
        canvas = [UInt8](repeating: 0, count: plan.width * plan.height * 4)
    }

    func nextFrame() throws(ImagoError) -> Bitmap? {
        guard index < plan.frames.count else { return nil }
        let (control, data) = plan.frames[index]
        let bytes = storage.buffer
        let png = APNG.framePNG(bytes, ihdr: plan.ihdr, shared: plan.shared, data: data, width: control.width, height: control.height)
        var frameOptions = DecodingOptions(maximumPixelCount: plan.width * plan.height, appliesOrientation: false)
        frameOptions.targetSize = nil
        frameOptions.timeout = deadline.secondsLeft
        try deadline.check(.png)
        let frame = try ImageDecoders.PNG().decodeStill(png, options: frameOptions)
        let width = plan.width
        let saved = control.dispose == 2 && index > 0 ? APNG.region(canvas, width: width, control) : nil
        APNG.draw(frame.bitmap, over: &canvas, width: width, control)
        let shown: Bitmap
        if let target {
            // Fitting is a pass over the whole canvas; not begun once time is up.
            try deadline.check(.png)
            shown = canvas.withUnsafeBufferPointer { pixels in
                Resampler.fitted(Resampler.Pixels(base: pixels.baseAddress!, width: width, height: plan.height, bytesPerRow: width * 4), to: target)
            }
        } else {
            shown = Bitmap(width: width, height: plan.height, pixels: canvas)
        }
        if let saved {
            APNG.restore(saved, into: &canvas, width: width, control)
        } else if control.dispose != 0 {
            // Background, and "previous" on the first frame, clear to transparent.
            APNG.restore([UInt8](repeating: 0, count: control.width * control.height * 4), into: &canvas, width: width, control)
        }
        index += 1
        return shown.applying(orientation)
    }
}
#endif
