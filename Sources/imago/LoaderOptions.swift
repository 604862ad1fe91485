import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The options `fetch` and `sheet` share, and the loader built from them.

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
    /// Header fields sent with every request, from `--header`.
    var headers: [String: String] = [:]

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
        headers = try Self.headerFields(arguments)
    }

    /// The fields of every `--header`, one of a name: the last given, as for the
    /// other options.
    static func headerFields(_ arguments: Arguments) throws(UsageError) -> [String: String] {
        var headers: [String: String] = [:]
        for field in arguments.strings("--header") {
            let (name, value) = try headerField(field)
            headers = headers.filter { $0.key.caseInsensitiveCompare(name) != .orderedSame }
            headers[name] = value
        }
        return headers
    }

    /// `Name: value` as curl's `--header` takes it, checked here so that a mistyped
    /// field is one usage error rather than every load failing with it.
    static func headerField(_ text: String) throws(UsageError) -> (name: String, value: String) {
        let colon = text.firstIndex(of: ":")
        let name = String(text[..<(colon ?? text.endIndex)])
        guard let colon, HTTPHeaderFields.isFieldName(name) else {
            throw UsageError(message: "--header needs 'Name: value' with a field name of letters, digits and !#$%&'*+-.^_`|~, not '\(text)'")
        }
        let value = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        guard !HTTPHeaderFields.holdsLineBreak(value) else {
            throw UsageError(message: "--header \(name): a value cannot hold a line break")
        }
        return (name, value)
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
        .value("--timeout", "SECONDS", "bound on each whole load, from when it is queued: the wait for one of the --concurrency transfers (twice as many loads as those, and one a core, are queued at a time), the transfer with its retries and the decode (default 60; inf for none)"),
        .value("--retries", "N", "retries of a transient failure (default 2)"),
        .value("--loader", "NAME", "the HTTP client: \(networkLoaders.joined(separator: " or ")) (default: curl on Linux, urlsession elsewhere)"),
        .value("--header", "'NAME: VALUE'", "send this header field with every request (Authorization, say); repeat it for more fields. A response to a request with credentials goes into the --redis tier only when the server allows it"),
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
    /// the library's preset for tools, with the command's options. When the input is
    /// known to hold no URL twice (`repeats` false), nothing is kept in memory, the
    /// decoded images nor the recent originals: nothing would ask for them again, and
    /// they were most of the peak memory of a run of full-size photos.
    func makeLoader(counter: CountingLoader, repeats: Bool?) -> ImageLoader {
        var configuration = ImageLoader.Configuration.server(diskCache: disk, concurrentLoads: concurrency, dataLoader: counter)
        configuration.retryPolicy = retryPolicy
        configuration.sharedCache = shared
        configuration.headers = headers
        if repeats == false {
            configuration.memoryTier = .own(costLimit: 0, countLimit: 0)
            configuration.recentOriginals = nil
        }
        let loader = ImageLoader(configuration: configuration)
        loader.loadingTimeout = timeout
        return loader
    }
}
