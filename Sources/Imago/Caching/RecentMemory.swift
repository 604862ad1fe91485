/// Values by string key, the least recently used dropped first, within a total cost
/// and a count, each served for at most a time to live after it was stored: the
/// store behind `RecentOriginalFiles` and `RecentLoadFailures`, an `LRUStore` under
/// one short lock. O(1).
final class RecentMemory<Value: Sendable>: Sendable {
    private let state = Locked(LRUStore<String, Value>())
    let costLimit: Int
    let countLimit: Int
    let timeToLive: Double?
    private let clock: @Sendable () -> Double

    init(costLimit: Int, countLimit: Int, timeToLive: Double?, clock: @escaping @Sendable () -> Double) {
        self.costLimit = max(0, costLimit)
        self.countLimit = max(0, countLimit)
        self.timeToLive = timeToLive
        self.clock = clock
    }

    var count: Int { state.withLock { $0.count } }
    var totalCost: Int { state.withLock { $0.totalCost } }

    /// The value under `key`, made the most recent; an expired one is removed and
    /// reported as a miss.
    func value(forKey key: String) -> Value? {
        let (value, expired) = state.withLock { $0.value(forKey: key, now: clock) }
        _ = expired  // released after the lock is dropped
        return value
    }

    /// Stores `value` under `key`, replacing what it held, served for `lifetime`
    /// seconds (the memory's time to live when nil); a value costing more than
    /// `entryCostLimit` is not kept (and the old one goes all the same).
    func set(_ value: Value, cost: Int, entryCostLimit: Int, lifetime: Double? = nil, forKey key: String) {
        let expiry = (lifetime ?? timeToLive).map { clock() + max(0, $0) } ?? .infinity
        let evicted = state.withLock { state -> [Value] in
            var evicted: [Value] = []
            if let old = state.removeValue(forKey: key) { evicted.append(old) }
            guard cost <= entryCostLimit else { return evicted }
            state.insert(value, cost: cost, expiry: expiry, forKey: key)
            let costLimit = costLimit, countLimit = countLimit
            state.evict(into: &evicted) { $0.totalCost > costLimit || $0.count > countLimit }
            return evicted
        }
        _ = evicted
    }

    func removeValue(forKey key: String) {
        let removed = state.withLock { $0.removeValue(forKey: key) }
        _ = removed
    }

    func removeAll() {
        let old = state.withLock { state in
            var old = LRUStore<String, Value>()
            swap(&old, &state)
            return old
        }
        _ = old
    }
}
