import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Backoff, jitter, caps, Retry-After and which failures are retried.
@Suite struct RetryPolicyTests {
    static let reset = ImagoError.network(
        url: "http://x/a.jpg", reason: "the connection was lost", code: .networkConnectionLost, errno: ECONNRESET)

    /// A network failure with `code` and `errno`; the reason is deliberately the same
    /// for all, so only the typed cause can decide.
    static func network(_ code: URLError.Code, errno: Int32? = nil) -> ImagoError {
        .network(url: "http://x/", reason: "the transfer failed", code: code, errno: errno)
    }

    @Test func backoffGrowsExponentiallyUpToTheCap() {
        let policy = RetryPolicy(maximumAttempts: 20, baseDelay: 0.5, multiplier: 2, maximumDelay: 10, jitter: RetryPolicy.noJitter)
        let delays = (1...8).map { policy.delay(afterAttempt: $0, error: Self.reset, retryAfter: nil) }
        #expect(delays == [0.5, 1, 2, 4, 8, 10, 10, 10])
        #expect(policy.backoff(afterAttempt: 1_000_000) == 10)
        #expect(RetryPolicy(baseDelay: 0, jitter: RetryPolicy.noJitter).backoff(afterAttempt: 50) == 0)
        #expect(RetryPolicy(multiplier: 3, jitter: RetryPolicy.noJitter).backoff(afterAttempt: 3) == 4.5)
    }

    @Test func attemptsAreBounded() {
        let policy = RetryPolicy(jitter: RetryPolicy.noJitter)  // 3 attempts
        #expect(policy.delay(afterAttempt: 1, error: Self.reset, retryAfter: nil) != nil)
        #expect(policy.delay(afterAttempt: 2, error: Self.reset, retryAfter: nil) != nil)
        #expect(policy.delay(afterAttempt: 3, error: Self.reset, retryAfter: nil) == nil)
        #expect(RetryPolicy.none.delay(afterAttempt: 1, error: Self.reset, retryAfter: nil) == nil)
    }

    @Test func fullJitterStaysWithinZeroAndTheCeiling() {
        let policy = RetryPolicy(maximumAttempts: 10)
        for attempt in 1...6 {
            let ceiling = policy.backoff(afterAttempt: attempt)
            let draws = (0..<500).compactMap { _ in policy.delay(afterAttempt: attempt, error: Self.reset, retryAfter: nil) }
            #expect(draws.count == 500)
            #expect(draws.allSatisfy { (0...ceiling).contains($0) })
            // Spread over the range, not stuck at one end.
            #expect(draws.min()! < ceiling * 0.2 && draws.max()! > ceiling * 0.8)
        }
        // A jitter function that misbehaves is clamped.
        let wild = RetryPolicy(jitter: { $0 * 5 })
        #expect(wild.delay(afterAttempt: 1, error: Self.reset, retryAfter: nil) == 0.5)
        let negative = RetryPolicy(jitter: { _ in -1 })
        #expect(negative.delay(afterAttempt: 1, error: Self.reset, retryAfter: nil) == 0)
        // Injected jitter makes it deterministic.
        let half = RetryPolicy(jitter: { $0 / 2 })
        #expect(half.delay(afterAttempt: 2, error: Self.reset, retryAfter: nil) == 0.5)
    }

    @Test func retryAfterSecondsReplacesTheBackoffWithinTheCap() {
        let policy = RetryPolicy(jitter: RetryPolicy.noJitter)
        let busy = ImagoError.httpStatus(429, url: "http://x/")
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "3") == 3)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: " 0 ") == 0)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "10") == 10)
        // Longer than the policy waits: asked again sooner, the server would refuse
        // again; the load ends instead.
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "11") == nil)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "120") == nil)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "99999999999999999999999") == nil)
        // Garbage is ignored: the computed backoff applies.
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "soon") == 0.5)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "-5") == 0.5)
        #expect(policy.delay(afterAttempt: 1, error: busy, retryAfter: "") == 0.5)
        // Retry-After on a 4xx other than 429 does not make it retryable.
        #expect(policy.delay(afterAttempt: 1, error: .httpStatus(404, url: "http://x/"), retryAfter: "1") == nil)
    }

    @Test func retryAfterHTTPDateIsMeasuredFromNow() throws {
        let now = try #require(ISO8601DateFormatter().date(from: "2015-10-21T07:28:00Z"))
        let policy = RetryPolicy(maximumDelay: 60, jitter: RetryPolicy.noJitter)
        let unavailable = ImagoError.httpStatus(503, url: "http://x/")
        #expect(policy.delay(afterAttempt: 1, error: unavailable, retryAfter: "Wed, 21 Oct 2015 07:28:05 GMT", now: now) == 5)
        #expect(policy.delay(afterAttempt: 1, error: unavailable, retryAfter: "Wednesday, 21-Oct-15 07:28:30 GMT", now: now) == 30)
        #expect(policy.delay(afterAttempt: 1, error: unavailable, retryAfter: "Wed Oct 21 07:28:45 2015", now: now) == 45)
        // In the past: go now. Far in the future: not within this load.
        #expect(policy.delay(afterAttempt: 1, error: unavailable, retryAfter: "Wed, 21 Oct 2015 07:00:00 GMT", now: now) == 0)
        #expect(policy.delay(afterAttempt: 1, error: unavailable, retryAfter: "Thu, 22 Oct 2015 07:28:00 GMT", now: now) == nil)
        #expect(RetryPolicy.retryAfterSeconds("Wed, 32 Oct 2015 07:28:05 GMT", now: now) == nil)
    }

    @Test func onlyTransientFailuresAreRetried() {
        let policy = RetryPolicy()
        let retried: [ImagoError] = [
            Self.reset,
            Self.network(.cannotConnectToHost),
            .httpStatus(500, url: "http://x/"), .httpStatus(502, url: "http://x/"),
            .httpStatus(503, url: "http://x/"), .httpStatus(504, url: "http://x/"),
            .httpStatus(429, url: "http://x/"),
        ]
        let final: [ImagoError] = [
            .httpStatus(400, url: "http://x/"), .httpStatus(401, url: "http://x/"),
            .httpStatus(403, url: "http://x/"), .httpStatus(404, url: "http://x/"),
            .httpStatus(410, url: "http://x/"), .httpStatus(501, url: "http://x/"),
            .httpStatus(505, url: "http://x/"),
            .cancelled, .invalidURL("ftp://x"),
            .redirectRefused(url: "http://x/", reason: "loop"),
            .responseTooLarge(url: "http://x/", limit: 10),
            .timedOut(url: "http://x/", seconds: 60),
            .unsupportedFormat(nil), .unsupportedFormat(.png),
            .decodingFailed(format: .jpeg, reason: "truncated", codec: nil),
            .decodingFailed(format: .png, reason: "IHDR: CRC error", codec: .init(library: "libpng", message: "IHDR: CRC error")),
            .imageTooLarge(width: 100_000, height: 100_000, frames: 1, limit: 1 << 27),
            .encodingFailed(format: .webp, reason: "out of memory", codec: .init(library: "libwebp", message: "VP8_ENC_ERROR_OUT_OF_MEMORY")),
            .fileError(path: "/x", reason: "no such file", errno: ENOENT),
            .fileError(path: "/x", reason: "input/output error", errno: EIO),
        ]
        for error in retried {
            #expect(policy.isRetryable(error), "\(error)")
            #expect(policy.delay(afterAttempt: 1, error: error, retryAfter: nil) != nil, "\(error)")
        }
        for error in final {
            #expect(!policy.isRetryable(error), "\(error)")
            #expect(policy.delay(afterAttempt: 1, error: error, retryAfter: "1") == nil, "\(error)")
        }
    }

    /// Network failures are told apart by their URL error code and socket errno, never
    /// by their words: a connection that failed is worth another try, an answer the
    /// server would give again is not.
    @Test func networkFailuresAreRetriedByTheirTypedCause() {
        let policy = RetryPolicy()
        let transient: [URLError.Code] = [
            .timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet,
            .cannotFindHost, .dnsLookupFailed, .badServerResponse, .unknown,
        ]
        let permanent: [URLError.Code] = [
            .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid, .clientCertificateRejected,
            .unsupportedURL, .cannotParseResponse, .cannotDecodeContentData, .cannotDecodeRawData,
            .userAuthenticationRequired, .dataLengthExceedsMaximum, .zeroByteResource,
        ]
        for code in transient {
            #expect(policy.isRetryable(Self.network(code)), "\(code.rawValue)")
            #expect(RetryPolicy.isTransient(code: code, errno: nil), "\(code.rawValue)")
        }
        for code in permanent {
            #expect(!policy.isRetryable(Self.network(code)), "\(code.rawValue)")
            #expect(policy.delay(afterAttempt: 1, error: Self.network(code), retryAfter: nil) == nil, "\(code.rawValue)")
        }
        // A socket error of a failed connection makes any code transient: a TLS
        // handshake cut off by a reset can succeed next time.
        for errno in [ECONNRESET, ECONNREFUSED, ECONNABORTED, EPIPE, ETIMEDOUT, ENETUNREACH, EHOSTUNREACH] {
            #expect(policy.isRetryable(Self.network(.secureConnectionFailed, errno: errno)), "\(errno)")
        }
        // An errno that says nothing about the connection leaves the code to decide.
        #expect(!policy.isRetryable(Self.network(.serverCertificateUntrusted, errno: EINVAL)))
        #expect(policy.isRetryable(Self.network(.networkConnectionLost, errno: EINVAL)))
    }
}
