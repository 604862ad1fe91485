import Foundation
import Testing

/// The shared image corpus (`../shared/corpus` beside the package), when present.
///
/// A user's clone has no corpus, so tests that need it skip, saying why. Under CI
/// (`CI` set) a missing corpus is a failure instead, so CI never passes by skipping.
public enum Corpus {
    /// The corpus folder (`IMAGO_CORPUS`, or `../shared/corpus`), or nil when absent.
    public static let root: URL? = {
        if let path = ProcessInfo.processInfo.environment["IMAGO_CORPUS"] {
            return URL(fileURLWithPath: path)
        }
        let candidate = Fixture.repository.deletingLastPathComponent().appendingPathComponent("shared/corpus")
        return FileManager.default.fileExists(atPath: candidate.path) ? candidate : nil
    }()

    /// Whether a missing corpus fails the tests (under CI) instead of skipping them.
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] != nil }

    /// Use as a test trait: runs the test when the corpus is there or required.
    public static var available: ConditionTrait {
        .enabled(if: root != nil || isRequired, "the shared image corpus (../shared/corpus) is absent")
    }

    /// The corpus folder at `path`; records a failure when the corpus is missing.
    public static func folder(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> URL {
        let root = try #require(root, "the shared image corpus is required under CI", sourceLocation: sourceLocation)
        return root.appendingPathComponent(path)
    }

    /// Files in the corpus folder `path` with extension `ext`, sorted; fails on none.
    public static func files(_ path: String, ext: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [URL] {
        let folder = try folder(path, sourceLocation: sourceLocation)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        let urls = names.filter { $0.hasSuffix("." + ext) }.sorted().map { folder.appendingPathComponent($0) }
        try #require(!urls.isEmpty, "no .\(ext) files in \(folder.path)", sourceLocation: sourceLocation)
        return urls
    }

    /// The bytes of the corpus file at `path`; records a failure when the corpus is missing.
    public static func data(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        let root = try #require(root, "the shared image corpus is required under CI", sourceLocation: sourceLocation)
        return try Data(contentsOf: root.appendingPathComponent(path))
    }
}
