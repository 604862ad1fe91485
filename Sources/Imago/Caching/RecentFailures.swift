import Foundation

extension ImageLoader {
    /// Loads that failed in a way asking again would not mend, remembered for a while so
    /// that a repeat fails at once without a request: an HTTP 4xx (except 408 and 429,
    /// which pass on their own) and bytes that do not decode.
    ///
    /// A list or a page naming a missing image many times then asks the server once, and
    /// a view scrolled back to a broken image shows its failure at once. Bounded in count,
    /// each failure forgotten `timeToLive` seconds after it happened, so a server that
    /// mends the image is asked again later; `removeFailure(forKey:)` and `removeAll()`
    /// forget sooner (after the app signs in, say, when a 401 or 403 may no longer hold).
    ///
    /// The loader records and consults it by `ImageRequest.imageKey`; a failure does not
    /// depend on the size or processing asked for.
    public final class RecentFailures: Sendable {
        /// Makes a memory of at most `countLimit` failures, each kept `timeToLive` seconds.
        public convenience init(countLimit: Int = 1_000, timeToLive: Double = 300) {
            self.init(countLimit: countLimit, timeToLive: timeToLive, clock: ImageCache.monotonicClock)
        }

        /// A memory whose time-to-live runs on `clock`, for tests that step time.
        package init(countLimit: Int = 1_000, timeToLive: Double = 300, clock: @escaping @Sendable () -> Double) {
            memory = RecentMemory(costLimit: .max, countLimit: countLimit, timeToLive: max(0, timeToLive), clock: clock)
        }

        private let memory: RecentMemory<ImagoError>

        /// The most failures remembered.
        package var countLimit: Int { memory.countLimit }
        /// Seconds a failure is remembered.
        package var timeToLive: Double { memory.timeToLive ?? 0 }
        /// How many failures are remembered, counting expired ones not yet removed.
        package var count: Int { memory.count }

        /// Whether `error` is one this memory keeps: a 4xx other than 408 and 429, or
        /// bytes that are no image Imago can decode.
        static func remembers(_ error: ImagoError) -> Bool {
            switch error {
            case .httpStatus(let status, _): (400...499).contains(status) && status != 408 && status != 429
            case .decodingFailed, .unsupportedFormat: true
            default: false
            }
        }

        /// The failure remembered for `imageKey`, if any and not expired.
        func failure(forKey imageKey: String) -> ImagoError? {
            memory.value(forKey: imageKey)
        }

        /// Remembers `error` for `imageKey` if it is one this memory keeps.
        func record(_ error: ImagoError, forKey imageKey: String) {
            guard Self.remembers(error) else { return }
            memory.set(error, cost: 0, entryCostLimit: 0, forKey: imageKey)
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
}
