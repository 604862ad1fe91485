#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// `DecodedImage.encoded(as:quality:)` and `write(to:format:quality:)`: round trips
/// through the real decoders, and files that are whole or absent.
@Suite struct ImageWritingTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-write-\(UUID())")

    init() throws {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    private func cleanUp() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A smooth opaque image, with a translucent corner when `alpha`.
    static func image(width: Int = 48, height: Int = 32, alpha: Bool = false) -> DecodedImage {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 4
                pixels[i] = UInt8(40 + x * 3 % 200)
                pixels[i + 1] = UInt8(30 + y * 4 % 200)
                pixels[i + 2] = 150
                if alpha && x < 8 && y < 8 {
                    // Premultiplied at half opacity.
                    for c in 0..<3 { pixels[i + c] /= 2 }
                    pixels[i + 3] = 128
                }
            }
        }
        return DecodedImage(bitmap: Bitmap(width: width, height: height, pixels: pixels), format: .png)
    }

    private func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
    }

    @Test func encodedImagesDecodeBackToTheSamePixels() throws {
        defer { cleanUp() }
        let source = Self.image(alpha: true)
        let png = try source.encoded(as: .png)
        let decodedPNG = try ImageDecoders.Registry.shared.decode(png)
        #expect(ImageFormat.detect(png) == .png && decodedPNG.format == .png)
        // PNG is lossless: premultiplied pixels come back to within the rounding of
        // dividing alpha out and in again.
        for (x, y) in [(2, 2), (20, 10), (47, 31)] {
            let a = source.bitmap[x, y], b = decodedPNG.bitmap[x, y]
            #expect(abs(Int(a.r) - Int(b.r)) <= 1 && abs(Int(a.g) - Int(b.g)) <= 1 && a.a == b.a, "(\(x), \(y))")
        }

        for format in [ImageFormat.jpeg, .webp] {
            let data = try source.encoded(as: format, quality: 95)
            let decoded = try ImageDecoders.Registry.shared.decode(data)
            #expect(decoded.format == format && decoded.width == 48 && decoded.height == 32)
            let a = source.bitmap[30, 20], b = decoded.bitmap[30, 20]
            #expect(abs(Int(a.r) - Int(b.r)) <= 6 && abs(Int(a.g) - Int(b.g)) <= 6 && abs(Int(a.b) - Int(b.b)) <= 6, "\(format)")
        }
        // The quality reaches the encoder: a lower one gives a smaller file.
        let photo = DecodedImage(bitmap: Bitmap.smoothPhoto(width: 200, height: 160), format: .jpeg)
        #expect(try photo.encoded(as: .jpeg, quality: 30).count < photo.encoded(as: .jpeg, quality: 95).count)
        #expect(try photo.encoded(as: .jpeg) == ImageEncoders.JPEG().encode(photo.bitmap))
    }

    @Test func aFormatThatCannotBeWrittenIsATypedError() throws {
        defer { cleanUp() }
        #expect(throws: ImagoError.encodingFailed(format: .gif, reason: "Imago cannot write GIF files on this platform", codec: nil)) {
            try Self.image().encoded(as: .gif)
        }
        let target = folder.appendingPathComponent("picture.gif")
        #expect(throws: ImagoError.self) { try Self.image().write(to: target) }
        let unnamed = folder.appendingPathComponent("picture.data")
        #expect {
            try Self.image().write(to: unnamed)
        } throws: { error in
            guard case .fileError(let path, _, nil) = error as? ImagoError else { return false }
            return path == unnamed.path
        }
        #expect(try files().isEmpty)
    }

    @Test func writeTakesTheFormatFromTheNameOrAsGiven() throws {
        defer { cleanUp() }
        let image = Self.image()
        for (name, format, expected) in [("a.jpg", nil, ImageFormat.jpeg), ("b.PNG", nil, .png), ("c.webp", nil, .webp),
                                         ("d.bin", ImageFormat.png, .png)] {
            let url = folder.appendingPathComponent(name)
            try image.write(to: url, format: format, quality: 90)
            let decoded = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: url))
            #expect(decoded.format == expected && decoded.width == 48 && decoded.height == 32, "\(name)")
        }
        // Nothing but the files asked for: no temporary file is left beside them.
        #expect(try files() == ["a.jpg", "b.PNG", "c.webp", "d.bin"])
    }

    @Test func anExistingFileIsReplacedWhole() throws {
        defer { cleanUp() }
        let url = folder.appendingPathComponent("thumb.png")
        let old = Self.image(width: 400, height: 300)
        try old.write(to: url)
        let oldSize = try Data(contentsOf: url).count
        // A reader that opened the old file keeps reading the old file whole: the new
        // one is renamed over the name, never written into the old one.
        let reader = try FileHandle(forReadingFrom: url)
        defer { try? reader.close() }
        try Self.image(width: 10, height: 10).write(to: url)
        let replaced = try ImageDecoders.Registry.shared.decode(try Data(contentsOf: url))
        #expect(replaced.width == 10 && replaced.height == 10)
        let kept = try #require(try reader.readToEnd())
        #expect(kept.count == oldSize)
        #expect(try ImageDecoders.Registry.shared.decode(kept).width == 400)
        #expect(try files() == ["thumb.png"])
    }

    @Test func aFailedWriteLeavesNoFileAndNoTemporaryFile() throws {
        defer { cleanUp() }
        let image = Self.image()
        // The name is taken by a directory: the rename fails after the data was
        // written and flushed, and the temporary file goes.
        let taken = folder.appendingPathComponent("taken.png")
        try FileManager.default.createDirectory(at: taken, withIntermediateDirectories: false)
        #expect {
            try image.write(to: taken)
        } throws: { error in
            guard case .fileError(let path, _, let code?) = error as? ImagoError else { return false }
            return path == taken.path && code == EISDIR
        }
        #expect(try files() == ["taken.png"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: taken.path).isEmpty)

        // A directory that does not exist: the temporary file cannot even be made.
        let nowhere = folder.appendingPathComponent("no/such/thumb.png")
        #expect {
            try image.write(to: nowhere)
        } throws: { error in
            guard case .fileError(_, _, let code?) = error as? ImagoError else { return false }
            return code == ENOENT
        }
        #expect(try files() == ["taken.png"])

        // A directory that cannot be written to: the old file stays as it was.
        guard getuid() != 0 else { return }  // root writes anywhere
        let locked = folder.appendingPathComponent("locked")
        try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: false)
        let existing = locked.appendingPathComponent("thumb.png")
        try Data("earlier".utf8).write(to: existing)
        chmod(locked.path, 0o555)
        defer { chmod(locked.path, 0o755) }
        #expect(throws: ImagoError.self) { try image.write(to: existing) }
        #expect(try Data(contentsOf: existing) == Data("earlier".utf8))
        #expect(try FileManager.default.contentsOfDirectory(atPath: locked.path) == ["thumb.png"])
    }
}
#endif
