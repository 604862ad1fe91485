import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What `fetch` and `sheet` share: the loader built from the common options, the
// transfer counts, the URLs read from the command line or a file, and the summary.

/// Counts real transfers under the loader, which coalescing and caching make fewer
/// than the items, and which of them were retries.
///
/// A transfer is a retry when the previous one of its URL failed in a way the retry
/// policy retries, and no item of that URL has completed since: the loader tries
/// again only within one load, and a load ends before its items complete.
final class CountingLoader: DataLoading {
    let inner: any DataLoading
    let policy: RetryPolicy
    let transfers = Locked(0)
    let retries = Locked(0)
    let bytes = Locked(0)
    /// URLs whose last transfer failed and may be tried again.
    private let retryable = Locked<Set<String>>([])

    init(_ inner: any DataLoading, policy: RetryPolicy) {
        self.inner = inner
        self.policy = policy
    }

    /// Passes `options` on, so `fetch --partial` gets a body cut short.
    func loadData(
        for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        transfers.withLock { $0 += 1 }
        let url = request.url?.absoluteString ?? ""
        if retryable.withLock({ $0.remove(url) != nil }) { retries.withLock { $0 += 1 } }
        do {
            let response = try await inner.loadData(for: request, options: options, progress: progress)
            bytes.withLock { $0 += response.data.count }
            if let status = response.statusCode, policy.isRetryable(.httpStatus(status, url: url)) {
                _ = retryable.withLock { $0.insert(url) }
            }
            return response
        } catch {
            if policy.isRetryable(error) { _ = retryable.withLock { $0.insert(url) } }
            throw error
        }
    }

    /// An item of `url` completed: its load has ended, so the next transfer of the URL
    /// starts a new load, not a retry.
    func loadEnded(_ url: URL) {
        _ = retryable.withLock { $0.remove(url.absoluteString) }
    }
}

/// One URL to load and where it was given: its line in the `--input` file (counting
/// every line, blank or comment, from 1), nil for one on the command line.
struct InputURL: Sendable {
    let text: String
    let line: Int?

    /// The URL, or nil when the text is not one (reported as `ImagoError.invalidURL`,
    /// as the loader reports a URL its data loader does not take).
    var url: URL? { URL(string: text) }
}

/// The URLs of the command line, then those of `--input` (a file, or '-' for
/// standard input), read one at a time as they are asked for, so that a long list
/// costs no memory and a stream on standard input is loaded while it is still being
/// written. Blank lines and `#` comments are skipped but counted in line numbers.
///
/// `@unchecked Sendable`: made while the command line is parsed, then handed to the
/// one thread that reads it; never used by two threads at once.
final class InputReader: @unchecked Sendable {
    private var positionals: IndexingIterator<[String]>
    private var file: UnsafeMutablePointer<FILE>?
    private var lineNumber = 0
    /// How many URLs there are, when that can be known before reading them: the
    /// command line's and a regular file's. Nil for standard input.
    let countAhead: Int?

    /// Opens the input; a file that cannot be read, or no input at all, is bad usage.
    init(_ arguments: Arguments, command: String) throws(UsageError) {
        positionals = arguments.positionals.makeIterator()
        guard let input = arguments.string("--input") else {
            guard !arguments.positionals.isEmpty else {
                throw UsageError(message: "\(command) needs at least one URL, or --input FILE")
            }
            countAhead = arguments.positionals.count
            return
        }
        if input == "-" {
            file = fdopen(dup(STDIN_FILENO), "r")
            countAhead = nil
        } else {
            var status = stat()
            guard stat(input, &status) == 0, status.st_mode & S_IFMT != S_IFDIR, let opened = fopen(input, "r") else {
                throw UsageError(message: "cannot read --input \(input)")
            }
            file = opened
            if let encoding = Self.foreignEncoding(of: opened) {
                throw UsageError(message: "--input \(input) is \(encoding), not UTF-8: convert it first (iconv -f \(encoding) -t UTF-8)")
            }
            // A second pass over a file on disk is cheap and gives the progress bar
            // its total; a pipe can be read only once.
            countAhead = status.st_mode & S_IFMT == S_IFREG
                ? arguments.positionals.count + Self.countURLs(inFileAt: input) : nil
        }
    }

    deinit {
        if let file { fclose(file) }
    }

    /// The next URL; nil at the end of the input. Blocks while standard input waits.
    func next() -> InputURL? {
        if let text = positionals.next() { return InputURL(text: text, line: nil) }
        while var line = readLine() {
            lineNumber += 1
            // The byte-order mark some editors start a UTF-8 file with is no part of its first URL.
            if lineNumber == 1, line.first == "\u{FEFF}" { line = line.dropFirst() }
            if let url = inputURL(line, number: lineNumber) { return url }
        }
        return nil
    }

    /// Every URL, for commands that need them all before they start.
    func readAll() -> [InputURL] {
        var urls: [InputURL] = []
        while let url = next() { urls.append(url) }
        return urls
    }

    private func readLine() -> Substring? {
        guard let file else { return nil }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)[...]
    }

    /// The encoding a file that is not UTF-8 text plainly is (UTF-16 or UTF-32, by its
    /// byte-order mark or the NUL bytes of its first characters), read from its start,
    /// which is left where it was; nil for UTF-8 or ASCII. Read as UTF-8, such a file
    /// would turn into as many garbage URLs as it has lines.
    private static func foreignEncoding(of file: UnsafeMutablePointer<FILE>) -> String? {
        var head = [UInt8](repeating: 0, count: 64)
        let count = fread(&head, 1, head.count, file)
        rewind(file)
        let bytes = head.prefix(count)
        if bytes.starts(with: [0xFF, 0xFE, 0, 0]) || bytes.starts(with: [0, 0, 0xFE, 0xFF]) { return "UTF-32" }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) { return "UTF-16" }
        guard bytes.contains(0) else { return nil }
        // No mark: text whose every other (or every fourth) byte is NUL.
        return bytes.filter { $0 == 0 }.count * 4 >= bytes.count * 3 ? "UTF-32" : "UTF-16"
    }

    private static func countURLs(inFileAt path: String) -> Int {
        guard let file = fopen(path, "r") else { return 0 }
        defer { fclose(file) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        var count = 0
        while getline(&buffer, &capacity, file) >= 0, let buffer {
            let text = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty && !text.hasPrefix("#") { count += 1 }
        }
        return count
    }
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
    /// The HTTP client asked for with `--loader`; nil for the platform's default.
    var network: String?
    /// The fleet's shared tier, from `--redis`.
    var shared: SharedCache?

    /// The HTTP clients `--loader` can name on this platform.
    static var networkLoaders: [String] {
        #if os(Linux)
        ["curl", "urlsession"]
        #else
        ["urlsession"]
        #endif
    }

    init(_ arguments: Arguments) throws(UsageError) {
        if let name = arguments.string("--loader") {
            guard Self.networkLoaders.contains(name.lowercased()) else {
                throw UsageError(message: "--loader takes \(Self.networkLoaders.joined(separator: " or ")), not '\(name)'")
            }
            network = name.lowercased()
        }
        concurrency = try arguments.integer("--concurrency", in: 1...1000) ?? concurrency
        retries = try arguments.integer("--retries", in: 0...20) ?? retries
        if let text = arguments.string("--timeout") {
            // "inf" is no bound at all; the loader takes any length.
            guard let value = Double(text), value > 0, !value.isNaN else {
                throw UsageError(message: "--timeout needs a number of seconds above 0 (or inf), not '\(text)'")
            }
            timeout = value
        }
        if arguments.flag("--no-disk-cache") && arguments.string("--cache-dir") != nil {
            throw UsageError(message: "give --cache-dir or --no-disk-cache, not both")
        }
        disk = arguments.flag("--no-disk-cache")
            ? nil : DiskCache(directory: arguments.string("--cache-dir").map { URL(fileURLWithPath: $0) })
        // The loads work without it, so this is said once and not as a failure.
        if let problem = disk?.directoryProblem() {
            Output.error("the disk cache cannot be used (\(problem)); nothing will be kept on disk")
        }
        shared = try Self.sharedCache(arguments)
    }

    /// The shared tier of `--redis URL[,URL...]`, with `--redis-namespace` and
    /// `--redis-timeout`; nil without `--redis`. Its warnings (Redis refusing or not
    /// answering) are said once each on standard error, and the loads go on.
    static func sharedCache(_ arguments: Arguments) throws(UsageError) -> SharedCache? {
        guard let list = arguments.string("--redis") else {
            if arguments.string("--redis-namespace") != nil || arguments.string("--redis-timeout") != nil {
                throw UsageError(message: "--redis-namespace and --redis-timeout need --redis")
            }
            return nil
        }
        var configuration: SharedCache.Configuration
        do throws(ImagoError) {
            configuration = SharedCache.Configuration(servers: try SharedCache.Configuration.servers(fromList: list))
        } catch {
            throw UsageError(message: "--redis: \(error.description)")
        }
        if let namespace = arguments.string("--redis-namespace") {
            guard !namespace.isEmpty, !namespace.contains(where: { $0.isWhitespace }) else {
                throw UsageError(message: "--redis-namespace needs a name without spaces")
            }
            configuration.namespace = namespace
        }
        if let text = arguments.string("--redis-timeout") {
            guard let seconds = Double(text), seconds > 0, seconds.isFinite else {
                throw UsageError(message: "--redis-timeout needs a number of seconds above 0, not '\(text)'")
            }
            configuration.connectTimeout = seconds
            configuration.commandTimeout = seconds
        }
        configuration.warningHandler = { Output.error("warning: " + $0) }
        do throws(ImagoError) {
            return try SharedCache(configuration: configuration)
        } catch {
            throw UsageError(message: "--redis: \(error.description)")
        }
    }

    /// The options of the shared tier in a command's table.
    static let sharedTable: [Option] = [
        .value("--redis", "URL[,URL...]", "share a cache with other machines on Redis or Redis Cluster: redis://[user:password@]host:port[/db], a cluster's masters separated by commas"),
        .value("--redis-namespace", "NAME", "the prefix of the shared cache's keys, one per deployment (default imago)"),
        .value("--redis-timeout", "SECONDS", "the shared cache's connect and command timeout (default 0.05)"),
    ]

    /// Lets the shared tier's queued writes reach Redis before the process ends
    /// (within a bound: a slow Redis must not hold a finished run), then records
    /// the run's hits and misses for `imago cache stats --redis`.
    func finishSharedWrites() {
        guard let shared else { return }
        _ = shared.writesEnded(within: Self.backgroundWorkTimeout)
        shared.recordRun()
    }

    /// The options' entries in a command's table.
    static let table: [Option] = [
        .value("--concurrency", "N", "loads at once (default 8)"),
        .value("--cache-dir", "DIR", "the disk cache's directory (default: the user's cache directory, imago/)"),
        .flag("--no-disk-cache", "keep nothing on disk and use nothing kept there"),
        .value("--timeout", "SECONDS", "bound on each whole load (default 60; inf for none)"),
        .value("--retries", "N", "retries of a transient failure (default 2)"),
        .value("--loader", "NAME", "the HTTP client: \(networkLoaders.joined(separator: " or ")) (default: curl on Linux, urlsession elsewhere)"),
    ] + sharedTable

    /// The data loader of a command: the platform's default, or the HTTP client
    /// `--loader` named (so the benchmark can run one against the other). Either may
    /// open as many connections to one host as the command runs loads at once: the
    /// user chose that number, and a list of URLs often has a single host.
    func makeDataLoader() -> DefaultDataLoader {
        let settings = HTTPLoaderConfiguration(httpMaximumConnectionsPerHost: max(6, concurrency))
        switch network {
        case "urlsession":
            return DefaultDataLoader(network: URLSessionDataLoader(configuration: settings))
        #if os(Linux)
        case "curl":
            return DefaultDataLoader(network: CurlDataLoader(configuration: settings))
        #endif
        default:
            return DefaultDataLoader(configuration: settings)
        }
    }

    var retryPolicy: RetryPolicy { RetryPolicy(maximumAttempts: retries + 1) }

    /// The longest a command waits, once its images are in, for revalidations it
    /// left running in the background (`stale-while-revalidate`), so that their
    /// answers reach the disk tier: a few seconds is most revalidations over a slow
    /// link, and a stuck one costs no more than that.
    static let backgroundWorkTimeout = 5.0

    /// A loader of its own for the command, counting transfers through `counter`:
    /// the library's preset for tools, with the command's options.
    func makeLoader(counter: CountingLoader) -> ImageLoader {
        var configuration = ImageLoader.Configuration.server(diskCache: disk, concurrentLoads: concurrency, dataLoader: counter)
        configuration.retryPolicy = retryPolicy
        configuration.sharedCache = shared
        let loader = ImageLoader(configuration: configuration)
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
    let retries: Int
    let seconds: Double
    /// The process's peak resident memory, in bytes: what a long list costs.
    let peakMemory: Int
    /// What the shared tier did, with `--redis`.
    let shared: SharedCounts?

    /// The shared tier's counters as the summary gives them.
    struct SharedCounts: Encodable {
        let hits: Int
        let misses: Int
        let stored: Int
        let rejected: Int
        let writesDropped: Int
        let failures: Int
        /// Loads that waited on another machine's lease and got its value.
        let leaseWaitsAnswered: Int
        /// Loads that waited on a lease until it expired or the wait ran out, and
        /// asked the origin themselves: the fleet's only repeated origin requests.
        let leaseWaitsExpired: Int

        init(_ counters: SharedCache.Counters) {
            hits = counters.hits
            misses = counters.misses
            stored = counters.stored
            rejected = counters.rejected
            writesDropped = counters.writesDropped
            failures = counters.failures
            leaseWaitsAnswered = counters.leaseWaitsAnswered
            leaseWaitsExpired = counters.leaseWaitsExpired
        }
    }

    init(items: Int, failed: Int, hits: [String: Int], counter: CountingLoader, seconds: Double, shared: SharedCache? = nil) {
        self.shared = shared.map { SharedCounts($0.counters) }
        self.items = items
        self.failed = failed
        self.hits = hits
        bytes = counter.bytes.withLock { $0 }
        transfers = counter.transfers.withLock { $0 }
        retries = counter.retries.withLock { $0 }
        self.seconds = (seconds * 1000).rounded() / 1000
        peakMemory = ownPeakRSSKilobytes() * 1024
    }

    /// "3 items, 1 failed, 1.2 MB in 4 transfers (1 retry), answered by: 2 network,
    /// 0.31 s".
    var text: String {
        let tiers = ["memory", "recent", "disk", "revalidated", "shared", "network", "local"].compactMap { tier in hits[tier].map { "\($0) \(tier)" } }
        let retried = retries == 0 ? "" : " (\(retries) \(retries == 1 ? "retry" : "retries"))"
        var text = """
            \(items) items, \(failed) failed, \(formatBytes(Int64(bytes))) in \(transfers) transfers\(retried), \
            answered by: \(tiers.isEmpty ? "none" : tiers.joined(separator: ", ")), \(String(format: "%.2f", seconds)) s
            """
        if let shared {
            var parts = ["\(shared.hits) hits", "\(shared.misses) misses", "\(shared.stored) stored"]
            if shared.rejected > 0 { parts.append("\(shared.rejected) rejected") }
            if shared.writesDropped > 0 { parts.append("\(shared.writesDropped) writes dropped") }
            if shared.failures > 0 { parts.append("\(shared.failures) failed commands") }
            text += "\nshared cache: " + parts.joined(separator: ", ")
        }
        return text
    }
}

/// The line a failed URL or file gets on standard error: `URL (line N): reason`, the URL
/// once. Most errors start with their URL already (an HTTP status, a network
/// failure); one that quotes it (an invalid URL) is its own line.
func failureLine(url: String, line: Int?, error: String) -> String {
    let place = line.map { " (line \($0))" } ?? ""
    if error.contains("'\(url)'") { return error + place }
    let reason = error.hasPrefix(url + ": ") ? String(error.dropFirst(url.count + 2)) : error
    return "\(url)\(place): \(reason)"
}
