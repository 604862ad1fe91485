#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The animations of the animation tests, made here: the library's tests (ImagoTests)
/// and the memory measured in the `imago` process (ImagoToolTests, where this file is
/// a symbolic link) use the same files.
extension AnimationTests {
    /// A `side` × `side` GIF of `frames` frames: a full first frame, then a small
    /// patch moving about, with delays of 4 to 6 hundredths.
    static func longGIF(frames count: Int, side: Int) -> Data {
        var gif = TestGIF(width: side, height: side, loop: 0)
        gif.frames = longGIFFrames(frames: count, side: side)
        return Data(gif.encode())
    }

    static func longGIFFrames(frames count: Int, side: Int) -> [TestGIF.Frame] {
        let first = (0..<side * side).map { UInt8(($0 / side / 50 + $0 % side / 50) % 4) }
        var frames: [TestGIF.Frame] = [.init(width: side, height: side, indices: first, delay: 4)]
        let patch = min(10, side)
        for i in 1..<count {
            frames.append(.init(
                left: i * 37 % (side - patch + 1), top: i * 53 % (side - patch + 1), width: patch, height: patch,
                indices: [UInt8](repeating: UInt8(i % 4), count: patch * patch), delay: 4 + i % 3))
        }
        return frames
    }

    /// An animation by name: a fixture's path, or "gif" and "webp" for ones made here.
    static func animation(_ name: String) throws -> Data {
        switch name {
        case "gif":
            return longGIF(frames: 8, side: 90)
        case "webp":
            return try animatedWebP()
        default:
            return try Fixture.data(name)
        }
    }

    /// A four-frame 72×48 animated WebP: two gradients, a pattern of hard edges and a
    /// transparent frame, each coded losslessly by Imago's own encoder and put into an
    /// animation's chunks here, 100 ms a frame, blended over the one before.
    static func animatedWebP() throws -> Data {
        let (width, height) = (72, 48)
        let checks = (0..<height).flatMap { y in
            (0..<width).flatMap { x -> [UInt8] in
                let on = (x / 6 + y / 6) % 2 == 0
                return on ? [UInt8(x * 3), UInt8(y * 5), 0x80, 0xFF] : [0x20, UInt8(255 - x * 3), UInt8(y * 5), 0xFF]
            }
        }
        let frames = [
            gradient(width: width, height: height, from: (0xFF, 0, 0), to: (0, 0, 0xFF)),
            gradient(width: width, height: height, from: (0, 0x80, 0), to: (0xFF, 0xFF, 0)),
            Bitmap(width: width, height: height, pixels: checks),
            Bitmap(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 4)),
        ]
        var animation: [UInt8] = []
        for bitmap in frames {
            // The encoder's file is RIFF, size, WEBP, then the one VP8L chunk.
            let file = try ImageEncoders.WebP(lossless: true).encode(bitmap)
            animation += chunk("ANMF", littleEndian(0, 6) + littleEndian(width - 1, 3) + littleEndian(height - 1, 3)
                + littleEndian(100, 3) + [0] + [UInt8](file.dropFirst(12)))
        }
        let hasAnimationAndAlpha: UInt8 = 0x02 | 0x10
        let body = Array("WEBP".utf8) + chunk("VP8X", [hasAnimationAndAlpha, 0, 0, 0] + littleEndian(width - 1, 3) + littleEndian(height - 1, 3))
            + chunk("ANIM", [0, 0, 0, 0, 0, 0]) + animation
        return Data(Array("RIFF".utf8) + littleEndian(body.count, 4) + body)
    }

    /// An opaque bitmap shading from `top` to `bottom`, row by row; written a pixel
    /// word at a time, as the 6000 px one is slow to build in a debug build otherwise.
    static func gradient(width: Int, height: Int, from top: (UInt8, UInt8, UInt8), to bottom: (UInt8, UInt8, UInt8)) -> Bitmap {
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        pixels.withUnsafeMutableBytes { bytes in
            for y in 0..<height {
                let t = height > 1 ? Double(y) / Double(height - 1) : 0
                func mix(_ a: UInt8, _ b: UInt8) -> UInt32 { UInt32((Double(a) * (1 - t) + Double(b) * t).rounded()) }
                let word = (mix(top.0, bottom.0) | mix(top.1, bottom.1) << 8 | mix(top.2, bottom.2) << 16 | 0xFF << 24).littleEndian
                let row = bytes.baseAddress! + y * width * 4
                for x in 0..<width { (row + x * 4).storeBytes(of: word, as: UInt32.self) }
            }
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// A RIFF chunk: its four-character code, its length, its payload padded to an even length.
    static func chunk(_ fourCC: String, _ payload: [UInt8]) -> [UInt8] {
        Array(fourCC.utf8) + littleEndian(payload.count, 4) + payload + (payload.count % 2 == 1 ? [0] : [])
    }

    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-animation-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func littleEndian(_ value: Int, _ count: Int) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
    }
}
#endif
