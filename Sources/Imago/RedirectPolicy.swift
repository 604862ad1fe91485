import Foundation

/// Which redirects a load follows: never a loop, never more than a limit, never
/// to a scheme other than http(s), and never from https down to http unless allowed.
///
/// A pure value, so the decision can be tested without a TLS server.
package struct RedirectPolicy: Sendable {
    /// How many redirects one load may follow.
    package var maximumRedirects: Int
    /// Whether `https` may redirect to `http`.
    package var allowsHTTPSDowngrade: Bool
    /// The caller's say on each redirect the rules allow.
    package var handler: RedirectHandler?

    /// Makes a policy; the defaults are the safe ones.
    package init(maximumRedirects: Int = 10, allowsHTTPSDowngrade: Bool = false, handler: RedirectHandler? = nil) {
        self.maximumRedirects = maximumRedirects
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
        self.handler = handler
    }

    /// Checks a redirect from `source` to `target`, where `seen` holds every URL of
    /// this load so far, the original first. Throws `ImagoError.redirectRefused`
    /// naming the target and the reason.
    package func check(from source: URL, to target: URL, seen: [URL]) throws(ImagoError) {
        let refuse = { (reason: String) -> ImagoError in .redirectRefused(url: target.absoluteString, reason: reason) }
        let targetScheme = target.scheme?.lowercased() ?? ""
        guard targetScheme == "http" || targetScheme == "https" else {
            throw refuse("the target's scheme '\(targetScheme)' is not http or https")
        }
        guard target.host.map({ !$0.isEmpty }) ?? false else {
            throw refuse("the target has no host")
        }
        if source.scheme?.lowercased() == "https", targetScheme == "http", !allowsHTTPSDowngrade {
            throw refuse("it would downgrade https to http")
        }
        if seen.contains(where: { $0.absoluteString == target.absoluteString }) {
            throw refuse("redirect loop (the target was already visited)")
        }
        if seen.count > maximumRedirects {
            throw refuse("more than \(maximumRedirects) redirects")
        }
    }

    /// Whether two URLs share an origin (scheme, host, port): credentials may follow a
    /// redirect only within one.
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, url.host?.lowercased() ?? "", url.port ?? (scheme == "https" ? 443 : 80))
        }
        return origin(a) == origin(b)
    }
}

// MARK: - Transfers
