/// Values by key within a total cost and a count, the least recently used dropped
/// first, each served until its expiry: the one store behind the memory tier
/// (`ImageCache`) and the memories of recent loads (`RecentMemory`).
///
/// A value, kept by its owner behind the owner's lock; what leaves it is handed back,
/// so that the owner releases it once the lock is dropped (freeing megabytes of
/// pixels never holds up another thread's hit). Recency is an `LRUList`. Expiry is a
/// time on the owner's clock, infinity for never; the clock is read only for entries
/// that can expire, so a hit without a time to live costs no clock read.
struct LRUStore<Key: HashCarrying, Value> {
    fileprivate struct Entry {
        var value: Value
        var cost: Int
        var expiry: Double
    }

    private var list = LRUList<Key, Entry>()
    /// The cost of every entry, expired ones not yet removed included.
    private(set) var totalCost = 0

    /// Makes an empty store.
    init() {}

    /// How many entries are kept, expired ones not yet removed included.
    var count: Int { list.count }

    /// The value under `key`, made the most recent; an expired one is taken out and
    /// handed back as `expired`, and is a miss.
    mutating func value(forKey key: Key, now: () -> Double) -> (value: Value?, expired: Value?) {
        guard let slot = list.slot(for: key) else { return (nil, nil) }
        let expiry = list[slot].expiry
        if expiry.isFinite, expiry <= now() { return (nil, remove(slot)) }
        list.moveToNewest(slot)
        return (list[slot].value, nil)
    }

    /// Adds `value` under `key`, which must hold nothing (`removeValue` first), as the
    /// most recent entry.
    mutating func insert(_ value: Value, cost: Int, expiry: Double, forKey key: Key) {
        list.insertNewest(Entry(value: value, cost: cost, expiry: expiry), forKey: key)
        totalCost += cost
    }

    /// Takes the value under `key` out.
    mutating func removeValue(forKey key: Key) -> Value? {
        list.slot(for: key).map { remove($0) }
    }

    /// Takes least recently used values out into `evicted` while `condition` holds.
    mutating func evict(into evicted: inout [Value], while condition: (Self) -> Bool) {
        while list.oldest >= 0, condition(self) {
            evicted.append(remove(list.oldest))
        }
    }

    /// Takes every value expired at `now` out into `evicted`: O(n).
    mutating func removeExpired(at now: Double, into evicted: inout [Value]) {
        var slot = list.oldest
        while slot >= 0 {
            let newer = list.newer(than: slot)
            if list[slot].expiry <= now { evicted.append(remove(slot)) }
            slot = newer
        }
    }

    private mutating func remove(_ slot: Int) -> Value {
        let entry = list.remove(slot)
        totalCost -= entry.cost
        return entry.value
    }

    /// Whether links, keys, costs and limits agree; a description of the first
    /// problem found otherwise. For tests.
    func checkInvariants(costLimit: Int, countLimit: Int) -> String? {
        if let problem = list.checkInvariants() { return problem }
        let cost = list.slotsFromOldest.reduce(0) { $0 + list[$1].cost }
        if cost != totalCost { return "totalCost \(totalCost), entries sum to \(cost)" }
        if totalCost > costLimit { return "over the cost limit" }
        if count > countLimit { return "over the count limit" }
        return nil
    }
}

extension LRUStore: Sendable where Key: Sendable, Value: Sendable {}

extension LRUStore.Entry: Sendable where Key: Sendable, Value: Sendable {}
