import Foundation
import Imago
import _ImagoTestSupport
import Testing

/// `imago-gallery`'s command line, the program run as a user runs it, its window on
/// the test display: a line of an `--input` list that names no image is skipped with
/// a warning naming the line, and the others are shown; an argument typed on the
/// command line that names none is bad usage, and `--` ends the options.
@Suite(.display, .gtkWindows) struct GalleryCommandLineTests {

    /// Runs the gallery with `arguments`, its disk cache in `folder`; a run past a
    /// minute is killed and fails the test.
    func run(_ arguments: [String], caches folder: URL) throws -> (status: Int32, stderr: String) {
        let process = Process()
        process.executableURL = Gallery.url
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["XDG_CACHE_HOME": folder.path]) { _, new in new }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let ended = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in ended.signal() }
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        if ended.wait(timeout: .now() + 60) == .timedOut {
            process.terminate()
            Issue.record("imago-gallery \(arguments) ran past a minute")
        }
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: stderr, as: UTF8.self))
    }

    @Test func aLineNamingNoImageIsSkippedAndTheOthersShown() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-gallery-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let image = folder.appendingPathComponent("red.png")
        try Pixels.png(Pixels.solid(width: 32, height: 32, 200, 20, 20)).write(to: image)
        let list = folder.appendingPathComponent("list.txt")
        try Data("http://[::1\n# a comment\n\(folder.path)/missing.png\n\(image.path)\n".utf8).write(to: list)
        let shot = folder.appendingPathComponent("shot.png")

        let listed = try run(["--input", list.path, "--screenshot", shot.path], caches: folder)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stderr.contains("\(list.path) line 1: not a valid URL: 'http://[::1'; skipped"), "\(listed.stderr)")
        #expect(listed.stderr.contains("\(list.path) line 3: no such file or folder"), "\(listed.stderr)")
        #expect(FileManager.default.fileExists(atPath: shot.path))

        // Typed on the command line, the same is bad usage; after `--`, a name starting
        // with a dash is a path, not an option.
        let typed = try run(["/nonexistent/missing.png"], caches: folder)
        #expect(typed.status == 2 && typed.stderr.contains("no such file or folder: '/nonexistent/missing.png'"), "\(typed.stderr)")
        let dashed = try run(["--", "-missing.png"], caches: folder)
        #expect(dashed.status == 2 && dashed.stderr.contains("no such file or folder: '-missing.png'"), "\(dashed.stderr)")
    }
}

/// The gallery built beside this test bundle.
enum Gallery {
    static let url: URL = {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while folder.pathComponents.contains(where: { $0.hasSuffix(".xctest") }) { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("imago-gallery")
    }()
}
