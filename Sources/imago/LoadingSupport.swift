import Foundation
import Imago
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What `fetch` and `sheet` share: the loader built from the common options, the
// transfer counts, the URLs read from the command line or a file, and the summary.

/// Counts real transfers under the loader, which coalescing and caching make fewer
/// than the items.
final class CountingLoader: DataLoading {
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

/// One URL to load and where it was given: its line in the `--input` file (counting
/// every line, blank or comment, from 1), nil for one on the command line.
struct InputURL: Sendable {
    let text: String
    let line: Int?

    /// The URL, or nil when the text is not one (reported as `ImagoError.invalidURL`).
    var url: URL? {
        guard let url = URL(string: text), url.scheme != nil else { return nil }
        return url
    }
}

/// The URLs of the command line, then those of `--input` (a file, or '-' for standard
/// input), without blank lines and `#` comments.
func readInputURLs(_ arguments: Arguments, command: String) throws(UsageError) -> [InputURL] {
    var urls = arguments.positionals.map { InputURL(text: $0, line: nil) }
    if let input = arguments.string("--input") {
        let data: Data
        if input == "-" {
            data = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let contents = FileManager.default.contents(atPath: input) else {
                throw UsageError(message: "cannot read --input \(input)")
            }
            data = contents
        }
        // Split on "\n" only, so the numbers match what an editor shows (a "\r\n"
        // file's "\r" goes with the trimming).
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let url = inputURL(line, number: index + 1) { urls.append(url) }
        }
    }
    guard !urls.isEmpty else { throw UsageError(message: "\(command) needs at least one URL, or --input FILE") }
    return urls
}

/// The URL on line `number` of an input, or nil for a blank line or a comment.
func inputURL(_ line: Substring, number: Int) -> InputURL? {
    let text = line.trimmingCharacters(in: .whitespacesAndNewlines)
    guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
    return InputURL(text: text, line: number)
}

/// The options `fetch` and `sheet` share, parsed and checked.
struct LoaderOptions {
    var concurrency = 8
    var timeout = 60.0
    var retries = 2
    var disk: DiskCache?

    init(_ arguments: Arguments) throws(UsageError) {
        concurrency = try arguments.integer("--concurrency", in: 1...1000) ?? concurrency
        retries = try arguments.integer("--retries", in: 0...20) ?? retries
        if let text = arguments.string("--timeout") {
            guard let value = Double(text), value > 0, value.isFinite else {
                throw UsageError(message: "--timeout needs a number of seconds above 0, not '\(text)'")
            }
            timeout = value
        }
        if arguments.flag("--no-disk-cache") && arguments.string("--cache-dir") != nil {
            throw UsageError(message: "give --cache-dir or --no-disk-cache, not both")
        }
        disk = arguments.flag("--no-disk-cache")
            ? nil : DiskCache(directory: arguments.string("--cache-dir").map { URL(fileURLWithPath: $0) })
    }

    /// The options' entries in a command's table.
    static let table: [Option] = [
        .value("--concurrency", "N", "loads at once (default 8)"),
        .value("--cache-dir", "DIR", "the disk cache's directory (default: the user's cache directory, imago/)"),
        .flag("--no-disk-cache", "keep nothing on disk and use nothing kept there"),
        .value("--timeout", "SECONDS", "bound on each whole load (default 60)"),
        .value("--retries", "N", "retries of a transient failure (default 2)"),
    ]

    /// A loader of its own for the command, counting transfers through `counter`.
    func makeLoader(counter: CountingLoader) -> ImageLoader {
        let loader = ImageLoader(
            configuration: .init(dataLoader: counter, retryPolicy: RetryPolicy(maximumAttempts: retries + 1), diskCache: disk),
            cache: ImageCache())
        loader.concurrentLoads = concurrency
        loader.loadingTimeout = timeout
        return loader
    }
}

/// The summary record of `fetch --json` and the counts behind the human line.
struct LoadSummary: Encodable {
    let items: Int
    let failed: Int
    let bytes: Int
    let hits: [String: Int]
    let transfers: Int
    let seconds: Double

    /// "3 items, 1 failed, 1.2 MB in 2 transfers, answered by: 2 network, 0.31 s".
    var text: String {
        let tiers = ["memory", "disk", "network", "local"].compactMap { tier in hits[tier].map { "\($0) \(tier)" } }
        return """
            \(items) items, \(failed) failed, \(formatBytes(Int64(bytes))) in \(transfers) transfers, \
            answered by: \(tiers.isEmpty ? "none" : tiers.joined(separator: ", ")), \(String(format: "%.2f", seconds)) s
            """
    }
}

/// The line a failed URL gets on standard error. Most errors name their URL already
/// (an HTTP status, a network failure); the URL is added only to those that do not.
func failureLine(url: String, line: Int?, error: String) -> String {
    let place = line.map { " (line \($0))" } ?? ""
    return error.hasPrefix(url) || error.contains("'\(url)'") ? error + place : "\(url)\(place): \(error)"
}
