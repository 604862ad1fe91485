import Foundation

// Cache-Control as the HTTP cache metadata keeps it.

extension HTTPCacheMetadata {
    /// The Cache-Control response directives that matter to Imago's caches, private
    /// (memory, disk) and shared (the fleet's Redis).
    ///
    /// Names are case-insensitive and values may be tokens or quoted strings (RFC 9111
    /// §5.2 asks recipients to accept both). When a directive appears twice, the first
    /// wins (§4.2.1). Unknown directives are ignored.
    @_spi(HTTPCaching) public struct CacheControl: Sendable, Codable, Hashable {
        /// `max-age`, in seconds. A `max-age` without a valid number counts as 0:
        /// RFC 9111 §4.2.1 encourages treating invalid freshness information as stale,
        /// which costs at most a revalidation, where ignoring it could let an
        /// `Expires` or the heuristic keep a response the server meant to expire.
        var maxAge: Double?
        /// `no-cache`: stored, but never used without revalidating.
        var noCache = false
        /// `no-store`: must not be kept at all.
        var noStore = false
        /// `must-revalidate`: once stale, never served, not even when the network fails.
        var mustRevalidate = false
        /// `private`: a private cache (memory, disk) may store it; a tier other
        /// users' loads read (Redis) must not (RFC 9111 §5.2.2.7).
        var isPrivate = false
        /// `public`: a shared cache may keep the response even when the request
        /// carried credentials (RFC 9111 §3.5).
        var isPublic = false
        /// `s-maxage`, in seconds: a shared cache's `max-age`, overriding it and
        /// `Expires` there, with `proxy-revalidate`'s meaning besides (§5.2.2.10); a
        /// private cache ignores it. One without a valid number counts as 0, as for
        /// `max-age`.
        var sharedMaxAge: Double?
        /// `proxy-revalidate`: `must-revalidate` for shared caches alone (§5.2.2.8).
        var proxyRevalidate = false
        /// `immutable` (RFC 8246): the body will not change while fresh, so a reload
        /// need not revalidate a fresh response. It does not lengthen freshness.
        var isImmutable = false
        /// `stale-if-error` (RFC 5861), in seconds: how long past freshness the
        /// response may be served when the server cannot be reached. Ignored when its
        /// value is not a number (the caller's allowance applies instead).
        var staleIfError: Double?
        /// `stale-while-revalidate` (RFC 5861), in seconds: how long past freshness the
        /// response may be served while it is revalidated in the background. Ignored
        /// when its value is not a number.
        var staleWhileRevalidate: Double?

        /// No directives.
        init() {}

        /// What the JSON stored form of earlier versions holds; the shared-cache
        /// directives came with the binary form alone.
        private enum CodingKeys: String, CodingKey {
            case maxAge, noCache, noStore, mustRevalidate, isPrivate, isPublic, isImmutable, staleIfError, staleWhileRevalidate
        }

        /// Parses a Cache-Control value; several header lines joined with commas, as
        /// HTTP allows for list fields, parse as one.
        @_spi(HTTPCaching) public init(parsing value: String) {
            var seen = Set<String>()
            for (name, argument) in Self.directives(in: value) where seen.insert(name).inserted {
                switch name {
                case "max-age": maxAge = argument.flatMap(Self.deltaSeconds) ?? 0
                case "no-cache": noCache = true
                case "no-store": noStore = true
                case "must-revalidate": mustRevalidate = true
                case "private": isPrivate = true
                case "public": isPublic = true
                case "immutable": isImmutable = true
                case "stale-if-error": staleIfError = argument.flatMap(Self.deltaSeconds)
                case "stale-while-revalidate": staleWhileRevalidate = argument.flatMap(Self.deltaSeconds)
                case "s-maxage": sharedMaxAge = argument.flatMap(Self.deltaSeconds) ?? 0
                case "proxy-revalidate": proxyRevalidate = true
                default: break  // no-transform, extensions.
                }
            }
        }

        /// Splits a directive list at commas outside quoted strings, lower-casing the
        /// names and unquoting the arguments.
        static func directives(in value: String) -> [(name: String, argument: String?)] {
            var result: [(name: String, argument: String?)] = []
            var element = ""
            var quoted = false
            var escaped = false
            func finish() {
                defer { element = "" }
                let parts = element.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts[0].trimmingHTTPWhitespace.lowercased()
                guard !name.isEmpty else { return }
                let argument = parts.count > 1 ? unquoted(parts[1].trimmingHTTPWhitespace) : nil
                result.append((name, argument))
            }
            for character in value {
                if escaped {
                    escaped = false
                } else if quoted, character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    quoted.toggle()
                } else if character == ",", !quoted {
                    finish()
                    continue
                }
                element.append(character)
            }
            finish()
            return result
        }

        /// A quoted-string's content with its quoted-pairs resolved; a token unchanged.
        private static func unquoted(_ text: String) -> String {
            guard text.count >= 2, text.first == "\"", text.last == "\"" else { return text }
            var result = ""
            var escaped = false
            for character in text.dropFirst().dropLast() {
                if !escaped, character == "\\" {
                    escaped = true
                    continue
                }
                escaped = false
                result.append(character)
            }
            return result
        }
    }
}

extension HTTPCacheMetadata.CacheControl {
    /// The largest delta-seconds kept: RFC 9111 §1.2.2 has larger values read as
    /// 2^31, which is also plenty ("forever" is about 68 years).
    static let deltaSecondsLimit: Double = 2_147_483_648

    /// A delta-seconds value (RFC 9111 §1.2.2): ASCII digits only, so `-1`, `1.5`,
    /// `+3` and `10s` are invalid.
    static func deltaSeconds(_ text: String) -> Double? {
        guard !text.isEmpty else { return nil }
        var value: Double = 0
        for byte in text.utf8 {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = min(value * 10 + Double(byte - UInt8(ascii: "0")), deltaSecondsLimit)
        }
        return value
    }
}
