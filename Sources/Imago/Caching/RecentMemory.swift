/// Values by string key, the least recently used dropped first, within a total cost
/// and a count, each served for at most a time to live after it was stored: the
/// store behind `ImageLoader.RecentOriginals` and `ImageLoader.RecentFailures`. O(1) under one short lock.
final class RecentMemory<Value: Sendable>: Sendable {
    private struct Entry {
        var value: Value
        var cost: Int
        /// When the entry stops being served, on `clock`; infinity if never.
        var expiry: Double
    }

    private struct State {
        var list = LRUList<String, Entry>()
        var totalCost = 0

        mutating func remove(_ slot: Int) -> Value {
            let entry = list.remove(slot)
            totalCost -= entry.cost
            return entry.value
        }
    }

    private let state = Locked(State())
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

    var count: Int { state.withLock { $0.list.count } }
    var totalCost: Int { state.withLock { $0.totalCost } }

    /// The value under `key`, made the most recent; an expired one is removed and
    /// reported as a miss.
    func value(forKey key: String) -> Value? {
        let (value, expired) = state.withLock { state -> (Value?, Value?) in
            guard let slot = state.list.slot(for: key) else { return (nil, nil) }
            let expiry = state.list[slot].expiry
            if expiry.isFinite, expiry <= clock() { return (nil, state.remove(slot)) }
            state.list.moveToNewest(slot)
            return (state.list[slot].value, nil)
        }
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
            if let slot = state.list.slot(for: key) { evicted.append(state.remove(slot)) }
            guard cost <= entryCostLimit else { return evicted }
            state.list.insertNewest(Entry(value: value, cost: cost, expiry: expiry), forKey: key)
            state.totalCost += cost
            while state.list.oldest >= 0, state.totalCost > costLimit || state.list.count > countLimit {
                evicted.append(state.remove(state.list.oldest))
            }
            return evicted
        }
        _ = evicted
    }

    func removeValue(forKey key: String) {
        let removed = state.withLock { state -> Value? in
            state.list.slot(for: key).map { state.remove($0) }
        }
        _ = removed
    }

    func removeAll() {
        let old = state.withLock { state -> State in
            var old = State()
            swap(&old, &state)
            return old
        }
        _ = old
    }
}
