#if os(Linux)
import Foundation
import Testing
@testable import Imago

/// The committed test files under `Tests/ImagoTests/Fixtures`, and their reference
/// decodes: PNG files made by another decoder (Pillow, or the format's own command-line
/// tool), read back with libpng.
enum Fixture {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures")

    static func url(_ path: String) -> URL { root.appendingPathComponent(path) }

    static func data(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        try Data(contentsOf: url(path))
    }

    /// The reference decode at `path` (a PNG), premultiplied like every Imago bitmap.
    static func reference(_ path: String) throws -> Bitmap {
        try PNGDecoder().decode(try data(path), options: DecodingOptions()).bitmap
    }

    /// Every file in `folder` whose name ends with `suffix`, sorted.
    static func files(_ folder: String, suffix: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: url(folder).path)
            .filter { $0.hasSuffix(suffix) }.sorted()
    }
}

extension ImagoError {
    /// Whether this is a decoding error for `format` (the typed error every bad file
    /// must get).
    func isDecodingFailure(_ format: ImageFormat) -> Bool {
        if case .decodingFailed(format: format, _, _, _) = self { return true }
        return false
    }
}
#endif
