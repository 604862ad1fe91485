import Foundation

/// When the disk and shared tiers use a stored image without asking the server
/// (`ImageLoader.Configuration.freshnessPolicy`).
///
/// Under HTTP's rules an image whose server sends `Cache-Control: no-cache`, or no
/// freshness at all, is confirmed with the server (a conditional request, answered
/// by a bodiless 304 while it has not changed) at every load from disk. An app that
/// would rather not wait for that, and accepts showing an image that changed on the
/// server for a while, trusts its disk tier for a set time instead, as Kingfisher does
/// for 7 days by default.
public enum FreshnessPolicy: Sendable, Hashable {
    /// HTTP's rules alone: `max-age`, `Expires`, `no-cache` and the heuristic from
    /// `Last-Modified` decide. The default.
    case httpHeaders
    /// A stored image, original or sized variant, is used without asking the server
    /// for `seconds` after it arrived (or the server last confirmed it), whatever its
    /// headers say; after that HTTP's rules decide. `no-store` responses are never
    /// stored, so never trusted.
    case trusted(seconds: Double)
}
