import Foundation
import Imago
import ImagoCommandLine

/// `imago decode FILE...`: decodes local files with the library's decoders and reports
/// what each holds; optionally writes the decoded image out again.
let decodeCommand = Command(
    name: "decode",
    synopsis: "FILE... [--thumbnail PX] [--max-pixels N] [--memory-budget MIB] [--timeout SECONDS] [--out PATH [--quality Q] | --out-dir DIR] [--json]",
    summary: """
        Decode image files (JPEG, PNG, GIF, WebP, BMP, ICO, TIFF, AVIF, HEIC, JPEG XL, SVG; the format is read from the bytes) and \
        print format, size, frames and orientation. A file that fails gets one line on \
        standard error and exit status 1; the other files are still decoded.
        """,
    options: [
        .value("--thumbnail", "PX", "decode straight to a thumbnail whose longest side is at most PX"),
        .value("--out", "PATH", "write the decoded image (first frame) to PATH; one FILE only; .png, .jpg or .webp"),
        .value("--out-dir", "DIR", "write each decoded image to DIR/NAME.png"),
        .value("--quality", "Q", "JPEG or WebP quality for --out, 1 to 100 (defaults: JPEG 85, WebP 80)"),
        .value("--max-pixels", "N", "refuse images of more than N pixels (default \(DecodingOptions.defaultMaximumPixelCount))"),
        .value("--memory-budget", "MIB", "refuse files whose decode would hold more than MIB mebibytes (default \(DecodingOptions.defaultThumbnailMemoryBudget >> 20) for a thumbnail, 8 bytes a pixel of the pixel limit at full size)"),
        .value("--timeout", "SECONDS", "stop each file's decode after SECONDS, as a load's deadline does (default none)"),
        .flag("--json", "print one JSON record per file, then a summary record"),
    ],
    run: runDecode)

/// What `--json` prints for each file.
private struct DecodeRecord: Encodable {
    let file: String
    let ok: Bool
    var error: String?
    var format: String?
    var width: Int?
    var height: Int?
    var frames: Int?
    var loopCount: Int?
    var orientation: Int?
    /// True when the file ended early and only what was there was decoded.
    var partial: Bool?
    /// What the decode left aside and said so (a damaged colour profile ignored).
    var notes: [String]?
    var output: String?
    /// The human line's description; not part of the JSON record.
    var description: String?

    private enum CodingKeys: String, CodingKey {
        case file, ok, error, format, width, height, frames, loopCount, orientation, partial, notes, output
    }
}

private struct DecodeSummary: Encodable {
    struct Counts: Encodable {
        let files: Int
        let decoded: Int
        let failed: Int
        /// The process's peak resident memory, in bytes: what the decodes cost.
        let peakMemory: Int
    }
    let summary: Counts
}

/// How decoded images are written out: the format and quality `DecodedImage.write` takes.
private struct ImageOutput {
    let format: ImageFormat
    let quality: Int?
}

private func runDecode(_ arguments: Arguments) async -> Int32 {
    let files = arguments.positionals
    let out = arguments.string("--out"), outDir = arguments.string("--out-dir")
    let json = arguments.flag("--json")
    var options = DecodingOptions()
    var writer: ImageOutput?
    do throws(UsageError) {
        guard !files.isEmpty else { throw UsageError(message: "decode needs at least one FILE") }
        if out != nil && outDir != nil { throw UsageError(message: "give --out or --out-dir, not both") }
        if out != nil && files.count != 1 { throw UsageError(message: "--out takes one FILE; use --out-dir for several") }
        let quality = try arguments.integer("--quality", in: 1...100)
        if quality != nil && out == nil { throw UsageError(message: "--quality is for the file --out writes") }
        if let out { writer = ImageOutput(format: try outputFormat(of: out, option: "--out"), quality: quality) }
        if outDir != nil { writer = ImageOutput(format: .png, quality: nil) }
        if let limit = try arguments.integer("--max-pixels", in: 1...Int.max) { options.maximumPixelCount = limit }
        if let pixels = try arguments.integer("--thumbnail", in: 1...100_000) { options.targetSize = .thumbnail(pixels) }
        if let mebibytes = try arguments.integer("--memory-budget", in: 1...(1 << 30)) { options.memoryBudget = mebibytes << 20 }
        if let text = arguments.string("--timeout") {
            guard let seconds = Double(text), seconds > 0, !seconds.isNaN else {
                throw UsageError(message: "--timeout needs a number of seconds above 0 (or inf), not '\(text)'")
            }
            options.timeout = seconds
        }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let targets = files.map { file in
        out ?? outDir.map { directory in
            let name = ((file as NSString).lastPathComponent as NSString).deletingPathExtension
            return (directory as NSString).appendingPathComponent(name + ".png")
        }
    }
    if let outDir {
        var seen: [String: String] = [:]
        for (file, target) in zip(files, targets) {
            guard let target else { continue }
            if let other = seen.updateValue(file, forKey: target) {
                Output.error("\(other) and \(file) would both be written to \(target)")
                return ExitStatus.usage
            }
        }
        do {
            try FileManager.default.createDirectory(atPath: outDir, withIntermediateDirectories: true)
        } catch {
            Output.error("cannot create \(outDir): \(error.localizedDescription)")
            return ExitStatus.someFailed
        }
    }

    // Files are decoded on every core, and reported in the order given: each result
    // waits until those before it are out, and only its record waits, not its image.
    let output = Locked(OrderedOutput())
    let jobs = Array(zip(files, targets))
    let (encoder, decoding) = (writer, options)
    let decoders = ProcessInfo.processInfo.activeProcessorCount
    await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
        DispatchQueue.global(qos: .userInitiated).async {
            let next = Locked(0)
            DispatchQueue.concurrentPerform(iterations: min(decoders, jobs.count)) { _ in
                while case let index = next.withLock({ next in defer { next += 1 }; return next }), index < jobs.count {
                    let result = decodeFile(jobs[index].0, to: jobs[index].1, writer: encoder, options: decoding)
                    output.withLock { $0.add(result, at: index, json: json) }
                }
            }
            done.resume()
        }
    }
    let failed = output.withLock { $0.failed }
    if json { Output.json(DecodeSummary(summary: .init(
        files: files.count, decoded: files.count - failed, failed: failed, peakMemory: ownPeakRSSKilobytes() * 1024))) }
    return failed == 0 ? ExitStatus.success : ExitStatus.someFailed
}

/// Results that arrive in any order, printed in the order of the files.
private struct OrderedOutput {
    private var waiting: [Int: DecodeRecord] = [:]
    private var nextIndex = 0
    private(set) var failed = 0

    mutating func add(_ record: DecodeRecord, at index: Int, json: Bool) {
        waiting[index] = record
        while let record = waiting.removeValue(forKey: nextIndex) {
            nextIndex += 1
            if !record.ok { failed += 1 }
            if json {
                Output.json(record)
            } else if record.ok {
                Output.line("\(record.file): \(record.description ?? "")" + (record.output.map { " → \($0)" } ?? ""))
            } else {
                Output.error(failureLine(url: record.file, line: nil, error: record.error ?? "failed"))
            }
        }
    }
}

/// Decodes `file`, writing it to `target` when there is one.
private func decodeFile(_ file: String, to target: String?, writer: ImageOutput?, options: DecodingOptions) -> DecodeRecord {
    var record = DecodeRecord(file: file, ok: true)
    do throws(ImagoError) {
        // The user's own file, read whole: bounded by what its decode may hold at
        // full size (eight bytes a pixel of the pixel limit), not by the loader's
        // limit for what a server sends.
        let (budget, overflow) = options.maximumPixelCount.multipliedReportingOverflow(by: 8)
        let data = try LocalDataLoader.contentsOfFile(
            atPath: file, limit: max(HTTPLoaderConfiguration.defaultMaximumResponseSize, overflow ? .max : budget))
        let image = try ImageDecoders.Registry.shared.decode(data, options: options)
        record.format = image.format.rawValue
        record.width = image.width
        record.height = image.height
        record.frames = image.frameCount
        record.loopCount = image.isAnimated ? image.loopCount : nil
        record.orientation = image.orientation.rawValue
        record.partial = image.isPartial ? true : nil
        record.notes = image.notes.isEmpty ? nil : image.notes
        record.description = describe(image)
        if let target, let writer {
            try image.write(to: URL(fileURLWithPath: target), format: writer.format, quality: writer.quality)
            record.output = target
        }
        return record
    } catch {
        return DecodeRecord(file: file, ok: false, error: error.description)
    }
}

private func describe(_ image: DecodedImage) -> String {
    var text = "\(image.format.name) \(image.width)×\(image.height)"
    if image.isAnimated {
        text += ", \(image.frameCount) frames, " + (image.loopCount == 0 ? "loops forever" : "plays \(image.loopCount)×")
    } else {
        text += ", 1 frame"
    }
    if image.orientation != .up { text += ", EXIF orientation \(image.orientation.rawValue) applied" }
    if image.bitmap.hasAlpha { text += ", alpha" }
    if image.isPartial {
        text += image.isAnimated
            ? ", partial: the file ends early, and the frames that arrived are shown"
            : ", partial: the file ends early and the rest is filled"
    }
    for note in image.notes { text += "; " + note }
    return text
}
