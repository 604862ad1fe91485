import Foundation

/// HTTP-date parsing (RFC 9110 §5.6.7), shared by `Retry-After` and the HTTP cache's
/// `Date`, `Expires` and `Last-Modified`, so that both read dates the same way.
enum HTTPDate {
    /// IMF-fixdate first: RFC 9110 requires senders to use it, so the obsolete RFC 850
    /// and asctime forms are tried only when it fails.
    private static let formats = [
        "EEE, dd MMM yyyy HH:mm:ss zzz",
        "EEEE, dd-MMM-yy HH:mm:ss zzz",
        "EEE MMM d HH:mm:ss yyyy",
    ]

    /// The date `value` names, or nil when it is not an HTTP-date in any of the three
    /// forms (a recipient must then treat it per the header's own rule: `Expires`
    /// calls it expired, `Retry-After` ignores it).
    static func parse(_ value: String) -> Date? {
        let text = value.trimmingCharacters(in: .whitespaces)
        guard !text.isEmpty else { return nil }
        for format in formats {
            // A formatter per call: these headers are read once per network response,
            // not per cache hit (the cache keeps the parsed dates), and DateFormatter
            // is not Sendable, so a shared one would need a lock for no real gain.
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "GMT")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) {
                return date
            }
        }
        return nil
    }
}
