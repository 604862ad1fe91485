import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Settings of an HTTP data loader, fixed for its lifetime: the same for
/// `CurlDataLoader` and `URLSessionDataLoader`, so either can stand behind one
/// configuration and each behaves as the other does.
public struct HTTPLoaderConfiguration: Sendable {
    /// 64 MiB: room for the largest originals an app meets (a 100-megapixel JPEG
    /// is 30–50 MB) while capping what one hostile or misconfigured server can make
    /// a single load hold in memory. Decoding has its own pixel limit; this one
    /// bounds the bytes before decoding starts.
    public static let defaultMaximumResponseSize = 64 << 20

    /// The largest body accepted, in bytes. A response whose Content-Length says
    /// more is stopped when its headers arrive; one without a length is stopped
    /// when it grows past the limit. Either way the load throws
    /// `ImagoError.responseTooLarge`.
    public var maximumResponseSize: Int
    /// How many redirects one load may follow before it fails with
    /// `ImagoError.redirectRefused`.
    public var maximumRedirects: Int
    /// Whether a redirect from `https` to `http` is followed. Off by default: it
    /// would hand a request the caller made over TLS to anyone on the path.
    public var allowsHTTPSDowngrade: Bool
    /// Headers sent with every request of this loader (and every redirect of it,
    /// whatever its host), under the request's own. Put credentials on the request
    /// instead: per-request `Authorization` and `Cookie` headers are dropped when a
    /// redirect leaves the original origin. Without a `User-Agent` here or on the
    /// request, `HTTPLoaderConfiguration.defaultUserAgent` is sent.
    public var httpAdditionalHeaders: [String: String]
    /// Connections open at once to one host; transfers beyond it wait for one of
    /// them. Six, as browsers do: enough to keep a grid of thumbnails flowing
    /// without being a burden on the server.
    public var httpMaximumConnectionsPerHost: Int
    /// Seconds a connection attempt or a transfer may go without progress before it
    /// fails with `ImagoError.network`, code `.timedOut`. An idle timer, not a bound
    /// on the whole load (the image loader enforces that by cancelling); it only
    /// stops a connection that has gone silent from lingering when nobody set a
    /// deadline. Rounded up to whole seconds, at least 1: libcurl's low-speed timer
    /// counts whole seconds, and URLSession on Linux truncates fractions (0.5 s
    /// would fire at once).
    public var idleTimeout: Double
    /// Sees each redirect the loader's rules allow, and follows it, follows it
    /// elsewhere (with headers of its own), or refuses it; nil to follow every one.
    /// Called on the loader's own thread: quick, never blocking.
    public var redirectHandler: RedirectHandler?

    /// Makes a configuration; every argument has a documented default.
    public init(
        maximumResponseSize: Int = HTTPLoaderConfiguration.defaultMaximumResponseSize,
        maximumRedirects: Int = 10,
        allowsHTTPSDowngrade: Bool = false,
        httpAdditionalHeaders: [String: String] = [:],
        httpMaximumConnectionsPerHost: Int = 6,
        idleTimeout: Double = 60,
        redirectHandler: RedirectHandler? = nil
    ) {
        self.redirectHandler = redirectHandler
        self.maximumResponseSize = maximumResponseSize
        self.maximumRedirects = maximumRedirects
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
        self.httpAdditionalHeaders = httpAdditionalHeaders
        self.httpMaximumConnectionsPerHost = httpMaximumConnectionsPerHost
        self.idleTimeout = idleTimeout
    }

    var redirectPolicy: RedirectPolicy {
        RedirectPolicy(maximumRedirects: maximumRedirects, allowsHTTPSDowngrade: allowsHTTPSDowngrade, handler: redirectHandler)
    }

    /// The idle timeout as both clients count it: whole seconds, at least one.
    var idleSeconds: Int { max(1, Int(idleTimeout.rounded(.up))) }

    /// What both HTTP loaders check of `request` before any I/O: a URL they take,
    /// returned with its scheme in lower case, and header fields that go on the wire
    /// as given, merged over `defaults` (`HTTPHeaderFields.merge`), and whether they
    /// carry credentials (`DataResponse.requestCarriedCredentials`). Throws
    /// `invalidURL`, `invalidRequest`, or `cancelled` when the calling task is
    /// (the cheap exit for a load cancelled while it was queued).
    static func checked(
        _ request: URLRequest, over defaults: [String: String]
    ) throws(ImagoError) -> (url: URL, headers: [(name: String, value: String)], credentials: Bool) {
        guard var url = request.url, takes(url) else {
            throw .invalidURL(request.url?.absoluteString ?? "")
        }
        if let normalized = url.withLowercasedScheme { url = normalized }
        let headers = try HTTPHeaderFields.merge(request.allHTTPHeaderFields ?? [:], over: defaults, url: url)
        if Task.isCancelled { throw .cancelled }
        return (url, headers, HTTPHeaderFields.carryCredentials(names: headers.lazy.map(\.name), url: url))
    }

    /// Whether an HTTP loader takes `url`: `http` or `https` with a host.
    static func takes(_ url: URL) -> Bool {
        guard let scheme = url.scheme else { return false }
        // Most schemes are in lower case already: no new string for them.
        let lowered = scheme.hasASCIIUppercase ? scheme.lowercased() : scheme
        guard lowered == "http" || lowered == "https" else { return false }
        return url.host.map { !$0.isEmpty } ?? false
    }
}

extension URL {
    /// The URL with its scheme in lower case (`HTTP://host/a` → `http://host/a`); nil
    /// when it already is. Schemes are case-insensitive (RFC 3986 §3.1), but URLSession
    /// on Linux sends an upper-case one to libcurl, which then fails, and one image
    /// should have one key however its scheme is written.
    var withLowercasedScheme: URL? {
        guard let scheme, scheme.hasASCIIUppercase,
              var components = URLComponents(url: self, resolvingAgainstBaseURL: true) else { return nil }
        components.scheme = scheme.lowercased()
        return components.url
    }
}

extension String {
    /// Whether any byte is an ASCII capital. A URL's scheme is ASCII (RFC 3986), and
    /// every request's scheme is asked several times: `Character.isUppercase` looked
    /// up Unicode properties letter by letter, a tenth of queueing a load.
    var hasASCIIUppercase: Bool { utf8.contains { $0 &- 0x41 < 26 } }

    /// Whether any byte is an ASCII capital or beyond ASCII: false when lower-casing
    /// the text would leave it as it is.
    var hasASCIIUppercaseOrNonASCII: Bool { utf8.contains { $0 &- 0x41 < 26 || $0 >= 0x80 } }

    /// Whether the two are the same but for the case of ASCII letters, as HTTP field
    /// names compare (field names are ASCII tokens), without making lower-cased copies.
    func equalsIgnoringASCIICase(_ other: String) -> Bool {
        utf8.count == other.utf8.count && zip(utf8, other.utf8).allSatisfy { a, b in
            a == b || (a | 0x20 == b | 0x20 && (a | 0x20) &- 0x61 < 26)
        }
    }
}

extension HTTPLoaderConfiguration {
    /// Imago's version, as its User-Agent gives it.
    package static let version = "0.1.0"
    /// `Imago/<version>`: the User-Agent both network loaders (curl and
    /// URLSession) send unless the request, the loader configuration's `headers`,
    /// or the data loader's `httpAdditionalHeaders` set one. Some servers and CDNs
    /// refuse requests without one, and a server's logs can tell Imago's requests
    /// from others'.
    package static let defaultUserAgent = "Imago/\(version)"
}
