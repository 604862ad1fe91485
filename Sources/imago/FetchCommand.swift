import Foundation
import Imago
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `imago fetch URL... | --input FILE`: loads images through the whole pipeline
/// (coalescing, memory cache, retries, decoding) and reports each and a summary.
let fetchCommand = Command(
    name: "fetch",
    synopsis: "URL... | --input FILE [--concurrency N] [--cache-dir DIR | --no-disk-cache] [--thumbnail PX] [--timeout SECONDS] [--retries N] [--json]",
    summary: """
        Load images from http, https, file and data URLs through the full pipeline \
        (coalescing, caching, retries, decoding) and print a summary: items, failures, \
        bytes, cache hits per tier, network transfers, time. A failing URL gets its \
        reason and exit status 1; the others still load.
        """,
    options: [
        .value("--input", "FILE", "read URLs from FILE, one per line ('-' for standard input; blank lines and # comments skipped)"),
    ] + LoaderOptions.table + [
        .value("--thumbnail", "PX", "decode to thumbnails whose longest side is at most PX"),
        .flag("--json", "print one JSON record per URL (with its --input line), then a summary record"),
    ],
    run: runFetch)

private struct FetchRecord: Encodable {
    let url: String
    var line: Int?
    let ok: Bool
    var error: String?
    var width: Int?
    var height: Int?
    var frames: Int?
    var bytes: Int?
    var source: String?
}

private struct FetchSummary: Encodable {
    let summary: LoadSummary
}

private func runFetch(_ arguments: Arguments) async -> Int32 {
    let urls: [InputURL]
    let options: LoaderOptions, thumbnail: Int?
    do throws(UsageError) {
        urls = try readInputURLs(arguments, command: "fetch")
        options = try LoaderOptions(arguments)
        thumbnail = try arguments.integer("--thumbnail", in: 1...100_000)
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let json = arguments.flag("--json")
    let counter = CountingLoader(DefaultDataLoader())
    let loader = options.makeLoader(counter: counter)
    let bar = ProgressBar(total: urls.count)
    let start = ContinuousClock.now

    // Every request is made at once, so identical URLs coalesce; the loader's queue
    // keeps `concurrency` of them running.
    let tasks = urls.map { input -> (InputURL, ImageTask?) in
        guard let url = input.url else { return (input, nil) }
        return (input, loader.task(with: ImageRequest(url: url, targetSize: thumbnail.map(TargetSize.thumbnail))))
    }
    var records: [FetchRecord] = []
    for (input, task) in tasks {
        guard let task else {
            records.append(FetchRecord(url: input.text, line: input.line, ok: false, error: ImagoError.invalidURL(input.text).description))
            bar.advance(bytes: 0)
            continue
        }
        switch await task.value {
        case .success(let response):
            records.append(FetchRecord(
                url: input.text, line: input.line, ok: true, width: response.image.width, height: response.image.height,
                frames: response.image.frames.count, bytes: response.metrics.bytes, source: response.source.rawValue))
            bar.advance(bytes: response.metrics.bytes)
        case .failure(let error):
            records.append(FetchRecord(url: input.text, line: input.line, ok: false, error: error.description))
            bar.advance(bytes: 0)
        }
    }
    bar.finish()
    // Disk writes go on in the background; the process must not end before them.
    await options.disk?.flush()

    let elapsed = (ContinuousClock.now - start).seconds
    let failed = records.filter { !$0.ok }
    var hits: [String: Int] = [:]
    for record in records where record.ok { hits[record.source ?? "?", default: 0] += 1 }
    let summary = LoadSummary(
        items: records.count, failed: failed.count, bytes: counter.bytes.load(ordering: .relaxed), hits: hits,
        transfers: counter.transfers.load(ordering: .relaxed), seconds: (elapsed * 1000).rounded() / 1000)
    if json {
        for record in records { Output.json(record) }
        Output.json(FetchSummary(summary: summary))
    } else {
        for record in failed { Output.error(failureLine(url: record.url, line: record.line, error: record.error ?? "failed")) }
        Output.line(summary.text)
    }
    return failed.isEmpty ? ExitStatus.success : ExitStatus.someFailed
}
