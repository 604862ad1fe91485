import Foundation
import Testing
@_spi(Internals) import Imago

/// The committed test files under `Tests/ImagoTests/Fixtures`, and their reference
/// decodes: PNG files made by another decoder (Pillow, or the format's own command-line
/// tool), read back with libpng; and the sample images under `Samples`.
public enum Fixture {
    /// The repository's root, found from this source file: the files are read from
    /// the source tree, not bundled. The GTK package compiles this file through a
    /// symbolic link, hence its resolution first.
    public static let repository = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The folder of the committed test files.
    public static let root = repository.appendingPathComponent("Tests/ImagoTests/Fixtures")

    /// The sample image `name` under `Samples`.
    public static func sample(_ name: String) throws -> Data {
        try Data(contentsOf: repository.appendingPathComponent("Samples").appendingPathComponent(name))
    }

    /// The committed test file at `path`.
    public static func url(_ path: String) -> URL { root.appendingPathComponent(path) }

    /// The bytes of the committed test file at `path`.
    public static func data(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        try Data(contentsOf: url(path))
    }

    #if os(Linux)
    /// The reference decode at `path` (a PNG), premultiplied like every Imago bitmap.
    public static func reference(_ path: String) throws -> Bitmap {
        try ImageDecoders.PNG().decode(try data(path), options: DecodingOptions()).bitmap
    }
    #endif

    /// Every file in `folder` whose name ends with `suffix`, sorted.
    public static func files(_ folder: String, suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url(folder).path)
            .filter { $0.hasSuffix(suffix) }.sorted()
    }
}

#if os(Linux)
extension ImagoError {
    /// Whether this is a decoding error for `format` (the typed error every bad file
    /// must get).
    public func isDecodingFailure(_ format: ImageFormat) -> Bool {
        if case .decodingFailed(format: format, _, _, _) = self { return true }
        return false
    }
}
#endif
