import Foundation

/// A redirect a server answered with, as a redirect handler sees it
/// (`HTTPLoaderConfiguration.redirectHandler`).
public struct HTTPRedirect: Sendable {
    /// The URL that answered with the redirect.
    public let source: URL
    /// 301, 302, 303, 307 or 308.
    public let statusCode: Int
    /// The redirect response's header fields, names in lower case.
    public let headers: [String: String]
    /// Where the server points, already allowed by the loader's own rules (no loop,
    /// no scheme but http(s), no downgrade unless allowed, within the limit).
    public let target: URL
    /// How many redirects this load has followed before this one.
    public let hop: Int
}

/// What a redirect handler decides: Nuke's `willPerformHTTPRedirection`, SDWebImage's
/// `SDWebImageDownloaderRequestModifier` for redirects.
public enum RedirectDecision: Sendable {
    /// Follow to the server's target as the loader would.
    case follow
    /// Follow to `url` instead, sending `headers` on that hop too (added to the
    /// request's, replacing fields of the same name). The loader's own rules hold
    /// for `url` as for the server's target.
    case followTo(URL, headers: [String: String] = [:])
    /// Do not follow: the load fails with `ImagoError.redirectRefused` and `reason`.
    case refuse(reason: String)
}

/// Decides each redirect of an HTTP loader's transfers, on the loader's own thread
/// (curl's driver, URLSession's delegate queue): quick, and never blocking.
public typealias RedirectHandler = @Sendable (HTTPRedirect) -> RedirectDecision

extension RedirectPolicy {
    /// Checks a redirect from `source` to `target` against the policy, then asks
    /// its handler: the hop to make, with the headers to add to it. Throws
    /// `ImagoError.redirectRefused` for a target either refuses.
    package func decide(
        from source: URL, statusCode: Int, headers: [String: String], to target: URL, seen: [URL]
    ) throws(ImagoError) -> (url: URL, headers: [String: String]) {
        try check(from: source, to: target, seen: seen)
        guard let handler else { return (target, [:]) }
        switch handler(HTTPRedirect(source: source, statusCode: statusCode, headers: headers, target: target, hop: seen.count - 1)) {
        case .follow:
            return (target, [:])
        case .followTo(let url, let extra):
            if url != target { try check(from: source, to: url, seen: seen) }
            return (url, extra)
        case .refuse(let reason):
            throw .redirectRefused(url: target.absoluteString, reason: reason)
        }
    }
}
