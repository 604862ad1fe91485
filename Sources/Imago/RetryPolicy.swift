import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// When and how soon a failed load is tried again.
///
/// Only failures that can pass on their own are retried: a network failure whose
/// `URLError.Code` or socket errno says the connection failed rather than the server's
/// answer (see `isTransient(code:errno:)`), a server error (5xx, except 501 and 505,
/// which describe the request rather than the server's state) and 429 Too Many
/// Requests. A 4xx is the caller's mistake and stays one; a TLS certificate the
/// client does not trust, a reply that is not HTTP, a cancel, an invalid URL, a
/// refused redirect, an oversized response or a bad image would fail the same way
/// again. `ImagoError.timedOut` is not retried either: it means the whole load's time
/// is spent.
///
/// Delays grow exponentially from `baseDelay` by `multiplier` up to `maximumDelay`,
/// with full jitter (a uniform draw between zero and the computed delay) so that
/// clients that failed together do not return together. A server's `Retry-After`
/// replaces the computed delay; one asking for longer than `maximumDelay` ends the
/// load instead, as asking again sooner than the server said would only be refused
/// again (the failure remembers when to come back: `RecentFailures`).
///
/// `delay(afterAttempt:error:retryAfter:now:)` is pure given the `jitter` function:
/// tests inject one to make it deterministic.
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included: 3 means up to two retries. 1 never retries.
    public var maximumAttempts: Int
    /// The delay ceiling before the first retry, in seconds.
    public var baseDelay: Double
    /// How much the ceiling grows with each further retry.
    public var multiplier: Double
    /// The longest wait, in seconds, for computed delays; a `Retry-After` beyond it
    /// is not waited for.
    public var maximumDelay: Double
    /// Picks the actual delay given the computed ceiling; must return a value in
    /// `0...ceiling` (results outside are clamped).
    package var jitter: @Sendable (_ ceiling: Double) -> Double

    /// A uniform draw in `0...ceiling` ("full jitter").
    package static let fullJitter: @Sendable (Double) -> Double = { ceiling in
        ceiling > 0 ? Double.random(in: 0...ceiling) : 0
    }

    /// The ceiling itself: deterministic delays, for tests and single clients.
    package static let noJitter: @Sendable (Double) -> Double = { $0 }

    /// Makes a policy; the defaults give three attempts, about 0.5 s then 1 s apart
    /// at most, with full jitter.
    public init(maximumAttempts: Int = 3, baseDelay: Double = 0.5, multiplier: Double = 2, maximumDelay: Double = 10) {
        self.init(maximumAttempts: maximumAttempts, baseDelay: baseDelay, multiplier: multiplier,
                  maximumDelay: maximumDelay, jitter: RetryPolicy.fullJitter)
    }

    /// A policy whose delays `jitter` picks: tests pass `noJitter` for delays they can
    /// predict.
    package init(
        maximumAttempts: Int = 3,
        baseDelay: Double = 0.5,
        multiplier: Double = 2,
        maximumDelay: Double = 10,
        jitter: @escaping @Sendable (_ ceiling: Double) -> Double
    ) {
        self.maximumAttempts = maximumAttempts
        self.baseDelay = baseDelay
        self.multiplier = multiplier
        self.maximumDelay = maximumDelay
        self.jitter = jitter
    }

    /// The default: three attempts, 0.5 s base, doubling, 10 s cap, full jitter.
    public static let `default` = RetryPolicy()

    /// Never retries.
    public static let none = RetryPolicy(maximumAttempts: 1)

    /// Seconds to wait before the next attempt after attempt number `attempt` (1 for
    /// the first) failed with `error`, or nil when there should be none.
    ///
    /// - Parameters:
    ///   - attempt: the number of the attempt that failed, 1 for the first.
    ///   - error: why it failed; only transient failures are retried.
    ///   - retryAfter: the failed response's `Retry-After` header, if any: seconds or
    ///     an HTTP-date; it replaces the computed backoff, and beyond `maximumDelay`
    ///     means no retry.
    ///   - now: the time an HTTP-date is measured from.
    @_spi(Internals) public func delay(afterAttempt attempt: Int, error: ImagoError, retryAfter: String?, now: Date = Date()) -> Double? {
        guard attempt < maximumAttempts, isRetryable(error) else { return nil }
        if let retryAfter, let seconds = Self.retryAfterSeconds(retryAfter, now: now) {
            return seconds <= max(maximumDelay, 0) ? seconds : nil
        }
        let ceiling = backoff(afterAttempt: attempt)
        return min(max(jitter(ceiling), 0), ceiling)
    }

    /// The delay ceiling after attempt number `attempt`, before jitter:
    /// `baseDelay × multiplier^(attempt − 1)`, at most `maximumDelay`.
    package func backoff(afterAttempt attempt: Int) -> Double {
        let cap = max(maximumDelay, 0)
        var delay = min(max(baseDelay, 0), cap)
        var step = 1
        // Multiplied step by step (not pow) so a huge attempt number stops at the cap
        // instead of overflowing to infinity, or NaN when the base is zero.
        while step < attempt, delay < cap, delay > 0 {
            delay = min(delay * max(multiplier, 1), cap)
            step += 1
        }
        return delay
    }

    /// Whether `error` is worth another attempt at all.
    package func isRetryable(_ error: ImagoError) -> Bool {
        switch error {
        case .network(_, _, let code, let errno):
            return Self.isTransient(code: code, errno: errno)
        case .httpStatus(let status, _):
            return status == 429 || ((500...599).contains(status) && status != 501 && status != 505)
        case .timedOut, .cancelled, .invalidURL, .invalidRequest, .redirectRefused, .responseTooLarge,
             .unsupportedFormat, .decodingFailed, .imageTooLarge, .tooManyFrames, .tooManyScans,
             .overMemoryBudget, .decodingTimedOut, .encodingFailed, .fileError, .notCached, .invalidHash:
            return false
        }
    }

    /// Whether a network failure with this URL error code and socket errno can pass
    /// on its own.
    ///
    /// Yes for a connection that could not be made, was reset or dropped, or went
    /// silent; for a name that did not resolve (a resolver restarting or a network
    /// changing cause that too, and a retry costs little); for a server that closed
    /// without answering; and for `.unknown`, which URLSession on Linux reports for
    /// transfer failures it has no code for. A socket errno of a failed connection
    /// (`ECONNRESET`, `ECONNREFUSED`, `ETIMEDOUT`, an unreachable network, …) makes
    /// any code transient: a TLS handshake cut off by a reset is one. Everything else
    /// is the server's answer or the client's refusal, and would come out the same:
    /// untrusted certificates, a reply that is not HTTP, undecodable content, a
    /// server that wants credentials.
    package static func isTransient(code: URLError.Code, errno: Int32?) -> Bool {
        if let errno, transientErrnos.contains(errno) { return true }
        return transientCodes.contains(code)
    }

    private static let transientCodes: Set<URLError.Code> = [
        .timedOut, .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet,
        .cannotFindHost, .dnsLookupFailed, .badServerResponse, .unknown,
    ]

    private static let transientErrnos: Set<Int32> = [
        ECONNREFUSED, ECONNRESET, ECONNABORTED, ENETRESET, EPIPE, ETIMEDOUT,
        ENETDOWN, ENETUNREACH, EHOSTDOWN, EHOSTUNREACH, ENOTCONN,
    ]

    /// Seconds to wait per a `Retry-After` value (RFC 9110 §10.2.3): a number of
    /// seconds, or an HTTP-date (IMF-fixdate, or the obsolete RFC 850 and asctime
    /// forms) measured from `now`. A date in the past gives 0; anything else, nil.
    package static func retryAfterSeconds(_ value: String, now: Date) -> Double? {
        let text = value.trimmingHTTPWhitespace
        guard !text.isEmpty else { return nil }
        if text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber) {
            return Double(text)
        }
        return HTTPDate.parse(text).map { max(0, $0.timeIntervalSince(now)) }
    }
}
