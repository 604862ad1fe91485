import Foundation
import Imago
import ImagoCommandLine

/// `imago-bench`: the benchmark suite. Imago and its baselines run
/// side by side in one run on the same photos, on all cores, interleaved round by round
/// so a busy machine slows them alike; the table gives medians and their ratios.
let benchCommand = Command(
    name: "bench",
    invocation: "imago-bench",
    synopsis: "--photos DIR [--large DIR] [--avif DIR] [--profile ICC [--colour-only]] [--runs N] [--pillow SCRIPT] [--libjpeg BINARY] [--json] | --processors [--runs N] [--json] | --only scheduler,memory-tier,views",
    summary: """
        Benchmark full decodes and 256 px thumbnails of a photo set on all cores against \
        Pillow and libjpeg-turbo, and the peak memory of thumbnails of large photos; \
        print the medians side by side as ratios. 'make bench' makes the photos and the \
        baselines and runs it.
        """,
    options: [
        .value("--photos", "DIR", "the web-size photo set (every *.jpg in DIR)"),
        .value("--large", "DIR", "large (4000 px) JPEGs for the memory figures; none without it"),
        .value("--avif", "DIR", "web-size AVIF photos (every *.avif in DIR) for AVIF rows against Pillow"),
        .value("--profile", "ICC", "an ICC profile embedded in every photo for rows of tagged against untagged decodes"),
        .flag("--colour-only", "with --profile: only the tagged-against-untagged rows"),
        .value("--runs", "N", "rounds of every measure; the median and the minimum are reported (default 5)"),
        .value("--pillow", "SCRIPT", "the Pillow baseline, Benchmarks/pillow_thumbnails.py"),
        .value("--libjpeg", "BINARY", "the libjpeg-turbo baseline, built from Benchmarks/tj_decode.c"),
        .flag("--json", "print one JSON record per measure after a record describing the run"),
        .flag("--processors", "only the processors' figures (a Gaussian blur of 4000×3000 on one core); needs no photos"),
        .value("--only", "LIST", "only these in-process figures, comma-separated: scheduler (the pipeline with the network taken out), memory-tier, views (a memory hit through a view); no photos needed"),
        .flag("--child-memory", "internal: decode FILE... on all cores in a fresh process, print seconds and its peak RSS (the peak alone if one fails)"),
        .value("--thumbnail", "PX", "internal, with --child-memory: decode to thumbnails of PX"),
    ],
    run: { await runBench($0) })

/// The thumbnail size every measure uses.
let benchThumbnailSize = 256

/// What the command line asked for.
struct BenchSettings {
    var photos: String
    var large: String?
    var avif: String?
    var runs = 5
    var pillow: String?
    var libjpeg: String?
    var profile: String?
    var colourOnly = false
    var json = false
}

/// A failure that stops the benchmark: a decode failed or a baseline did not run.
struct BenchError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

private func runBench(_ arguments: Arguments) async -> Int32 {
    if arguments.flag("--child-memory") {
        return runChildMemory(arguments)
    }
    if arguments.flag("--processors") {
        do throws(UsageError) {
            let runs = try arguments.integer("--runs", in: 1...1000) ?? 5
            ProcessorBenchmark.printFigures(json: arguments.flag("--json"), runs: runs)
            return ExitStatus.success
        } catch {
            Output.error(error.message)
            return ExitStatus.usage
        }
    }
    if let only = arguments.string("--only") {
        return await runOnly(only.split(separator: ",").map(String.init), json: arguments.flag("--json"))
    }
    let settings: BenchSettings
    do throws(UsageError) {
        settings = try benchSettings(arguments)
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    do {
        let report = try measure(settings)
        if settings.json { report.printJSON() } else { report.printTable() }
        if settings.colourOnly { return ExitStatus.success }
        await printSchedulerFigures(json: settings.json)
        let photos = try files(in: settings.photos, ext: "jpg").map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
        try CacheBenchmark.printFigures(photos: photos, json: settings.json)
        await ViewBenchmark.printFigures(json: settings.json)
        ProcessorBenchmark.printFigures(json: settings.json, runs: settings.runs)
        return ExitStatus.success
    } catch {
        Progress.clear()
        Output.error("\(error)")
        return ExitStatus.someFailed
    }
}

/// The in-process figures named in `parts` alone, so that a change to the pipeline or
/// the memory tier can be measured before and after in a minute, without the photos
/// and baselines of the whole run.
private func runOnly(_ parts: [String], json: Bool) async -> Int32 {
    let known = ["scheduler", "memory-tier", "views"]
    guard !parts.isEmpty, parts.allSatisfy(known.contains) else {
        Output.error("--only takes \(known.joined(separator: ", ")), comma-separated")
        return ExitStatus.usage
    }
    if parts.contains("scheduler") { await printSchedulerFigures(json: json) }
    if parts.contains("memory-tier") { CacheBenchmark.printMemoryFigures(json: json) }
    if parts.contains("views") { await ViewBenchmark.printFigures(json: json) }
    return ExitStatus.success
}

private func benchSettings(_ arguments: Arguments) throws(UsageError) -> BenchSettings {
    guard arguments.positionals.isEmpty else {
        throw UsageError(message: "bench takes no files (give --photos DIR)")
    }
    guard let photos = arguments.string("--photos") else {
        throw UsageError(message: "bench needs --photos DIR")
    }
    guard arguments.string("--thumbnail") == nil else {
        throw UsageError(message: "--thumbnail goes with --child-memory")
    }
    var settings = BenchSettings(photos: photos)
    settings.large = arguments.string("--large")
    settings.avif = arguments.string("--avif")
    settings.runs = try arguments.integer("--runs", in: 1...1000) ?? settings.runs
    settings.pillow = arguments.string("--pillow")
    settings.libjpeg = arguments.string("--libjpeg")
    settings.profile = arguments.string("--profile")
    settings.colourOnly = arguments.flag("--colour-only")
    settings.json = arguments.flag("--json")
    return settings
}

/// The whole run: load the photos and warm up, then each round takes every time
/// measure once, Imago and its baseline back to back, so that a busy machine slows
/// both alike; then the memory measures, in fresh processes.
private func measure(_ settings: BenchSettings) throws -> BenchReport {
    let photoFiles = try files(in: settings.photos, ext: "jpg")
    let largeFiles = try settings.large.map { try files(in: $0, ext: "jpg") } ?? []
    let photos = try photoFiles.map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    let thumbnail = DecodingOptions(targetSize: .thumbnail(benchThumbnailSize))
    var report = BenchReport(
        photoCount: photos.count, photoMegabytes: Double(photos.reduce(0) { $0 + $1.count }) / 1e6, runs: settings.runs)
    report.loadAverageAtStart = loadAverage()
    let othersCPU = OthersCPUShare()
    report.thumbnailsAreDownsampled = try thumbnailIsDownsampled(photos[0], options: thumbnail)

    Progress.show("warming up")
    _ = try timeDecoding(photos, options: DecodingOptions())
    _ = try timeDecoding(photos, options: thumbnail)
    if settings.colourOnly {
        report.rows = try takeRounds(colourMeasures(settings, photos: photos), runs: settings.runs)
        Progress.clear()
        return report
    }
    report.rows = try takeRounds(timeMeasures(settings, photos: photos), runs: settings.runs)
    report.rows += try takeRounds(colourMeasures(settings, photos: photos), runs: settings.runs)
    report.rows += try takeRounds(avifMeasures(settings), runs: settings.runs)
    report.rows += try takeRounds(memoryMeasures(settings, largeFiles: largeFiles), runs: settings.runs)
    Progress.clear()
    report.othersCPUShare = othersCPU.share()
    return report
}

/// One measure and how to take one sample of Imago and of its baseline.
struct PlannedMeasure {
    let measure: Measure
    let sample: () throws -> (imago: Double, baseline: Double?)
}

/// Takes every measure of `plan` once a round, `runs` rounds.
private func takeRounds(_ plan: [PlannedMeasure], runs: Int) throws -> [BenchReport.Row] {
    var rows = plan.map { BenchReport.Row(measure: $0.measure) }
    for round in 1...runs {
        for (index, item) in plan.enumerated() {
            Progress.show("round \(round) of \(runs): \(item.measure.name)")
            let sample = try item.sample()
            rows[index].add(imago: sample.imago, baseline: sample.baseline)
        }
    }
    return rows
}

/// The time measures: the photo set decoded in full and to thumbnails, by Imago in
/// this process and by each baseline given in a child.
private func timeMeasures(_ settings: BenchSettings, photos: [Data]) -> [PlannedMeasure] {
    let full = DecodingOptions()
    let thumbnail = DecodingOptions(targetSize: .thumbnail(benchThumbnailSize))
    let directory = settings.photos
    var plan: [PlannedMeasure] = []
    if let libjpeg = settings.libjpeg {
        plan.append(PlannedMeasure(measure: .fullDecodeVersusLibjpeg(photos.count)) {
            (try timeDecoding(photos, options: full), try libjpegSeconds(libjpeg, photos: directory))
        })
    }
    if let pillow = settings.pillow {
        plan.append(PlannedMeasure(measure: .fullDecodeVersusPillow(photos.count)) {
            (try timeDecoding(photos, options: full), try pillowSeconds(pillow, photos: directory, full: true))
        })
        plan.append(PlannedMeasure(measure: .thumbnailsVersusPillow(photos.count)) {
            (try timeDecoding(photos, options: thumbnail), try pillowSeconds(pillow, photos: directory, full: false))
        })
    }
    if settings.libjpeg == nil && settings.pillow == nil {
        plan.append(PlannedMeasure(measure: .fullDecode(photos.count)) { (try timeDecoding(photos, options: full), nil) })
    }
    if settings.pillow == nil {
        plan.append(PlannedMeasure(measure: .thumbnails(photos.count)) { (try timeDecoding(photos, options: thumbnail), nil) })
    }
    return plan
}

/// The photos with an ICC profile embedded (an APP2 marker after SOI, as cameras and
/// editors write it) decoded in full and to thumbnails, against the same untagged:
/// what colour management costs.
private func colourMeasures(_ settings: BenchSettings, photos: [Data]) throws -> [PlannedMeasure] {
    guard let path = settings.profile else { return [] }
    let profile = try Data(contentsOf: URL(fileURLWithPath: path))
    guard profile.count + 16 < 65535 else { throw BenchError(message: "\(path) is too large for one APP2 marker") }
    let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
    let length = 2 + 14 + profile.count
    var marker = Data([0xFF, 0xE2, UInt8(length >> 8), UInt8(length & 0xFF)])
    marker += Data("ICC_PROFILE".utf8) + Data([0, 1, 1])
    marker += profile
    let tagged = photos.map { $0.prefix(2) + marker + $0.dropFirst(2) }
    let thumbnail = DecodingOptions(targetSize: .thumbnail(benchThumbnailSize))
    _ = try timeDecoding(tagged, options: DecodingOptions())
    return [
        PlannedMeasure(measure: .taggedFullDecode(photos.count, profile: name)) {
            (try timeDecoding(tagged, options: DecodingOptions()), try timeDecoding(photos, options: DecodingOptions()))
        },
        PlannedMeasure(measure: .taggedThumbnails(photos.count, profile: name)) {
            (try timeDecoding(tagged, options: thumbnail), try timeDecoding(photos, options: thumbnail))
        },
    ]
}

/// AVIF decoded in full and to thumbnails against Pillow's own AVIF decoder (libavif
/// with dav1d, as Imago's): there is no shrink-on-load in AVIF, so both decode in full.
private func avifMeasures(_ settings: BenchSettings) throws -> [PlannedMeasure] {
    guard let directory = settings.avif, let pillow = settings.pillow else { return [] }
    let photos = try files(in: directory, ext: "avif").map { try Data(contentsOf: URL(fileURLWithPath: $0)) }
    let thumbnail = DecodingOptions(targetSize: .thumbnail(benchThumbnailSize))
    _ = try timeDecoding(photos, options: DecodingOptions())
    return [
        PlannedMeasure(measure: .avifFullDecodeVersusPillow(photos.count)) {
            (try timeDecoding(photos, options: DecodingOptions()), try pillowSeconds(pillow, photos: directory, full: true, ext: "avif"))
        },
        PlannedMeasure(measure: .avifThumbnailsVersusPillow(photos.count)) {
            (try timeDecoding(photos, options: thumbnail), try pillowSeconds(pillow, photos: directory, full: false, ext: "avif"))
        },
    ]
}

/// The memory measures, each in fresh child processes: Imago and Pillow at rest, one
/// large JPEG to a thumbnail against the same at full size, and the whole large set
/// to thumbnails against Pillow.
private func memoryMeasures(_ settings: BenchSettings, largeFiles: [String]) -> [PlannedMeasure] {
    guard let one = largeFiles.first, let largeDirectory = settings.large else { return [] }
    let px = benchThumbnailSize, pillow = settings.pillow
    return [
        PlannedMeasure(measure: .memoryAtRest(versusPillow: pillow != nil)) {
            (try imagoPeakMB(files: [], thumbnail: nil), try pillow.map { try pillowPeakMB($0, directory: nil) })
        },
        PlannedMeasure(measure: .oneLargeThumbnailMemory) {
            (try imagoPeakMB(files: [one], thumbnail: px), try imagoPeakMB(files: [one], thumbnail: nil))
        },
        PlannedMeasure(measure: .largeThumbnailsMemory(largeFiles.count, versusPillow: pillow != nil)) {
            (try imagoPeakMB(files: largeFiles, thumbnail: px), try pillow.map { try pillowPeakMB($0, directory: largeDirectory) })
        },
    ]
}

/// Every `*.ext` in `directory`, in name order.
private func files(in directory: String, ext: String) throws -> [String] {
    let names: [String]
    do {
        names = try FileManager.default.contentsOfDirectory(atPath: directory)
    } catch {
        throw BenchError(message: "cannot read \(directory): \((error as NSError).localizedDescription) (make bench makes the photo sets)")
    }
    let files = names.filter { $0.hasSuffix("." + ext) }.sorted().map { (directory as NSString).appendingPathComponent($0) }
    guard !files.isEmpty else { throw BenchError(message: "no *.\(ext) files in \(directory)") }
    return files
}

/// Whether the library's thumbnail path really makes a small image yet, so a table of
/// thumbnails decoded at full size is not taken for the real thing.
private func thumbnailIsDownsampled(_ photo: Data, options: DecodingOptions) throws -> Bool {
    let image = try decodeOrThrow(photo, options: options)
    return max(image.width, image.height) <= benchThumbnailSize
}

/// `imago-bench --child-memory [--thumbnail PX] FILE...`: decodes the files on all
/// cores, each read from disk when its turn comes (so the figure is the decoding's, not
/// the whole set's bytes), and prints one `key=value` line with its own peak RSS; with
/// no FILE, the peak RSS of Imago at rest.
private func runChildMemory(_ arguments: Arguments) -> Int32 {
    var options = DecodingOptions()
    do throws(UsageError) {
        if let px = try arguments.integer("--thumbnail", in: 1...100_000) { options.targetSize = .thumbnail(px) }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    do {
        let seconds = try timeDecoding(files: arguments.positionals, options: options)
        Output.line(String(format: "seconds=%.6f files=%d peak_rss_kb=%d", seconds, arguments.positionals.count, ownPeakRSSKilobytes()))
        return ExitStatus.success
    } catch {
        // What a refusal cost is a figure too.
        Output.error("\(error)")
        Output.line(String(format: "failed=1 peak_rss_kb=%d", ownPeakRSSKilobytes()))
        return ExitStatus.someFailed
    }
}
