import Foundation
import Imago
import _ImagoTestSupport
import Testing

/// Runs the `imago` executable built beside the tests, as a user would.
///
/// The test target depends on the `imago` target, so whatever builds the tests builds
/// the tool first, into the same folder: a filtered run never tests an older build.
enum Tool {
    /// The built `imago`, in the build folder that holds the test executable (on Linux
    /// the executable itself, on Apple platforms a bundle, NAME.xctest/Contents/MacOS/NAME).
    static let url: URL = {
        var folder = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        while folder.pathComponents.contains(where: { $0.hasSuffix(".xctest") }) { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("imago")
    }()

    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String
        /// From start to exit, timed on the thread that waited for the process: the
        /// test's own clock would add its wait for a thread of the busy pool.
        let elapsed: Duration
        var stdoutLines: [Substring] { stdout.split(separator: "\n") }
        var stderrLines: [Substring] { stderr.split(separator: "\n") }
    }

    /// Runs `imago arguments`; a run longer than `timeout` seconds is killed and
    /// reported, so a hang fails the test instead of stalling the suite.
    ///
    /// The process is waited for on a thread of its own: a test blocking one of the
    /// few threads of Swift's concurrency pool would delay every other test's timers.
    /// `environment` replaces variables of the test's own environment (nil removes one).
    /// `descriptorLimit` runs the tool under that `RLIMIT_NOFILE` (set by a shell's
    /// `ulimit -n` in the child, so the test process keeps its own); `directory` is
    /// its working directory (the test's own when nil).
    static func run(
        _ arguments: [String], timeout: Double = 120, environment: [String: String?] = [:],
        descriptorLimit: Int? = nil, directory: URL? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Result {
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path), "no imago built beside the tests at \(url.path)",
            sourceLocation: sourceLocation)
        let (result, timedOut) = try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Swift.Result {
                    try runBlocking(arguments, timeout: timeout, environment: environment, descriptorLimit: descriptorLimit, directory: directory)
                })
            }.start()
        }
        if timedOut {
            Issue.record("imago \(arguments.prefix(3).joined(separator: " ")) did not finish in \(timeout) s", sourceLocation: sourceLocation)
        }
        return result
    }

    private static func runBlocking(
        _ arguments: [String], timeout: Double, environment: [String: String?], descriptorLimit: Int?, directory: URL?
    ) throws -> (Result, timedOut: Bool) {
        let process = Process()
        process.currentDirectoryURL = directory
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", url.path] + arguments
        } else {
            process.executableURL = url
            process.arguments = arguments
        }
        if !environment.isEmpty {
            var merged = ProcessInfo.processInfo.environment
            for (name, value) in environment { merged[name] = value }
            process.environment = merged
        }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        let start = ContinuousClock.now
        try process.run()
        // Read both pipes while the process runs so a full pipe cannot block it.
        let group = DispatchGroup()
        nonisolated(unsafe) var stdout = Data(), stderr = Data()
        DispatchQueue.global().async(group: group) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
        DispatchQueue.global().async(group: group) { stderr = err.fileHandleForReading.readDataToEndOfFile() }
        let timedOut = group.wait(timeout: .now() + timeout) == .timedOut
        if timedOut { process.terminate() }
        process.waitUntilExit()
        let result = Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                            stderr: String(decoding: stderr, as: UTF8.self), elapsed: .now - start)
        return (result, timedOut)
    }

    /// The peak RSS, in KB, of `imago decode` decoding `file` (to a thumbnail of
    /// `thumbnail` pixels), as the tool reports it in its summary; the file must decode
    /// (or, with `refused`, must fail).
    static func peakMemory(
        decoding file: URL, thumbnail: Int? = nil, refused: Bool = false, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> Int {
        let size = thumbnail.map { ["--thumbnail", String($0)] } ?? []
        let run = try await run(["decode", "--json"] + size + [file.path], sourceLocation: sourceLocation)
        #expect((run.status == 0) != refused, "\(run.stdout) \(run.stderr)", sourceLocation: sourceLocation)
        let last = try #require(run.stdoutLines.last, "\(run.stderr)", sourceLocation: sourceLocation)
        let record = try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: [String: Int]]
        let bytes = try #require(record?["summary"]?["peakMemory"], "\(last)", sourceLocation: sourceLocation)
        return bytes / 1024
    }

    /// The peak RSS, in KB, of `imago decode` decoding a one-pixel PNG: the tool at rest.
    static func peakMemoryAtRest(sourceLocation: SourceLocation = #_sourceLocation) async throws -> Int {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("imago-rest-\(UUID().uuidString).png")
        try ImageEncoders.PNG().encode(Bitmap(width: 1, height: 1, pixels: [0, 0, 0, 255])).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        return try await peakMemory(decoding: file, sourceLocation: sourceLocation)
    }
}
