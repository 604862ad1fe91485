import Dispatch
import Foundation
import Imago
import ImagoCommandLine
import Synchronization

// How `imago-bench` takes one sample of each measure: Imago's times in this process;
// the baselines, and every memory figure, in child processes.

/// Seconds to decode every photo, on all cores (dispatch's concurrent loop hands the
/// photos out one by one, so no core idles while another has a queue).
func timeDecoding(_ photos: [Data], options: DecodingOptions) throws -> Double {
    try timeConcurrently(count: photos.count, options: options) { photos[$0] }
}

/// Seconds to read and decode every file, on all cores; each file is read when its
/// turn comes, so only the files being decoded are in memory.
func timeDecoding(files: [String], options: DecodingOptions) throws -> Double {
    try timeConcurrently(count: files.count, options: options) { index in
        do { return try Data(contentsOf: URL(fileURLWithPath: files[index])) } catch {
            throw BenchError(message: "cannot read \(files[index]): \((error as NSError).localizedDescription)")
        }
    }
}

private func timeConcurrently(count: Int, options: DecodingOptions, data: @Sendable (Int) throws -> Data) throws -> Double {
    let firstFailure = Mutex<String?>(nil)
    let start = ContinuousClock.now
    DispatchQueue.concurrentPerform(iterations: count) { index in
        do {
            _ = try decodeOrThrow(try data(index), options: options)
        } catch {
            firstFailure.withLock { $0 = $0 ?? "photo \(index): \(error)" }
        }
    }
    let elapsed = start.duration(to: .now)
    if let failure = firstFailure.withLock({ $0 }) {
        throw BenchError(message: "a decode failed, so the figures would mean nothing: \(failure)")
    }
    return elapsed.seconds
}

func decodeOrThrow(_ data: Data, options: DecodingOptions) throws -> DecodedImage {
    do throws(ImagoError) {
        return try ImageDecoders.Registry.shared.decode(data, options: options)
    } catch {
        throw BenchError(message: error.description)
    }
}

// MARK: - Baselines

/// One timed pass of `tj_decode` (after its own untimed warm-up pass) over the photos.
func libjpegSeconds(_ binary: String, photos: String) throws -> Double {
    try seconds(from: runReporting([binary, "--runs", "1", photos]))
}

/// One timed pass of the Pillow script over the photos (`*.ext`): thumbnails, or full decodes.
func pillowSeconds(_ script: String, photos: String, full: Bool, ext: String = "jpg") throws -> Double {
    let mode = full ? ["--full"] : ["--size", String(benchThumbnailSize)]
    return try seconds(from: runReporting(["python3", script, photos, "--runs", "1", "--ext", ext] + mode))
}

/// Runs a program that prints `key=value` lines and returns the last line's values.
private func runReporting(_ command: [String]) throws -> [String: String] {
    // Foundation's Process exists on macOS and Linux only; iOS, tvOS, watchOS and
    // visionOS start no programs.
    #if os(macOS) || os(Linux)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = command
    let output = Pipe()
    process.standardOutput = output
    do { try process.run() } catch {
        throw BenchError(message: "cannot run \(command.joined(separator: " ")): \(error.localizedDescription)")
    }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationReason == .exit, process.terminationStatus == 0 else {
        throw BenchError(message: "\(command.joined(separator: " ")) failed (exit status \(process.terminationStatus))")
    }
    let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").filter { $0.contains("=") }
    guard let last = lines.last else {
        throw BenchError(message: "\(command.joined(separator: " ")) printed no result line")
    }
    return keyValues(last)
    #else
    throw BenchError(message: "cannot run \(command.joined(separator: " ")): this platform starts no programs")
    #endif
}

/// `seconds=0.95 files=300` as a dictionary.
private func keyValues(_ line: Substring) -> [String: String] {
    var values: [String: String] = [:]
    for pair in line.split(separator: " ") {
        let parts = pair.split(separator: "=", maxSplits: 1)
        if parts.count == 2 { values[String(parts[0])] = String(parts[1]) }
    }
    return values
}

private func seconds(from values: [String: String]) throws -> Double {
    guard let text = values["seconds"], let seconds = Double(text) else {
        throw BenchError(message: "a baseline's result line has no seconds=")
    }
    return seconds
}

// MARK: - Memory, each figure from a fresh child process's own report

/// Peak RSS, in MB, of a fresh Imago process that decodes `files` on all cores, to
/// thumbnails of `thumbnail` px or at full size; with no files, of Imago at rest.
/// It decodes with the same call as `imago decode [--thumbnail PX]`, which cannot
/// report its own peak (see `ownPeakRSSKilobytes`).
func imagoPeakMB(files: [String], thumbnail: Int?) throws -> Double {
    let size = thumbnail.map { ["--thumbnail", String($0)] } ?? []
    return try peakMegabytes(from: runReporting([try ownExecutable(), "--child-memory"] + size + files))
}

/// Peak RSS, in MB, of Pillow making thumbnails of every JPEG in `directory` on all
/// cores, reading each file as it goes (as the Imago child does); with no directory,
/// of the Python process at rest with Pillow loaded.
func pillowPeakMB(_ script: String, directory: String?) throws -> Double {
    let mode = directory.map { [$0, "--memory", "--size", String(benchThumbnailSize)] } ?? ["--at-rest"]
    return try peakMegabytes(from: runReporting(["python3", script] + mode))
}

private func peakMegabytes(from values: [String: String]) throws -> Double {
    guard let text = values["peak_rss_kb"], let kilobytes = Double(text) else {
        throw BenchError(message: "a memory measure's result line has no peak_rss_kb=")
    }
    return kilobytes / 1024
}

/// The path of the running benchmark, to start children of it.
private func ownExecutable() throws -> String {
    guard let path = Bundle.main.executablePath else {
        throw BenchError(message: "cannot find the benchmark's executable to start a child of it")
    }
    return path
}
