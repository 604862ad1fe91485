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
        .value("--concurrency", "N", "loads at once (default 8)"),
        .value("--cache-dir", "DIR", "the disk cache's directory (default: the user's cache directory, imago/)"),
        .flag("--no-disk-cache", "keep nothing on disk and use nothing kept there"),
        .value("--thumbnail", "PX", "decode to thumbnails whose longest side is at most PX"),
        .value("--timeout", "SECONDS", "bound on each whole load (default 60)"),
        .value("--retries", "N", "retries of a transient failure (default 2)"),
        .flag("--json", "print one JSON record per URL, then a summary record"),
    ],
    run: runFetch)

/// Counts real transfers under the loader, which coalescing and caching make fewer
/// than the items.
private final class CountingLoader: DataLoading {
    let inner: any DataLoading
    let transfers = Atomic<Int>(0)
    let bytes = Atomic<Int>(0)

    init(_ inner: any DataLoading) { self.inner = inner }

    func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
        transfers.add(1, ordering: .relaxed)
        let response = try await inner.loadData(for: request, progress: progress)
        bytes.add(response.data.count, ordering: .relaxed)
        return response
    }
}

private struct FetchRecord: Encodable {
    let url: String
    let ok: Bool
    var error: String?
    var width: Int?
    var height: Int?
    var frames: Int?
    var bytes: Int?
    var source: String?
}

private struct FetchSummary: Encodable {
    struct Counts: Encodable {
        let items: Int
        let failed: Int
        let bytes: Int
        let hits: [String: Int]
        let transfers: Int
        let seconds: Double
    }
    let summary: Counts
}

private func readURLs(_ arguments: Arguments) throws(UsageError) -> [String] {
    var lines = arguments.positionals
    if let input = arguments.string("--input") {
        let text: String
        if input == "-" {
            text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
        } else {
            guard let data = FileManager.default.contents(atPath: input) else {
                throw UsageError(message: "cannot read --input \(input)")
            }
            text = String(decoding: data, as: UTF8.self)
        }
        lines += text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }
    guard !lines.isEmpty else { throw UsageError(message: "fetch needs at least one URL, or --input FILE") }
    return lines
}

private func runFetch(_ arguments: Arguments) async -> Int32 {
    let urls: [String]
    let concurrency: Int, timeout: Double, retries: Int, thumbnail: Int?
    do throws(UsageError) {
        urls = try readURLs(arguments)
        concurrency = try arguments.integer("--concurrency", in: 1...1000) ?? 8
        retries = try arguments.integer("--retries", in: 0...20) ?? 2
        thumbnail = try arguments.integer("--thumbnail", in: 1...100_000)
        let text = arguments.string("--timeout") ?? "60"
        guard let value = Double(text), value > 0, value.isFinite else {
            throw UsageError(message: "--timeout needs a number of seconds above 0, not '\(text)'")
        }
        timeout = value
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let json = arguments.flag("--json")
    if arguments.flag("--no-disk-cache") && arguments.string("--cache-dir") != nil {
        Output.error("give --cache-dir or --no-disk-cache, not both")
        return ExitStatus.usage
    }
    let disk: DiskCache? = arguments.flag("--no-disk-cache")
        ? nil : DiskCache(directory: arguments.string("--cache-dir").map { URL(fileURLWithPath: $0) })

    let counter = CountingLoader(DefaultDataLoader())
    let loader = ImageLoader(
        configuration: .init(dataLoader: counter, retryPolicy: RetryPolicy(maximumAttempts: retries + 1), diskCache: disk),
        cache: ImageCache())
    loader.concurrentLoads = concurrency
    loader.loadingTimeout = timeout
    let bar = ProgressBar(total: urls.count)
    let start = ContinuousClock.now

    // Every request is made at once, so identical URLs coalesce; the loader's queue
    // keeps `concurrency` of them running.
    let tasks = urls.map { text -> (String, ImageTask?) in
        guard let url = URL(string: text), url.scheme != nil else { return (text, nil) }
        return (text, loader.task(with: ImageRequest(url: url, targetSize: thumbnail.map(TargetSize.thumbnail))))
    }
    var records: [FetchRecord] = []
    for (text, task) in tasks {
        guard let task else {
            records.append(FetchRecord(url: text, ok: false, error: ImagoError.invalidURL(text).description))
            bar.advance(bytes: 0)
            continue
        }
        switch await task.value {
        case .success(let response):
            records.append(FetchRecord(
                url: text, ok: true, width: response.image.width, height: response.image.height,
                frames: response.image.frames.count, bytes: response.metrics.bytes, source: response.source.rawValue))
            bar.advance(bytes: response.metrics.bytes)
        case .failure(let error):
            records.append(FetchRecord(url: text, ok: false, error: error.description))
            bar.advance(bytes: 0)
        }
    }
    bar.finish()
    // Disk writes go on in the background; the process must not end before them.
    await disk?.flush()

    let elapsed = (ContinuousClock.now - start).seconds
    let failed = records.filter { !$0.ok }
    var hits: [String: Int] = [:]
    for record in records where record.ok { hits[record.source ?? "?", default: 0] += 1 }
    let summary = FetchSummary.Counts(
        items: records.count, failed: failed.count, bytes: counter.bytes.load(ordering: .relaxed), hits: hits,
        transfers: counter.transfers.load(ordering: .relaxed), seconds: (elapsed * 1000).rounded() / 1000)
    if json {
        for record in records { Output.json(record) }
        Output.json(FetchSummary(summary: summary))
    } else {
        for record in failed { Output.error("\(record.url): \(record.error ?? "failed")") }
        let tiers = ["memory", "disk", "network", "local"].compactMap { tier in hits[tier].map { "\($0) \(tier)" } }
        Output.line("""
            \(summary.items) items, \(summary.failed) failed, \(formatBytes(Int64(summary.bytes))) in \
            \(summary.transfers) transfers, answered by: \(tiers.isEmpty ? "none" : tiers.joined(separator: ", ")), \
            \(String(format: "%.2f", elapsed)) s
            """)
    }
    return failed.isEmpty ? ExitStatus.success : ExitStatus.someFailed
}
