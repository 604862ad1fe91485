import Foundation

/// What the disk cache remembers about an HTTP response so it can tell, later and
/// without the network, whether the stored bytes may still be used.
///
/// Not part of Imago's API: what the fuzz targets exercise of it is reachable with
/// `@_spi(HTTPCaching) import Imago`.
///
/// The rules are RFC 9111's for a *private* cache: Imago's disk tier belongs to one
/// user of one app, never shared between users, and keeps `private` responses like
/// any other. A tier other users' loads read (the fleet's Redis) is a *shared* cache:
/// it keeps neither a `private` response nor one to a request with credentials that
/// the server did not allow it to (`sharedCachesMayStore`), and judges what it holds
/// by `s-maxage` and `proxy-revalidate` too (`judged(asShared:)`).
///
/// Only what decides freshness and revalidation is kept, parsed once when the
/// response arrives, so a cache hit does no header parsing. The value is pure: every
/// question takes the time it is asked at, which keeps it testable without clocks.
///
/// Simplifications, each on the safe side or harmless for an image cache:
/// - The request is taken to have been sent when the response arrived (RFC 9111
///   §4.2.3's `response_delay` is 0): the age is never over-estimated by a slow
///   network, at worst under-estimated by one round trip.
/// - `Vary` is matched on the fields of the request as the pipeline prepares it (its
///   own fields, the configuration's, `Accept`, the request modifier's): the fields an
///   HTTP loader adds beneath those (its User-Agent, `Accept-Encoding`) are the same
///   for every load of it (see `select(by:)`).
/// - The qualified forms `no-cache="field"` and `private="field"` count as unqualified,
///   as most caches do (RFC 9111 §5.2.2.4 notes the qualified form is rarely honoured).
@_spi(HTTPCaching) public struct HTTPCacheMetadata: Sendable, Codable, Hashable {
    /// Whether stored bytes may be used without asking the server.
    @_spi(HTTPCaching) public enum Freshness: Sendable, Hashable {
        /// Usable as is for `remaining` more seconds.
        case fresh(remaining: Double)
        /// Must not be used without the server's word. `revalidatable` says whether a
        /// conditional request can get that word cheaply (a 304 instead of the body);
        /// if not, the resource has to be fetched again.
        case stale(revalidatable: Bool)
    }

    /// The longest heuristic freshness, in seconds: one day. RFC 9111 §4.2.2 leaves the
    /// cap to the cache; a day keeps an image that changed quietly from lingering for
    /// long, and is where HTTP/1.1 used to require a warning for heuristic lifetimes.
    static let heuristicFreshnessCap: Double = 86_400

    /// The fraction of the time since `Last-Modified` used as heuristic freshness: the
    /// 10% RFC 9111 §4.2.2 suggests, since a resource unchanged for long tends to stay so.
    static let heuristicFreshnessFraction: Double = 0.1

    /// The resource the response came from.
    private(set) var url: URL
    /// When the response (or the 304 that last freshened it) arrived: where the
    /// response's time in the cache is counted from.
    private(set) var storedAt: Date
    /// The `ETag`, verbatim (weak or strong), for `If-None-Match`.
    private(set) var etag: String?
    /// The `Last-Modified` value, verbatim, for `If-Modified-Since`; kept only when it
    /// is a valid HTTP-date, since a server must ignore an invalid one anyway.
    private(set) var lastModified: String?
    /// `lastModified` as a date, for the heuristic.
    private(set) var lastModifiedDate: Date?
    /// The response's `Date`: when the server generated it. Nil when absent or
    /// invalid, in which case `storedAt` stands in (RFC 9110 §6.6.1).
    private(set) var date: Date?
    /// The `Age` the response arrived with, in seconds: time already spent in caches
    /// upstream. 0 when absent or invalid.
    private(set) var ageValue: Double
    /// The `Expires` date. An invalid one (`0`, `-1`, garbage) is recorded as
    /// `Date.distantPast`: RFC 9111 §5.3 says it means "already expired".
    private(set) var expires: Date?
    /// The Cache-Control directives.
    private(set) var cacheControl: CacheControl
    /// The `Vary` value, verbatim: `*` makes the response unusable for any later
    /// request (RFC 9111 §4.1).
    private(set) var vary: String?
    /// What the request the response answered sent in each field `Vary` names, as
    /// `select(by:)` wrote it down; nil when `Vary` names none, or for a record kept
    /// before requests were written down, which then answers no request its `Vary`
    /// selects by.
    var selection: String?
    /// Whether the request the response answered carried credentials
    /// (`DataResponse.requestCarriedCredentials`): a shared cache keeps it only when
    /// the server allows it to.
    var requestCarriedCredentials = false
    /// Whether the questions of freshness are answered as a shared cache answers
    /// them (`judged(asShared:)`). Not kept: each tier judges what it holds.
    private(set) var isJudgedByASharedCache = false

    /// The fields kept in the JSON stored form of earlier versions.
    private enum CodingKeys: String, CodingKey {
        case url, storedAt, etag, lastModified, lastModifiedDate, date, ageValue, expires, cacheControl, vary
    }

    /// Records a response, or returns nil when it must not be stored:
    /// - any status but 200 and 203 (a proxy's transformed copy of the same image):
    ///   only a complete, successful body is worth keeping, and caching an error (a
    ///   404) would hide an image published a moment later; redirects are followed
    ///   before this point, and a 206 holds part of a body;
    /// - `Cache-Control: no-store`;
    /// - `Vary: *`, which no later request can match.
    ///
    /// - Parameters:
    ///   - url: the URL the response answered.
    ///   - statusCode: the response's HTTP status.
    ///   - headers: the response headers; names are matched case-insensitively.
    ///   - storedAt: when the response arrived.
    ///   - requestCarriedCredentials: whether the request carried credentials
    ///     (`DataResponse.requestCarriedCredentials`).
    @_spi(HTTPCaching) public init?(
        url: URL, statusCode: Int, headers: [String: String], storedAt: Date, requestCarriedCredentials: Bool = false
    ) {
        guard statusCode == 200 || statusCode == 203 else { return nil }
        self.init(url: url, fields: Self.fields(headers), storedAt: storedAt)
        self.requestCarriedCredentials = requestCarriedCredentials
        guard isStorable else { return nil }
    }

    private init(url: URL, fields: [String: String], storedAt: Date) {
        self.url = url
        self.storedAt = storedAt
        etag = nil
        lastModified = nil
        lastModifiedDate = nil
        date = nil
        ageValue = 0
        expires = nil
        cacheControl = CacheControl()
        vary = nil
        apply(fields)
    }

    /// Metadata with every field given: the stored form, read back.
    init(
        url: URL, storedAt: Date, etag: String?, lastModified: String?, lastModifiedDate: Date?, date: Date?,
        ageValue: Double, expires: Date?, cacheControl: CacheControl, vary: String?, selection: String?,
        requestCarriedCredentials: Bool
    ) {
        self.url = url
        self.storedAt = storedAt
        self.etag = etag
        self.lastModified = lastModified
        self.lastModifiedDate = lastModifiedDate
        self.date = date
        self.ageValue = ageValue
        self.expires = expires
        self.cacheControl = cacheControl
        self.vary = vary
        self.selection = selection
        self.requestCarriedCredentials = requestCarriedCredentials
    }

    /// Whether the response may be kept at all: false after a 304 or a new 200 that
    /// says `no-store` or `Vary: *`; the cache should then drop the entry once it has
    /// served the current request.
    var isStorable: Bool {
        !cacheControl.noStore && !varies(on: "*")
    }

    /// Whether `Vary` names one of `fields` (lower-case names, or `*`).
    private func varies(on fields: String...) -> Bool {
        selectingNames.contains { fields.contains($0) }
    }

    /// Whether a cache that other users' loads read (a shared cache in RFC 9111's
    /// sense: the fleet's Redis tier) may keep the response, and what is made from it
    /// (a thumbnail shows the same picture): not one marked `private`, meant for the
    /// user it was sent to (§5.2.2.7), nor one to a request with credentials unless
    /// the server said `public`, `s-maxage` or `must-revalidate` (§3.5): without
    /// them, a picture behind a login would be shown to whoever asks next.
    ///
    /// Nor one whose `Vary` names `Cookie` or `Authorization`: chosen by one user's
    /// cookie or credentials, it is that user's. Matched by `Vary` (§4.1), it would
    /// answer only the same cookie, and each user's copy would replace the others'
    /// in the tier's one record of the image. Other fields select alike for the
    /// machines of a fleet, or as a field of the request's own (`Accept`, which
    /// builds decoding other formats send otherwise).
    var sharedCachesMayStore: Bool {
        guard isStorable, !cacheControl.isPrivate, !varies(on: "cookie", "authorization") else { return false }
        return !requestCarriedCredentials || cacheControl.isPublic || cacheControl.sharedMaxAge != nil || cacheControl.mustRevalidate
    }

    /// The same response with its freshness judged as a shared cache judges it
    /// (`shared`): `s-maxage` over `max-age` and `Expires`, and no stale use under
    /// `proxy-revalidate` or `s-maxage`; or as a private one. Each tier judges what
    /// it holds so.
    func judged(asShared shared: Bool) -> HTTPCacheMetadata {
        var result = self
        result.isJudgedByASharedCache = shared
        return result
    }

    /// Whether a stale response may never be used without the server's word, not
    /// even offline (`must-revalidate`, and for a shared cache `proxy-revalidate` and
    /// `s-maxage`).
    var forbidsStaleUse: Bool {
        cacheControl.mustRevalidate
            || isJudgedByASharedCache && (cacheControl.proxyRevalidate || cacheControl.sharedMaxAge != nil)
    }

    /// Whether a conditional request can confirm the stored bytes with a 304.
    var hasValidators: Bool { etag != nil || lastModifiedDate != nil }

    /// How long the response is fresh for, in seconds from its generation (RFC 9111
    /// §4.2.1): `max-age` if given (it overrides `Expires`), else `Expires` minus
    /// `Date`, else the heuristic from `Last-Modified`, else 0: a response that says
    /// nothing about its freshness is never fresh.
    @_spi(HTTPCaching) public var freshnessLifetime: Double {
        if isJudgedByASharedCache, let sharedMaxAge = cacheControl.sharedMaxAge { return sharedMaxAge }
        if let maxAge = cacheControl.maxAge { return maxAge }
        let generated = date ?? storedAt
        if let expires { return max(0, expires.timeIntervalSince(generated)) }
        if let lastModifiedDate {
            let unchangedFor = max(0, generated.timeIntervalSince(lastModifiedDate))
            return min(unchangedFor * Self.heuristicFreshnessFraction, Self.heuristicFreshnessCap)
        }
        return 0
    }

    /// The response's age at `now`, in seconds (RFC 9111 §4.2.3): its age on arrival,
    /// the larger of what `Age` claims and what the clocks show (`storedAt − Date`),
    /// plus the time since it arrived. A clock set back never makes it younger than on
    /// arrival.
    func currentAge(at now: Date) -> Double {
        let apparentAge = max(0, storedAt.timeIntervalSince(date ?? storedAt))
        let initialAge = max(apparentAge, ageValue)
        return initialAge + max(0, now.timeIntervalSince(storedAt))
    }

    /// Whether the stored bytes may be used at `now` without asking the server.
    /// `no-cache` makes the response stale from the start; one that may not be stored
    /// is stale and not revalidatable, since it is not to be reused at all.
    @_spi(HTTPCaching) public func freshness(at now: Date) -> Freshness {
        guard isStorable else { return .stale(revalidatable: false) }
        if !cacheControl.noCache {
            let remaining = freshnessLifetime - currentAge(at: now)
            if remaining > 0 { return .fresh(remaining: remaining) }
        }
        return .stale(revalidatable: hasValidators)
    }

    /// The headers that turn a request into a conditional one: `If-None-Match` from
    /// the ETag and `If-Modified-Since` from `Last-Modified`, both when both exist
    /// (RFC 9110 §13.1.3: a server that knows ETags uses the first and ignores the
    /// second; one that does not still has the date). Values go back verbatim, as the
    /// server gave them, so its comparison sees exactly its own validator, except a
    /// date whose names were read in another case (`tue`, `gmt`): as the server wrote
    /// it, it is no HTTP-date and would be ignored, so it goes as an IMF-fixdate.
    var conditionalHeaders: [String: String] {
        var headers: [String: String] = [:]
        if let etag, HTTPHeaderFields.isSendableValue(etag) { headers["If-None-Match"] = etag }
        if let lastModified, let lastModifiedDate {
            headers["If-Modified-Since"] = HTTPDate.isSpelledAsTheGrammar(lastModified) ? lastModified : HTTPDate.format(lastModifiedDate)
        }
        return headers
    }

    /// Whether a 304 with `headers`, answering a request that sent `validators`
    /// (`conditionalHeaders`), is about the response they came from (RFC 9111
    /// §4.3.4): an ETag it carries is the one sent (compared weakly, as servers that
    /// compress weaken theirs), or a Last-Modified the date sent. A server whose
    /// handler answers 304 to a matching date while its ETag moved on says so with
    /// the new ETag; applied to the kept bytes, it would confirm them for good.
    static func notModified(_ headers: [String: String], answers validators: [String: String]) -> Bool {
        let fields = fields(headers)
        func opaque(_ tag: String) -> Substring {
            let tag = tag.trimmingHTTPWhitespace
            return tag.hasPrefix("W/") ? tag.dropFirst(2) : tag[...]
        }
        if let etag = fields["etag"], !etag.trimmingHTTPWhitespace.isEmpty {
            return validators["If-None-Match"].map { opaque($0) == opaque(etag) } ?? false
        }
        if let lastModified = fields["last-modified"].flatMap({ HTTPDate.parse($0.trimmingHTTPWhitespace) }),
           let sent = validators["If-Modified-Since"].flatMap({ HTTPDate.parse($0) }) {
            return lastModified == sent
        }
        return true
    }

    /// The metadata after the server answered a revalidation with `headers`.
    ///
    /// - 304: the stored bytes are still good. Each header the 304 carries replaces
    ///   the stored one (RFC 9111 §4.3.4): Cache-Control as a whole, `Expires`,
    ///   `ETag`, `Last-Modified`, `Vary`; those it lacks are kept. The age clock
    ///   restarts at `now`, from the 304's own `Date` and `Age` (none means generated
    ///   now), so the response is as fresh as a new one.
    /// - 200: a new body replaced the stored one; its metadata is built from `headers`
    ///   alone, nothing carried over. Check `isStorable` before keeping it.
    /// - Anything else says nothing about the stored response, which is returned
    ///   unchanged; whether to serve it stale is `servesStale(afterError:allowance:)`'s
    ///   question.
    @_spi(HTTPCaching) public func updated(with headers: [String: String], statusCode: Int = 304, at now: Date) -> HTTPCacheMetadata {
        switch statusCode {
        case 304:
            var result = self
            result.storedAt = now
            result.date = nil
            result.ageValue = 0
            result.apply(Self.fields(headers))
            // Chosen by the same fields as before, unless the 304 names others.
            if result.vary != vary { result.selection = nil }
            return result
        case 200:
            return HTTPCacheMetadata(url: url, fields: Self.fields(headers), storedAt: now)
        default:
            return self
        }
    }

    /// Whether this metadata, as a 304 left it, answers every question about the
    /// stored response as `stored` did: the same headers but for the age clock, on a
    /// response that is never used without revalidating (`no-cache`), whose age
    /// therefore never counts. The cache need not write the record again then.
    func confirms(_ stored: HTTPCacheMetadata) -> Bool {
        guard cacheControl.noCache else { return false }
        var aligned = self
        aligned.storedAt = stored.storedAt
        aligned.date = stored.date
        aligned.ageValue = stored.ageValue
        return aligned == stored
    }

    /// Whether this response may be served at `at` because the network failed.
    ///
    /// Yes while fresh. Once stale, never with `must-revalidate` or `no-cache`, nor
    /// when it may not be stored: RFC 9111 §4.2.4 forbids serving a stale response
    /// those cover, even offline. Otherwise for as long past freshness as
    /// `stale-if-error` allows when the server gave one (its word beats the caller's,
    /// longer or shorter), else for `allowance` seconds (`.infinity`: however stale).
    @_spi(HTTPCaching) public func servesStale(afterError at: Date, allowance: Double) -> Bool {
        servesPastFreshness(at: at, window: cacheControl.staleIfError ?? allowance)
    }

    /// Whether this response may be served at `now` while a revalidation runs in the
    /// background: yes while fresh; once stale, only within `stale-while-revalidate`
    /// past freshness, and never under the directives that forbid serving stale (see
    /// `servesStale(afterError:allowance:)`). Without the directive the server has not
    /// agreed to it, so the caller waits for the revalidation.
    @_spi(HTTPCaching) public func servesWhileRevalidating(at now: Date) -> Bool {
        servesPastFreshness(at: now, window: cacheControl.staleWhileRevalidate)
    }

    /// How long an answer reached through `redirects` may be reused under the URL
    /// first asked for, in seconds: the shortest the redirects allow. A permanent
    /// redirect (301, 308) is reusable for as long as it says, or without end when it
    /// says nothing (RFC 9111 §4.2.2 makes it heuristically cacheable); a temporary
    /// one (302, 303, 307) only for as long as it says. Nil when one of them may not
    /// be reused at all (no freshness of its own, `no-store`, `no-cache`): the answer
    /// must then not be kept under the URL asked for, or the redirect would be
    /// skipped while the answer stays fresh.
    static func reuseLifetime(through redirects: [DataResponse.Redirect], at now: Date) -> Double? {
        var lifetime = Double.infinity
        for redirect in redirects {
            let control = CacheControl(parsing: redirect.headers["cache-control"] ?? "")
            guard !control.noStore, !control.noCache else { return nil }
            var stated = control.maxAge
            if stated == nil, let expires = redirect.headers["expires"] {
                let generated = redirect.headers["date"].flatMap { HTTPDate.parse($0) } ?? now
                stated = max(0, (HTTPDate.parse(expires) ?? .distantPast).timeIntervalSince(generated))
            }
            switch redirect.statusCode {
            case 301, 308: lifetime = min(lifetime, stated ?? .infinity)
            case 302, 303, 307: lifetime = min(lifetime, stated ?? 0)
            default: return nil
            }
        }
        return lifetime > 0 ? lifetime : nil
    }

    /// The metadata with its freshness lifetime cut to at most `lifetime` seconds.
    func capped(toLifetime lifetime: Double) -> HTTPCacheMetadata {
        var result = self
        if lifetime < freshnessLifetime { result.cacheControl.maxAge = lifetime }
        // A shared cache reads s-maxage instead: it is capped alike.
        if let shared = cacheControl.sharedMaxAge, lifetime < shared { result.cacheControl.sharedMaxAge = lifetime }
        return result
    }

    /// Whether the response is fresh at `now`, or stale by at most `window` seconds
    /// (none past freshness when nil) and allowed to be served stale at all.
    private func servesPastFreshness(at now: Date, window: Double?) -> Bool {
        if case .fresh = freshness(at: now) { return true }
        guard let window, isStorable, !forbidsStaleUse, !cacheControl.noCache else { return false }
        let staleness = currentAge(at: now) - freshnessLifetime
        return staleness <= max(window, 0)
    }

    /// Records the freshness-related headers present in `fields`, replacing what was
    /// there; absent ones leave the current values alone.
    private mutating func apply(_ fields: [String: String]) {
        if let value = fields["cache-control"] {
            cacheControl = CacheControl(parsing: value)
        }
        if let value = fields["expires"] {
            expires = HTTPDate.parse(value) ?? .distantPast
        }
        if let value = fields["date"] {
            date = HTTPDate.parse(value)
        }
        if let value = fields["age"] {
            // A list-valued Age uses its first member; an invalid one is ignored (§5.1).
            let first = value.split(separator: ",", omittingEmptySubsequences: false).first.map(String.init) ?? ""
            ageValue = CacheControl.deltaSeconds(first.trimmingHTTPWhitespace) ?? ageValue
        }
        if let value = fields["etag"] {
            // One that could not go back in `If-None-Match` is no validator: sent, it
            // would fail every later request; the response is fetched again instead.
            let trimmed = value.trimmingHTTPWhitespace
            etag = trimmed.isEmpty || !HTTPHeaderFields.isSendableValue(trimmed) ? nil : trimmed
        }
        if let value = fields["last-modified"] {
            let trimmed = value.trimmingHTTPWhitespace
            lastModifiedDate = HTTPDate.parse(trimmed)
            lastModified = lastModifiedDate == nil ? nil : trimmed
        }
        if let value = fields["vary"] {
            vary = value.trimmingHTTPWhitespace
        }
    }

    /// Header fields keyed by lower-cased name: a response's (data loaders already
    /// lower-case them; this guards against one that does not) or a request's. Names
    /// differing only in case are joined with commas, as repeated list fields are, in
    /// a fixed order.
    static func fields(_ headers: [String: String]) -> [String: String] {
        // Lower-case already (the curl loader's): nothing to join, the same fields.
        // Sorting and copying them took some 10,000 instructions at every 304.
        if !headers.keys.contains(where: \.hasASCIIUppercaseOrNonASCII) { return headers }
        var fields: [String: String] = [:]
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
            let key = name.lowercased()
            fields[key] = fields[key].map { "\($0), \(value)" } ?? value
        }
        return fields
    }
}

extension FreshnessPolicy {
    /// Whether a stored response with `metadata` may be used at `now` without asking
    /// the server.
    func isFresh(_ metadata: HTTPCacheMetadata, at now: Date) -> Bool {
        if case .fresh = metadata.freshness(at: now) { return true }
        guard case .trusted(let seconds) = self, metadata.isStorable else { return false }
        return now.timeIntervalSince(metadata.storedAt) < seconds
    }
}
