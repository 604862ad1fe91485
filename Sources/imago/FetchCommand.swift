import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `imago fetch URL... | --input FILE`: loads images through the whole pipeline
/// (coalescing, memory cache, retries, decoding) and reports each and a summary.
let fetchCommand = Command(
    name: "fetch",
    synopsis: "URL... | --input FILE [--concurrency N] [--cache-dir DIR | --no-disk-cache] [--header 'NAME: VALUE']... [--redis URL[,URL...]] [--thumbnail PX] [--timeout SECONDS] [--retries N] [--partial] [--json [--events]]",
    summary: """
        Load images from http, https, file and data URLs and file paths through the full pipeline \
        (coalescing, caching, retries, decoding) and print a summary: items, failures, \
        bytes, cache hits per tier, network transfers, time. A failing URL gets its \
        reason and exit status 1; the others still load.
        """,
    options: [
        .value("--input", "FILE", "read URLs or file paths from FILE, one per line ('-' for standard input; blank lines and # comments skipped)"),
    ] + LoaderOptions.table + [
        .value("--thumbnail", "PX", "decode to thumbnails whose longest side is at most PX"),
        .flag("--partial", "keep what arrived of a transfer cut short, as a partial image (its JSON record says \"partial\": true), instead of failing"),
        .flag("--json", "print one JSON record per URL (with its --input line), then a summary record"),
        .flag("--events", "with --json, also print each load's events as they happen (started, cacheAnswered, progress, retrying, finished, failed)"),
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
    /// True when only part of the image arrived; absent otherwise.
    var partial: Bool?
    /// What the decode left aside and said so (a damaged colour profile ignored).
    var notes: [String]?
    /// Seconds in each stage of the load, from the task's metrics.
    var metrics: Stages?

    struct Stages: Encodable {
        let queued: Double
        let transfer: Double
        let decodeQueued: Double
        let decode: Double
        let processing: Double
    }
}

private struct FetchSummary: Encodable {
    let summary: LoadSummary
}

/// The counts behind the summary, added to as items complete on any thread.
private struct Tally {
    var items = 0
    var failed = 0
    var hits: [String: Int] = [:]
}

private func runFetch(_ arguments: Arguments) async -> Int32 {
    let reader: InputReader
    let options: LoaderOptions, thumbnail: Int?
    do throws(UsageError) {
        reader = try InputReader(arguments, command: "fetch")
        options = try LoaderOptions(arguments)
        thumbnail = try arguments.integer("--thumbnail", in: 1...100_000)
        if arguments.flag("--events") && !arguments.flag("--json") {
            throw UsageError(message: "--events prints JSON records: give --json too")
        }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let json = arguments.flag("--json")
    let requestOptions: ImageRequest.Options = arguments.flag("--partial") ? .allowsPartialImages : []
    let counter = CountingLoader(options.makeDataLoader(), policy: options.retryPolicy)
    let loader = options.makeLoader(counter: counter, repeats: reader.repeatsAhead)
    let plan = reader.uses.map { uses in
        RepeatPlan(
            previous: uses.previous, next: uses.next,
            images: (loader.cache as? ImageCache).map { RepeatPlan.Store(bytes: $0.costLimit, count: $0.countLimit) },
            originals: loader.configuration.recentOriginals.map { RepeatPlan.Store(bytes: $0.byteLimit, count: $0.countLimit) },
            window: loader.concurrentLoads * 2 + loader.configuration.concurrentDecodes)
    }
    let bar = ProgressBar(total: reader.countAhead)
    let tally = Locked(Tally())
    let events = arguments.flag("--events") ? FetchEventPrinter(loader) : nil
    let loads = Locked(0)
    let start = ContinuousClock.now

    let report: @Sendable (FetchRecord) -> Void = { record in
        tally.withLock { tally in
            tally.items += 1
            if record.ok { tally.hits[record.source ?? "?", default: 0] += 1 } else { tally.failed += 1 }
        }
        if json {
            Output.json(record)
        } else if !record.ok {
            bar.error(failureLine(url: record.url, line: record.line, error: record.error ?? "failed"))
        }
        bar.advance(bytes: record.bytes ?? 0)
    }
    // Items complete, and are reported and forgotten, in whatever order their loads
    // finish; the batch reads the input only as places free up, so memory depends on
    // the concurrency and not on the length of the input. Text that is not a URL
    // never reaches the loader: it is reported as it is read.
    let requests = FetchRequests(reader: reader, thumbnail: thumbnail, options: requestOptions, plan: plan) { input in
        report(FetchRecord(url: input.text, line: input.line, ok: false, error: ImagoError.invalidURL(input.text).description))
    } ended: { count in
        bar.setTotal(count)
    }
    // Reported on the thread that finished the load: the image goes at once.
    await loader.loadEach(requests) { item in
        counter.loadEnded(item.request.url)
        loads.withLock { $0 += 1 }
        if let plan, case .success(let response) = item.result {
            plan.observe(imageBytes: response.image.bitmap.cost, originalBytes: response.metrics.bytes)
        }
        report(FetchRecord(requests.input(at: item.index), item.result))
    }
    await events?.finish(loads: loads.withLock { $0 })
    bar.finish()
    // Revalidations of stale images served meanwhile, then disk writes, go on in the
    // background; the process must not end before them (the first within a bound:
    // a slow server must not hold a finished run).
    await loader.waitForBackgroundWork(timeout: LoaderOptions.backgroundWorkTimeout)
    await options.disk?.flush()
    options.finishSharedWrites()

    let counts = tally.withLock { $0 }
    guard counts.items > 0 else {
        Output.error("fetch needs at least one URL, and --input \(arguments.string("--input") ?? "-") held none")
        return ExitStatus.usage
    }
    let summary = LoadSummary(
        items: counts.items, failed: counts.failed, hits: counts.hits, counter: counter,
        seconds: (ContinuousClock.now - start).seconds, shared: options.shared)
    if json {
        Output.json(FetchSummary(summary: summary))
    } else {
        Output.line(summary.text)
    }
    return counts.failed == 0 ? ExitStatus.success : ExitStatus.someFailed
}

/// The requests of `fetch`'s input, read as the batch asks for them. Each request's
/// input line is kept until its outcome is reported, so that its record can name
/// it: as many lines as the batch has requests in flight.
private final class FetchRequests: Sequence, Sendable {
    let reader: InputReader
    let thumbnail: Int?
    let options: ImageRequest.Options
    /// What each load keeps in memory, when the list was looked through ahead.
    let plan: RepeatPlan?
    /// Called with an input that is not a URL, as it is read.
    let invalid: @Sendable (InputURL) -> Void
    /// Called with the number of inputs read, at the end of the input.
    let ended: @Sendable (Int) -> Void
    private let inputs = Locked<[Int: InputURL]>([:])

    init(
        reader: InputReader, thumbnail: Int?, options: ImageRequest.Options, plan: RepeatPlan?,
        invalid: @escaping @Sendable (InputURL) -> Void, ended: @escaping @Sendable (Int) -> Void
    ) {
        self.reader = reader
        self.thumbnail = thumbnail
        self.options = options
        self.plan = plan
        self.invalid = invalid
        self.ended = ended
    }

    /// The input of the request at `index` of the batch, forgotten as it is given.
    func input(at index: Int) -> InputURL {
        inputs.withLock { $0.removeValue(forKey: index) } ?? InputURL(text: "", line: nil)
    }

    func makeIterator() -> Iterator { Iterator(requests: self) }

    struct Iterator: IteratorProtocol {
        let requests: FetchRequests
        var read = 0
        var index = 0

        mutating func next() -> ImageRequest? {
            while let input = requests.reader.next() {
                read += 1
                guard let url = input.url else {
                    requests.invalid(input)
                    continue
                }
                requests.inputs.withLock { $0[index] = input }
                index += 1
                var request = ImageRequest(url: url, targetSize: requests.thumbnail.map(TargetSize.thumbnail), options: requests.options)
                if let keeping = requests.plan?.keeping(line: read - 1) {
                    if !keeping.image { request.cachePolicy.writes.remove(.memory) }
                    if !keeping.original { request.cachePolicy.writes.remove(.recentOriginals) }
                }
                return request
            }
            requests.ended(read)
            return nil
        }
    }
}

extension FetchRecord {
    /// The record of a load of `input` that ended with `result`.
    fileprivate init(_ input: InputURL, _ result: Result<ImageResponse, ImagoError>) {
        switch result {
        case .success(let response):
            self.init(
                url: input.text, line: input.line, ok: true, width: response.image.width, height: response.image.height,
                frames: response.image.frameCount, bytes: response.metrics.bytes, source: response.source.rawValue,
                partial: response.image.isPartial ? true : nil, notes: response.image.notes.isEmpty ? nil : response.image.notes,
                metrics: Stages(
                    queued: response.metrics.queued, transfer: response.metrics.transfer,
                    decodeQueued: response.metrics.decodeQueued, decode: response.metrics.decode,
                    processing: response.metrics.processing))
        case .failure(let error):
            self.init(url: input.text, line: input.line, ok: false, error: error.description)
        }
    }
}
