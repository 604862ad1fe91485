import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// HTTP freshness, validators, revalidation and stale-on-error rules of the disk
/// cache, all against an injected clock.
@Suite struct HTTPCacheMetadataTests {
    /// Header values lose spaces and tabs around them, nothing else: other
    /// whitespace is not HTTP's to drop.
    @Test func headerValuesAreTrimmedOfSpacesAndTabsOnly() {
        #expect(" \t max-age=3 \t ".trimmingHTTPWhitespace == "max-age=3")
        #expect("\"x y\"".trimmingHTTPWhitespace == "\"x y\"")
        #expect(" \t ".trimmingHTTPWhitespace == "")
        #expect("\u{A0}W/\"1\"\n".trimmingHTTPWhitespace == "\u{A0}W/\"1\"\n")
        #expect("a, b ".split(separator: ",")[1].trimmingHTTPWhitespace == "b")
    }

    static let url = URL(string: "https://images.example/cat.jpg")!
    /// 2015-10-21T07:28:00Z: the moment every response below arrives.
    static let t0 = Date(timeIntervalSince1970: 1_445_412_480)

    /// `t0 + offset` as an IMF-fixdate.
    static func httpDate(_ offset: Double) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: t0.addingTimeInterval(offset))
    }

    static func at(_ offset: Double) -> Date { t0.addingTimeInterval(offset) }

    /// Metadata with every field set, Cache-Control's every switch among them.
    static let fullyDescribed = HTTPCacheMetadata(
        url: URL(string: "https://images.example/a%20b.jpg?sig=x&y=1")!, statusCode: 200,
        headers: [
            "cache-control": "max-age=60, no-cache, must-revalidate, private, public, immutable, stale-if-error=5, stale-while-revalidate=7",
            "etag": "W/\"ü-\\\"q\"", "last-modified": httpDate(-1_000), "date": httpDate(-3),
            "age": "2", "expires": "0", "vary": "Accept",
        ],
        storedAt: t0.addingTimeInterval(0.123_456_789))!

    /// A 200 stored at `t0` with a `Date` of `t0` unless the headers give one.
    static func stored(_ headers: [String: String], status: Int = 200) -> HTTPCacheMetadata? {
        var headers = headers
        if !headers.keys.contains(where: { $0.lowercased() == "date" }) { headers["date"] = httpDate(0) }
        return HTTPCacheMetadata(url: url, statusCode: status, headers: headers, storedAt: t0)
    }

    static func directives(_ value: String) -> HTTPCacheMetadata.CacheControl {
        HTTPCacheMetadata.CacheControl(parsing: value)
    }

    // MARK: Parsing

    @Test func directiveNamesAreCaseInsensitiveAndValuesMayBeQuoted() {
        let control = Self.directives("MAX-AGE=60, No-Cache, Must-Revalidate, PRIVATE, Public, Immutable")
        #expect(control.maxAge == 60)
        #expect(control.noCache && control.mustRevalidate && control.isPrivate && control.isPublic && control.isImmutable)
        #expect(!control.noStore)
        #expect(Self.directives("max-age=\"120\"").maxAge == 120)
        #expect(Self.directives(" max-age = 7 ").maxAge == 7)
        #expect(Self.directives("stale-if-error=\"30\", stale-while-revalidate=15").staleIfError == 30)
        #expect(Self.directives("stale-if-error=\"30\", stale-while-revalidate=15").staleWhileRevalidate == 15)
        // A comma inside a quoted string does not split the list.
        let qualified = Self.directives("no-cache=\"Set-Cookie, max-age=9\", max-age=5")
        #expect(qualified.noCache && qualified.maxAge == 5)
        let escaped = Self.directives(#"private="a\"b, c", max-age=3"#)
        #expect(escaped.isPrivate && escaped.maxAge == 3)
        #expect(HTTPCacheMetadata.CacheControl.directives(in: #"x="a\"b""#).first?.argument == #"a"b"#)
    }

    @Test func repeatedHeaderLinesJoinedWithCommasParseAsOneList() throws {
        // The first occurrence of a directive wins (RFC 9111 §4.2.1).
        let control = Self.directives("max-age=60, public, max-age=10")
        #expect(control.maxAge == 60 && control.isPublic)
        // A loader that kept two spellings of the name: both are read.
        let metadata = try #require(Self.stored(["Cache-Control": "max-age=60", "cache-control": "no-cache"]))
        #expect(metadata.cacheControl.maxAge == 60)
        #expect(metadata.cacheControl.noCache)
        let mixedCase = try #require(Self.stored(["ETag": "\"v1\"", "Cache-Control": "max-age=30"]))
        #expect(mixedCase.etag == "\"v1\"")
        #expect(mixedCase.freshness(at: Self.t0) == .fresh(remaining: 30))
    }

    @Test func garbageIsIgnoredButAnInvalidMaxAgeMeansStale() {
        let control = Self.directives(" , ,, =5, foo, bar=\"baz, stale-if-error=abc")
        #expect(control == HTTPCacheMetadata.CacheControl())  // the open quote swallows the rest
        let numbers = Self.directives("stale-if-error=abc, stale-while-revalidate=-3, s-maxage=600, proxy-revalidate")
        #expect(numbers.staleIfError == nil && numbers.staleWhileRevalidate == nil)
        // The shared-cache directives are their own: a private cache reads neither.
        #expect(numbers.maxAge == nil && !numbers.mustRevalidate)
        #expect(numbers.sharedMaxAge == 600 && numbers.proxyRevalidate)
        #expect(Self.directives("s-maxage=soon").sharedMaxAge == 0)
        // RFC 9111 §4.2.1: invalid freshness information is best taken as stale.
        for value in ["max-age=abc", "max-age=-1", "max-age=1.5", "max-age", "max-age=", "max-age=+3", "max-age=10s"] {
            #expect(Self.directives(value).maxAge == 0, "\(value)")
        }
        // delta-seconds overflow is read as 2^31 (RFC 9111 §1.2.2), not wrapped or infinite.
        #expect(Self.directives("max-age=99999999999999999999999999").maxAge == 2_147_483_648)
    }

    // MARK: Freshness lifetime

    @Test func maxAgeBeatsExpires() throws {
        let longer = try #require(Self.stored(["cache-control": "max-age=60", "expires": Self.httpDate(86_400)]))
        #expect(longer.freshnessLifetime == 60)
        #expect(longer.freshness(at: Self.t0) == .fresh(remaining: 60))
        #expect(longer.freshness(at: Self.at(59)) == .fresh(remaining: 1))
        #expect(longer.freshness(at: Self.at(60)) == .stale(revalidatable: false))
        let zero = try #require(Self.stored(["cache-control": "max-age=0", "expires": Self.httpDate(86_400)]))
        #expect(zero.freshness(at: Self.t0) == .stale(revalidatable: false))
        // Even an invalid max-age overrides Expires.
        let invalid = try #require(Self.stored(["cache-control": "max-age=soon", "expires": Self.httpDate(86_400)]))
        #expect(invalid.freshness(at: Self.t0) == .stale(revalidatable: false))
    }

    @Test func expiresIsMeasuredFromTheResponseDate() throws {
        let metadata = try #require(Self.stored(["expires": Self.httpDate(100)]))
        #expect(metadata.freshness(at: Self.t0) == .fresh(remaining: 100))
        #expect(metadata.freshness(at: Self.at(99)) == .fresh(remaining: 1))
        #expect(metadata.freshness(at: Self.at(150)) == .stale(revalidatable: false))
        // The lifetime is Expires − Date, so a server clock ahead of ours does not
        // shorten it: the Date is an hour ahead, Expires 100 s after that.
        let skewed = try #require(Self.stored(["date": Self.httpDate(3_600), "expires": Self.httpDate(3_700)]))
        #expect(skewed.freshness(at: Self.t0) == .fresh(remaining: 100))
        // Without Date the arrival time stands in.
        let undated = try #require(HTTPCacheMetadata(url: Self.url, statusCode: 200, headers: ["expires": Self.httpDate(40)], storedAt: Self.t0))
        #expect(undated.freshness(at: Self.at(10)) == .fresh(remaining: 30))
        // Obsolete date forms are read too.
        let rfc850 = try #require(Self.stored(["expires": "Wednesday, 21-Oct-15 07:29:00 GMT"]))
        #expect(rfc850.freshness(at: Self.t0) == .fresh(remaining: 60))
        let asctime = try #require(Self.stored(["expires": "Wed Oct 21 07:30:00 2015"]))
        #expect(asctime.freshness(at: Self.t0) == .fresh(remaining: 120))
    }

    @Test func pastOrInvalidExpiresIsAlreadyExpired() throws {
        let past = try #require(Self.stored(["expires": Self.httpDate(-60), "etag": "\"a\""]))
        #expect(past.freshness(at: Self.t0) == .stale(revalidatable: true))
        for value in ["0", "-1", "tomorrow", "", "Wed, 21 Oct 2015 07:28:05 GMT, Thu, 22 Oct 2015 07:28:05 GMT"] {
            // An invalid Expires is explicit expiry, so the heuristic does not apply.
            let metadata = try #require(Self.stored(["expires": value, "last-modified": Self.httpDate(-864_000)]), "\(value)")
            #expect(metadata.expires == .distantPast, "\(value)")
            #expect(metadata.freshness(at: Self.t0) == .stale(revalidatable: true), "\(value)")
        }
    }

    @Test func ageAndDateGiveTheCurrentAge() throws {
        // Age: 30 — already half a minute old upstream.
        let aged = try #require(Self.stored(["cache-control": "max-age=100", "age": "30"]))
        #expect(aged.currentAge(at: Self.t0) == 30)
        #expect(aged.freshness(at: Self.at(20)) == .fresh(remaining: 50))
        // Date 20 s before arrival, Age 10: the larger (20) is the age on arrival.
        let delayed = try #require(Self.stored(["cache-control": "max-age=100", "date": Self.httpDate(-20), "age": "10"]))
        #expect(delayed.currentAge(at: Self.at(10)) == 30)
        #expect(delayed.freshness(at: Self.at(10)) == .fresh(remaining: 70))
        // Age larger than the clocks show wins.
        let proxied = try #require(Self.stored(["cache-control": "max-age=100", "date": Self.httpDate(-20), "age": "45"]))
        #expect(proxied.currentAge(at: Self.t0) == 45)
        // A Date in our future (server clock ahead) does not make it younger than 0.
        let ahead = try #require(Self.stored(["cache-control": "max-age=100", "date": Self.httpDate(500)]))
        #expect(ahead.currentAge(at: Self.at(5)) == 5)
        // Invalid Age is ignored; a list-valued one uses its first member.
        for value in ["abc", "-5", "1.5", ""] {
            let metadata = try #require(Self.stored(["cache-control": "max-age=100", "age": value]))
            #expect(metadata.ageValue == 0, "\(value)")
        }
        let listed = try #require(Self.stored(["cache-control": "max-age=100", "age": "5, 50"]))
        #expect(listed.ageValue == 5)
        // A clock set back does not make the response younger than on arrival.
        #expect(aged.currentAge(at: Self.at(-1_000)) == 30)
        // Age alone makes nothing fresh, and an Age beyond max-age is stale at once.
        let old = try #require(Self.stored(["cache-control": "max-age=100", "age": "100"]))
        #expect(old.freshness(at: Self.t0) == .stale(revalidatable: false))
    }

    @Test func heuristicFreshnessFromLastModified() throws {
        // Unchanged for 5 hours: 10% is 30 minutes.
        let recent = try #require(Self.stored(["last-modified": Self.httpDate(-18_000)]))
        #expect(recent.freshnessLifetime == 1_800)
        #expect(recent.freshness(at: Self.at(1_000)) == .fresh(remaining: 800))
        #expect(recent.freshness(at: Self.at(1_800)) == .stale(revalidatable: true))
        // Unchanged for 100 days: capped at a day.
        let ancient = try #require(Self.stored(["last-modified": Self.httpDate(-8_640_000)]))
        #expect(ancient.freshnessLifetime == HTTPCacheMetadata.heuristicFreshnessCap)
        #expect(ancient.freshnessLifetime == 86_400)
        // Measured from Date, not from arrival: Date is 1,000 s earlier.
        let dated = try #require(Self.stored(["date": Self.httpDate(-1_000), "last-modified": Self.httpDate(-11_000)]))
        #expect(dated.freshnessLifetime == 1_000)
        #expect(dated.freshness(at: Self.t0) == .stale(revalidatable: true))
        // Last-Modified after Date (a wrong clock): no heuristic freshness.
        let future = try #require(Self.stored(["last-modified": Self.httpDate(600)]))
        #expect(future.freshness(at: Self.t0) == .stale(revalidatable: true))
        // An invalid Last-Modified is neither a heuristic nor a validator.
        let garbage = try #require(Self.stored(["last-modified": "yesterday"]))
        #expect(garbage.lastModified == nil && garbage.lastModifiedDate == nil)
        #expect(garbage.freshness(at: Self.t0) == .stale(revalidatable: false))
    }

    @Test func nothingIsFreshWithoutFreshnessInformation() throws {
        let bare = try #require(Self.stored([:]))
        #expect(bare.freshnessLifetime == 0)
        #expect(bare.freshness(at: Self.t0) == .stale(revalidatable: false))
        let tagged = try #require(Self.stored(["etag": "\"x\""]))
        #expect(tagged.freshness(at: Self.t0) == .stale(revalidatable: true))
        // `public`, `private` and `immutable` add no freshness of their own.
        let flags = try #require(Self.stored(["cache-control": "public, private, immutable"]))
        #expect(flags.freshness(at: Self.t0) == .stale(revalidatable: false))
    }

    // MARK: What is stored, what is reused

    @Test func responsesThatMustNotBeStored() throws {
        for value in ["no-store", "NO-STORE", "max-age=600, no-store", "public, no-store=\"x\""] {
            #expect(Self.stored(["cache-control": value]) == nil, "\(value)")
        }
        for status in [201, 204, 206, 301, 302, 304, 400, 404, 410, 500, 503] {
            #expect(Self.stored(["cache-control": "max-age=600"], status: status) == nil, "\(status)")
        }
        #expect(Self.stored(["cache-control": "max-age=600", "vary": "*"]) == nil)
        #expect(Self.stored(["cache-control": "max-age=600", "vary": "Accept, *"]) == nil)
        let negotiated = try #require(Self.stored(["cache-control": "max-age=600", "vary": "Accept"]))
        #expect(negotiated.isStorable && negotiated.vary == "Accept")
    }

    @Test func noCacheIsAlwaysStale() throws {
        let validated = try #require(Self.stored(["cache-control": "no-cache, max-age=600", "etag": "\"a\""]))
        #expect(validated.freshness(at: Self.t0) == .stale(revalidatable: true))
        let unvalidated = try #require(Self.stored(["cache-control": "no-cache", "expires": Self.httpDate(600)]))
        #expect(unvalidated.freshness(at: Self.t0) == .stale(revalidatable: false))
        // Not served when the network fails either: it was never to be used unchecked.
        #expect(!validated.servesStale(afterError: Self.t0, allowance: .infinity))
        #expect(!validated.servesWhileRevalidating(at: Self.t0))
    }

    @Test func mustRevalidateAllowsFreshUseOnly() throws {
        let metadata = try #require(Self.stored(["cache-control": "max-age=60, must-revalidate, stale-if-error=600", "etag": "\"a\""]))
        #expect(metadata.freshness(at: Self.at(30)) == .fresh(remaining: 30))
        #expect(metadata.servesStale(afterError: Self.at(30), allowance: 0))
        #expect(metadata.freshness(at: Self.at(61)) == .stale(revalidatable: true))
        #expect(!metadata.servesStale(afterError: Self.at(61), allowance: .infinity))
    }

    @Test func conditionalHeadersEchoTheValidators() throws {
        let both = try #require(Self.stored(["etag": " W/\"abc\" ", "last-modified": "Tue, 20 Oct 2015 07:28:00 GMT"]))
        #expect(both.conditionalHeaders == ["If-None-Match": "W/\"abc\"", "If-Modified-Since": "Tue, 20 Oct 2015 07:28:00 GMT"])
        #expect(both.hasValidators)
        let etagOnly = try #require(Self.stored(["etag": "\"abc\"", "last-modified": "not a date"]))
        #expect(etagOnly.conditionalHeaders == ["If-None-Match": "\"abc\""])
        // The obsolete date forms are echoed verbatim too: the server compares its own text.
        let dateOnly = try #require(Self.stored(["last-modified": "Tuesday, 20-Oct-15 07:28:00 GMT"]))
        #expect(dateOnly.conditionalHeaders == ["If-Modified-Since": "Tuesday, 20-Oct-15 07:28:00 GMT"])
        // A date read in another case goes back as the grammar spells it.
        let lower = try #require(Self.stored(["last-modified": "tue, 20 oct 2015 07:28:00 gmt"]))
        #expect(lower.conditionalHeaders == ["If-Modified-Since": "Tue, 20 Oct 2015 07:28:00 GMT"])
        let obsolete = try #require(Self.stored(["last-modified": "SUNDAY, 06-NOV-94 08:49:37 GMT"]))
        #expect(obsolete.conditionalHeaders == ["If-Modified-Since": "Sun, 06 Nov 1994 08:49:37 GMT"])
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 GMT")
        let none = try #require(Self.stored(["etag": "  "]))
        #expect(none.conditionalHeaders.isEmpty && !none.hasValidators)
    }

    // MARK: Revalidation

    @Test func a304MakesTheResponseFreshAgainAndKeepsTheNewValidators() throws {
        let original = try #require(Self.stored(["cache-control": "max-age=60", "etag": "\"v1\"", "last-modified": Self.httpDate(-86_400)]))
        #expect(original.freshness(at: Self.at(120)) == .stale(revalidatable: true))

        let renewed = original.updated(with: ["cache-control": "max-age=300", "etag": "\"v2\"", "date": Self.httpDate(120)], at: Self.at(120))
        #expect(renewed.freshness(at: Self.at(120)) == .fresh(remaining: 300))
        #expect(renewed.etag == "\"v2\"")
        #expect(renewed.conditionalHeaders["If-None-Match"] == "\"v2\"")
        #expect(renewed.lastModified == original.lastModified)  // not in the 304: kept
        #expect(renewed.storedAt == Self.at(120))
        #expect(renewed.url == original.url)

        // A 304 with only a Date keeps the old directives; the age clock restarts.
        let dated = original.updated(with: ["date": Self.httpDate(500)], at: Self.at(500))
        #expect(dated.freshness(at: Self.at(500)) == .fresh(remaining: 60))
        #expect(dated.etag == "\"v1\"")
        // A 304 with nothing at all: generated when it arrived.
        let bare = original.updated(with: [:], at: Self.at(1_000))
        #expect(bare.freshness(at: Self.at(1_010)) == .fresh(remaining: 50))
        // The old Age does not follow; the 304's own does.
        let aged = try #require(Self.stored(["cache-control": "max-age=60", "age": "50"]))
        #expect(aged.updated(with: [:], at: Self.at(100)).freshness(at: Self.at(100)) == .fresh(remaining: 60))
        #expect(aged.updated(with: ["age": "20"], at: Self.at(100)).freshness(at: Self.at(100)) == .fresh(remaining: 40))
    }

    @Test func a304KeepsAnAbsoluteExpiresAndCanChangeTheRules() throws {
        let expiring = try #require(Self.stored(["expires": Self.httpDate(600), "etag": "\"e\""]))
        // Expires is a point in time: 200 s later only 400 s are left.
        let renewed = expiring.updated(with: ["date": Self.httpDate(200)], at: Self.at(200))
        #expect(renewed.freshness(at: Self.at(200)) == .fresh(remaining: 400))
        // A new Cache-Control replaces the old one as a whole.
        let strict = try #require(Self.stored(["cache-control": "max-age=600, stale-if-error=60", "etag": "\"e\""]))
        let changed = strict.updated(with: ["cache-control": "no-cache"], at: Self.at(10))
        #expect(changed.cacheControl.maxAge == nil && changed.cacheControl.staleIfError == nil)
        #expect(changed.freshness(at: Self.at(10)) == .stale(revalidatable: true))
        // no-store on a 304: use the bytes this once, then drop them.
        let dropped = strict.updated(with: ["cache-control": "no-store"], at: Self.at(10))
        #expect(!dropped.isStorable)
        #expect(dropped.freshness(at: Self.at(10)) == .stale(revalidatable: false))
        #expect(!dropped.servesStale(afterError: Self.at(10), allowance: .infinity))
    }

    @Test func otherRevalidationAnswers() throws {
        let original = try #require(Self.stored(["cache-control": "max-age=60", "etag": "\"v1\""]))
        // A 200: a new body, described by its own headers only.
        let replaced = original.updated(with: ["cache-control": "max-age=10", "date": Self.httpDate(100)], statusCode: 200, at: Self.at(100))
        #expect(replaced.etag == nil)
        #expect(replaced.freshness(at: Self.at(100)) == .fresh(remaining: 10))
        #expect(!original.updated(with: ["cache-control": "no-store"], statusCode: 200, at: Self.at(100)).isStorable)
        #expect(!original.updated(with: ["vary": "*"], statusCode: 200, at: Self.at(100)).isStorable)
        // Anything else says nothing about the stored response.
        for status in [404, 500, 503, 206] {
            #expect(original.updated(with: ["cache-control": "max-age=999", "etag": "\"x\""], statusCode: status, at: Self.at(100)) == original)
        }
    }

    // MARK: Serving stale

    @Test func staleIfErrorWindowBeatsTheCallersAllowance() throws {
        let metadata = try #require(Self.stored(["cache-control": "max-age=60, stale-if-error=100"]))
        #expect(metadata.servesStale(afterError: Self.at(30), allowance: 0))  // fresh
        #expect(metadata.servesStale(afterError: Self.at(150), allowance: 0))  // 90 s stale
        #expect(metadata.servesStale(afterError: Self.at(160), allowance: 0))  // exactly at the edge
        #expect(!metadata.servesStale(afterError: Self.at(161), allowance: 0))
        #expect(!metadata.servesStale(afterError: Self.at(161), allowance: .infinity))
        // A shorter window from the server binds too.
        let short = try #require(Self.stored(["cache-control": "max-age=60, stale-if-error=0"]))
        #expect(!short.servesStale(afterError: Self.at(61), allowance: 3_600))
    }

    @Test func callersAllowanceAppliesWithoutStaleIfError() throws {
        let metadata = try #require(Self.stored(["cache-control": "max-age=60"]))
        #expect(metadata.servesStale(afterError: Self.at(89), allowance: 30))
        #expect(!metadata.servesStale(afterError: Self.at(91), allowance: 30))
        #expect(metadata.servesStale(afterError: Self.at(10_000_000), allowance: .infinity))
        #expect(!metadata.servesStale(afterError: Self.at(61), allowance: 0))
        #expect(!metadata.servesStale(afterError: Self.at(61), allowance: -5))
        #expect(!metadata.servesStale(afterError: Self.at(61), allowance: .nan))
        // A garbage stale-if-error falls back to the allowance.
        let garbage = try #require(Self.stored(["cache-control": "max-age=60, stale-if-error=later"]))
        #expect(garbage.servesStale(afterError: Self.at(89), allowance: 30))
        // With nothing but the heuristic or nothing at all, the allowance still counts.
        let bare = try #require(Self.stored([:]))
        #expect(bare.servesStale(afterError: Self.at(5), allowance: 10))
        #expect(!bare.servesStale(afterError: Self.at(11), allowance: 10))
    }

    @Test func staleWhileRevalidateWindow() throws {
        let metadata = try #require(Self.stored(["cache-control": "max-age=60, stale-while-revalidate=30"]))
        #expect(metadata.servesWhileRevalidating(at: Self.at(10)))
        #expect(metadata.servesWhileRevalidating(at: Self.at(90)))
        #expect(!metadata.servesWhileRevalidating(at: Self.at(91)))
        let without = try #require(Self.stored(["cache-control": "max-age=60"]))
        #expect(without.servesWhileRevalidating(at: Self.at(10)))
        #expect(!without.servesWhileRevalidating(at: Self.at(61)))
        let strict = try #require(Self.stored(["cache-control": "max-age=60, stale-while-revalidate=30, must-revalidate"]))
        #expect(!strict.servesWhileRevalidating(at: Self.at(61)))
    }

    // MARK: Shared caches

    /// A shared cache (the fleet's Redis tier) reads `s-maxage` before `max-age` and
    /// `Expires`, and serves nothing stale under `s-maxage` or `proxy-revalidate`; a
    /// private one reads neither (RFC 9111 §5.2.2.8, §5.2.2.10).
    @Test func aSharedCacheJudgesBySharedMaxAgeAndProxyRevalidate() throws {
        let metadata = try #require(Self.stored(["cache-control": "max-age=600, s-maxage=60, stale-if-error=300"]))
        let shared = metadata.judged(asShared: true)
        #expect(metadata.freshness(at: Self.at(100)) == .fresh(remaining: 500))
        #expect(shared.freshness(at: Self.at(10)) == .fresh(remaining: 50))
        #expect(shared.freshness(at: Self.at(100)) == .stale(revalidatable: false))
        #expect(metadata.servesStale(afterError: Self.at(700), allowance: .infinity))
        #expect(!shared.servesStale(afterError: Self.at(100), allowance: .infinity))
        #expect(shared.judged(asShared: false) == metadata)

        let proxy = try #require(Self.stored(["cache-control": "max-age=60, proxy-revalidate, stale-while-revalidate=60"]))
        #expect(proxy.servesStale(afterError: Self.at(100), allowance: .infinity))
        #expect(proxy.servesWhileRevalidating(at: Self.at(100)))
        #expect(!proxy.judged(asShared: true).servesStale(afterError: Self.at(100), allowance: .infinity))
        #expect(!proxy.judged(asShared: true).servesWhileRevalidating(at: Self.at(100)))

        let expiring = try #require(Self.stored(["expires": Self.httpDate(600), "cache-control": "s-maxage=30"]))
        #expect(expiring.freshnessLifetime == 600 && expiring.judged(asShared: true).freshnessLifetime == 30)
        // A redirect's shorter lifetime caps what a shared cache reads too.
        let capped = metadata.capped(toLifetime: 20)
        #expect(capped.freshnessLifetime == 20 && capped.judged(asShared: true).freshnessLifetime == 20)
    }

    /// A response to a request with credentials is that user's: a shared cache keeps
    /// it only under `public`, `s-maxage` or `must-revalidate` (RFC 9111 §3.5); a
    /// `private` one never (§5.2.2.7), nor one that varies on a cookie or on
    /// credentials.
    @Test func sharedCachesKeepAnAnswerToCredentialsOnlyWhereTheServerAllows() throws {
        let cases: [(String, Bool, Bool)] = [
            ("max-age=60", false, true), ("max-age=60", true, false), ("public, max-age=60", true, true),
            ("s-maxage=60", true, true), ("max-age=60, must-revalidate", true, true),
            ("max-age=60, proxy-revalidate", true, false), ("private, max-age=60", false, false),
            ("private, public, s-maxage=60", true, false),
        ]
        for (control, credentials, mayStore) in cases {
            let metadata = try #require(HTTPCacheMetadata(
                url: Self.url, statusCode: 200, headers: ["cache-control": control], storedAt: Self.t0,
                requestCarriedCredentials: credentials))
            #expect(metadata.sharedCachesMayStore == mayStore, "\(control), credentials: \(credentials)")
            #expect(metadata.isStorable)
        }
        // A response chosen by a machine's own cookie or credentials.
        for (vary, mayStore) in [
            ("Accept", true), ("accept-encoding, Accept", true), ("Origin, Access-Control-Request-Method", true),
            ("Cookie", false), ("Accept, authorization", false), ("Origin,cookie", false),
        ] {
            let metadata = try #require(HTTPCacheMetadata(
                url: Self.url, statusCode: 200, headers: ["cache-control": "public, max-age=60", "vary": vary], storedAt: Self.t0))
            #expect(metadata.sharedCachesMayStore == mayStore, "Vary: \(vary)")
        }
    }

    // MARK: Storage

    /// The shared-cache directives and a request's credentials are kept in a second
    /// pair of flags, written only when one of them is set: other metadata keeps the
    /// bytes of the form before, which older readers take.
    @Test func sharedCacheFieldsRoundTripInFlagsOfTheirOwn() throws {
        let plain = try #require(Self.stored(["cache-control": "max-age=60, public"]))
        #expect(plain.encoded()[4] & 0x80 == 0)
        for (control, credentials) in [("max-age=60, s-maxage=5", false), ("max-age=60, proxy-revalidate", false), ("max-age=60", true)] {
            let metadata = try #require(HTTPCacheMetadata(
                url: Self.url, statusCode: 200, headers: ["cache-control": control, "date": Self.httpDate(0)], storedAt: Self.t0,
                requestCarriedCredentials: credentials))
            let blob = metadata.encoded()
            #expect(blob[4] & 0x80 != 0, "\(control)")
            let decoded = try #require(HTTPCacheMetadata(encoded: blob))
            #expect(decoded == metadata && decoded.encoded() == blob, "\(control)")
            #expect(decoded.requestCarriedCredentials == credentials && decoded.sharedCachesMayStore == metadata.sharedCachesMayStore)
            #expect(decoded.judged(asShared: true).freshnessLifetime == metadata.judged(asShared: true).freshnessLifetime)
            // A flag of a later version's form, or a blob cut anywhere, reads as nothing.
            var later = blob
            later[7] |= 0x08
            #expect(HTTPCacheMetadata(encoded: later) == nil)
            for count in 0..<blob.count { #expect(HTTPCacheMetadata(encoded: blob.prefix(count)) == nil) }
        }
    }

    @Test func encodingRoundTrips() throws {
        let full = Self.fullyDescribed
        let minimal = try #require(Self.stored([:]))
        for metadata in [full, minimal, full.updated(with: ["etag": "\"z\""], at: Self.at(9.5))] {
            let blob = metadata.encoded()
            #expect(!blob.isEmpty)
            let decoded = try #require(HTTPCacheMetadata(encoded: blob))
            #expect(decoded == metadata)
            #expect(decoded.freshness(at: Self.at(1)) == metadata.freshness(at: Self.at(1)))
            #expect(decoded.encoded() == blob)  // deterministic bytes
        }
    }

    /// A blob in the JSON form metadata was stored in before (written by that code,
    /// byte for byte) still reads, as the same metadata the same headers give now.
    @Test func blobsWrittenAsJSONBeforeStillRead() throws {
        let written = #"{"metadata":{"ageValue":2,"cacheControl":{"isImmutable":true,"isPrivate":true,"isPublic":true,"maxAge":60,"#
            + #""mustRevalidate":true,"noCache":true,"noStore":false,"staleIfError":5,"staleWhileRevalidate":7},"date":467105277,"#
            + #""etag":"W\/\"ü-\\\"q\"","expires":-63114076800,"lastModified":"Wed, 21 Oct 2015 07:11:20 GMT","#
            + #""lastModifiedDate":467104280,"storedAt":467105280.1234568,"#
            + #""url":"https:\/\/images.example\/a%20b.jpg?sig=x&y=1","vary":"Accept"},"version":1}"#
        let decoded = try #require(HTTPCacheMetadata(encoded: Data(written.utf8)))
        #expect(decoded == Self.fullyDescribed)
        #expect(HTTPCacheMetadata(encoded: decoded.encoded()) == decoded)
        #expect(HTTPCacheMetadata(encoded: Data(written.replacingOccurrences(of: "\"version\":1", with: "\"version\":2").utf8)) == nil)
        #expect(HTTPCacheMetadata(encoded: Data(written.replacingOccurrences(of: "\"storedAt\":", with: "\"storedAt\":\"yesterday\",\"x\":").utf8)) == nil)
    }

    @Test func garbageBlobsAreRejected() throws {
        let blob = Self.fullyDescribed.encoded()
        #expect(blob.starts(with: Data("imh2".utf8)))
        var candidates: [Data] = [
            Data(), Data([0xFF, 0xFE, 0x00]), Data("null".utf8), Data("{}".utf8), Data("[]".utf8),
            Data("{\"version\":1}".utf8), Data("imh2".utf8), blob + blob, blob + [0],
            Data((0..<4_096).map { UInt8(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }),
        ]
        // Cut short anywhere.
        candidates += (0..<blob.count).map { blob.prefix($0) }
        // A flag no field answers to; a length past the end; an age that is no number.
        var unknownFlag = blob
        unknownFlag[4] |= 0x80
        var longURL = blob
        longURL[8] = 0x7F
        var notANumber = blob
        let url = Array(Self.fullyDescribed.url.absoluteString.utf8)
        notANumber.replaceSubrange(10 + url.count + 8..<10 + url.count + 16, with: Double.nan.bitPattern.bigEndianBytes)
        // A URL that is not UTF-8.
        var notUTF8 = blob
        notUTF8[10] = 0xC3
        notUTF8[11] = 0x28
        candidates += [unknownFlag, longURL, notANumber, notUTF8]
        for data in candidates {
            #expect(HTTPCacheMetadata(encoded: data) == nil, "\(Array(data.prefix(24)))… (\(data.count) bytes)")
        }
    }

    /// A 304 that repeats a `no-cache` response's headers changes nothing a later
    /// question reads, whatever its date; one that changes a header, or a response
    /// whose age counts, does.
    @Test func aRepeatingNoCache304ConfirmsWhatWasStored() throws {
        let stored = try #require(Self.stored(["ETag": "\"v1\"", "Cache-Control": "no-cache"]))
        let later = Self.at(0).addingTimeInterval(600)
        let same = stored.updated(with: ["ETag": "\"v1\"", "Cache-Control": "no-cache", "Date": "Wed, 21 Oct 2015 07:38:00 GMT"], at: later)
        #expect(same.confirms(stored) && same.storedAt == later)
        #expect(!stored.updated(with: ["ETag": "\"v2\""], at: later).confirms(stored))
        #expect(!stored.updated(with: ["Cache-Control": "max-age=60"], at: later).confirms(stored))
        let aged = try #require(Self.stored(["ETag": "\"v1\"", "Cache-Control": "max-age=0"]))
        #expect(!aged.updated(with: [:], at: later).confirms(aged))
    }

    // MARK: Shared date parsing

    @Test func httpDatesInAllThreeForms() {
        let expected = Self.at(0)
        #expect(HTTPDate.parse("Wed, 21 Oct 2015 07:28:00 GMT") == expected)
        #expect(HTTPDate.parse("  Wednesday, 21-Oct-15 07:28:00 GMT ") == expected)
        #expect(HTTPDate.parse("Wed Oct 21 07:28:00 2015") == expected)
        #expect(HTTPDate.parse("Sun Nov  6 08:49:37 1994") == Date(timeIntervalSince1970: 784_111_777))
        // Names and the zone in any case, as browsers read them.
        #expect(HTTPDate.parse("WED, 21 OCT 2015 07:28:00 GMT") == expected)
        #expect(HTTPDate.parse("wed, 21 oct 2015 07:28:00 gMT") == expected)
        #expect(HTTPDate.parse("WEDNESDAY, 21-oCT-15 07:28:00 gmt") == expected)
        #expect(HTTPDate.parse("wED ocT 21 07:28:00 2015") == expected)
        for garbage in [
            "", "0", "-1", "Wed, 32 Oct 2015 07:28:00 GMT", "2015-10-21T07:28:00Z", "Wed, 21 Oct 2015 07:28:00 GMT junk",
            "Thu, 29 Feb 2015 07:28:00 GMT", "Wed, 21 Oct 2015 24:00:00 GMT", "Wed, 21 Oct 2015 07:61:00 GMT",
            "Wed, 21 Foo 2015 07:28:00 GMT", "Wed, 21 Oct 2015 07:28:00 UTC", "Wed, 21 Oct 2015 7:28:00 GMT",
            "Wed, 1 Oct 2015 07:28:00 GMT", "Xyz, 21 Oct 2015 07:28:00 GMT", "Wed,  21 Oct 2015 07:28:00 GMT",
            "Wed, 21 Oct +2015 07:28:00 GMT", "Wed Oct 21 07:28:00 15", "Wed Oct  21 07:28:00 2015",
            "Wednesday, 21-Oct-2015 07:28:00 GMT", "Wed, 21-Oct-15 07:28:00 GMT",
        ] {
            #expect(HTTPDate.parse(garbage) == nil, "\(garbage)")
        }
        #expect(HTTPDate.parse("Mon, 29 Feb 2016 00:00:00 GMT") == Date(timeIntervalSince1970: 1_456_704_000))
        // A leap second reads as the second before it.
        #expect(HTTPDate.parse("Wed, 21 Oct 2015 07:28:60 GMT") == Self.at(59))
    }

    /// The IMF-fixdate written and read by arithmetic, checked against Foundation's
    /// Gregorian calendar over four centuries, every leap day among them, at times
    /// spread over the day; and the check of a date's spelling, byte by byte.
    @Test func imfFixdatesAgreeWithTheCalendarAcrossCenturies() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "GMT")!
        let names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // From 1801 to 2200 in steps of a prime number of seconds (about 13 days), so
        // that every weekday, month and time of day comes round.
        var seconds = -5_333_126_400
        while seconds < 7_258_118_400 {
            let date = Date(timeIntervalSince1970: Double(seconds))
            let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
            let expected = "\(names[parts.weekday! - 1]), \(two(parts.day!)) \(months[parts.month! - 1]) \(parts.year!) "
                + "\(two(parts.hour!)):\(two(parts.minute!)):\(two(parts.second!)) GMT"
            #expect(HTTPDate.format(date) == expected)
            #expect(HTTPDate.parse(expected) == date, "\(expected)")
            seconds += 1_123_457
        }
        for leapDay in ["Tue, 29 Feb 1820 12:00:00 GMT", "Tue, 29 Feb 2000 00:00:00 GMT", "Thu, 29 Feb 2024 23:59:59 GMT"] {
            #expect(HTTPDate.parse(leapDay).map(HTTPDate.format) == leapDay)
        }
        #expect(HTTPDate.parse("Thu, 29 Feb 1900 00:00:00 GMT") == nil)
        // Past the four-digit years, from a damaged blob: the nearest date within them.
        #expect(HTTPDate.format(Date(timeIntervalSince1970: 1e300)) == "Fri, 31 Dec 9999 23:59:59 GMT")
        #expect(HTTPDate.format(Date(timeIntervalSince1970: -1e300)) == "Mon, 01 Jan 0001 00:00:00 GMT")
        #expect(HTTPDate.parse("Thu, 01 Jan 197 00:00:00 GMT") == nil)
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT\u{301}") == nil)
        #expect(HTTPDate.isSpelledAsTheGrammar("Tue, 20 Oct 2015 07:28:00 GMT"))
        #expect(HTTPDate.isSpelledAsTheGrammar("Tuesday, 20-Oct-15 07:28:00 GMT"))
        #expect(HTTPDate.isSpelledAsTheGrammar("Sun Nov  6 08:49:37 1994"))
        for misspelled in ["tue, 20 Oct 2015 07:28:00 GMT", "Tue, 20 OCT 2015 07:28:00 GMT", "Tue, 20 Oct 2015 07:28:00 gmt",
                           "Tue, 20 Oct 2015 07:28:00 GMt", "Tüe, 20 Oct 2015 07:28:00 GMT"] {
            #expect(!HTTPDate.isSpelledAsTheGrammar(misspelled), "\(misspelled)")
        }
    }

    /// RFC 850's two-digit year: one more than 50 years ahead is the past century's.
    @Test func twoDigitYearsAreReadWithinFiftyYearsOfNow() {
        let now = HTTPDate.parse("Tue, 01 Dec 2026 00:00:00 GMT")!
        let year = { (text: String) in
            HTTPDate.parse(text, now: now).map { Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "GMT")!, from: $0).year }
        }
        #expect(year("Friday, 01-Jan-50 00:00:00 GMT") == 2050)
        #expect(year("Friday, 01-Jan-76 00:00:00 GMT") == 2076)
        #expect(year("Friday, 01-Jan-77 00:00:00 GMT") == 1977)
        #expect(year("Sunday, 06-Nov-94 08:49:37 GMT") == 1994)
        #expect(year("Saturday, 01-Jan-00 00:00:00 GMT") == 2000)
    }

    /// An `Expires` that is not a valid HTTP-date means already expired, however
    /// close to a date it looks.
    @Test func aMalformedExpiresIsAlreadyExpired() throws {
        for value in ["Wed, 21 Oct 2099 07:28:00 GMT junk", "Thu, 31 Nov 2099 07:28:00 GMT", "2099-10-21", "tomorrow"] {
            let metadata = try #require(Self.stored(["expires": value]))
            #expect(metadata.freshnessLifetime == 0, "\(value)")
        }
        let valid = try #require(Self.stored(["expires": "Wed, 21 Oct 2099 07:28:00 GMT"]))
        #expect(valid.freshnessLifetime > 0)
    }
}

extension UInt64 {
    /// The eight bytes, most significant first.
    fileprivate var bigEndianBytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: self >> (56 - 8 * UInt64($0))) } }
}
