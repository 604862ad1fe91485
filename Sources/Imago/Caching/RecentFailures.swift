import Foundation

/// Failed loads, remembered for a while so that a repeat fails at once without a
/// request.
///
/// A failure asking again would not mend (an HTTP 4xx other than 408 and 429, bytes
/// that do not decode) is kept `timeToLive` seconds. A failure that may pass on its
/// own (a 5xx, 408 or 429, a refused or dropped connection, a timeout) is kept for
/// as long as the server's `Retry-After` asked (at most `timeToLive`), else
/// `transientTimeToLive` seconds: the load that met it has already waited out its
/// retries, so a list naming a failing URL a thousand times costs one load's
/// retries, not a thousand, and the server is asked again once the window passes.
///
/// A list or a page naming a missing image many times then asks the server once, and
/// a view scrolled back to a broken image shows its failure at once. Bounded in count,
/// so a server that mends the image is asked again later; `removeFailure(forKey:)`
/// and `removeAll()` forget sooner (after the app signs in, say, when a 401 or 403
/// may no longer hold).
///
/// `ImageLoader.RecentFailures` names it too. The loader records and consults it by
/// `ImageRequest.imageKey`; a failure does not depend on the size or processing
/// asked for.
public final class RecentLoadFailures: Sendable {
    /// Makes a memory of at most `countLimit` failures, each kept `timeToLive`
    /// seconds, or `transientTimeToLive` for one that may pass on its own and came
    /// with no `Retry-After`.
    public convenience init(countLimit: Int = 1_000, timeToLive: Double = 300, transientTimeToLive: Double = 10) {
        self.init(
            countLimit: countLimit, timeToLive: timeToLive, transientTimeToLive: transientTimeToLive,
            clock: ImageCache.monotonicClock)
    }

    /// A memory whose time-to-live runs on `clock`, for tests that step time.
    package init(
        countLimit: Int = 1_000, timeToLive: Double = 300, transientTimeToLive: Double = 10,
        clock: @escaping @Sendable () -> Double
    ) {
        memory = RecentMemory(costLimit: .max, countLimit: countLimit, timeToLive: max(0, timeToLive), clock: clock)
        self.transientTimeToLive = min(max(0, transientTimeToLive), max(0, timeToLive))
    }

    private let memory: RecentMemory<ImagoError>
    /// Seconds a failure that may pass is remembered when the server did not say.
    package let transientTimeToLive: Double

    /// The most failures remembered.
    package var countLimit: Int { memory.countLimit }
    /// Seconds a failure is remembered.
    package var timeToLive: Double { memory.timeToLive ?? 0 }
    /// How many failures are remembered, counting expired ones not yet removed.
    package var count: Int { memory.count }

    /// How long `error` is kept: nil for a failure this memory does not keep (a
    /// cancel, a local file, a URL refused before any I/O, a limit of the caller's).
    /// `retryAfter` is the server's `Retry-After`, in seconds, when it sent one.
    func lifetime(of error: ImagoError, retryAfter: Double?) -> Double? {
        let transient = min(retryAfter ?? transientTimeToLive, timeToLive)
        switch error {
        case .httpStatus(let status, _) where status == 408 || status == 429 || (500...599).contains(status): return transient
        case .httpStatus(let status, _) where (400...499).contains(status): return timeToLive
        case .decodingFailed, .unsupportedFormat: return timeToLive
        case .network, .timedOut: return transient
        default: return nil
        }
    }

    /// The failure remembered for `imageKey`, if any and not expired.
    func failure(forKey imageKey: String) -> ImagoError? {
        memory.value(forKey: imageKey)
    }

    /// Remembers `error` for `imageKey` if it is one this memory keeps, for as long
    /// as its kind says; `retryAfter` is the server's `Retry-After` in seconds.
    func record(_ error: ImagoError, retryAfter: Double? = nil, forKey imageKey: String) {
        guard let lifetime = lifetime(of: error, retryAfter: retryAfter), lifetime > 0 else { return }
        memory.set(error, cost: 0, entryCostLimit: 0, lifetime: lifetime, forKey: imageKey)
    }

    /// Forgets the failure of `imageKey`.
    package func removeFailure(forKey imageKey: String) {
        memory.removeValue(forKey: imageKey)
    }

    /// Forgets every failure.
    public func removeAll() {
        memory.removeAll()
    }
}

extension ImagoError {
    /// Whether a request may not meet this failure again although a load of the same
    /// image key met it: a body cut short, which a request allowing partial images
    /// takes as it arrived.
    func mayPass(for request: ImageRequest) -> Bool {
        urlErrorCode == .networkConnectionLost && request.options.contains(.allowsPartialImages)
    }
}
