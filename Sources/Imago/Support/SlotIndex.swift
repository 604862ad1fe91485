/// A key that holds its own hash, made once with the process's seeded `Hasher`: an
/// index places it by that hash directly. A `Dictionary` passes every key through
/// `Hasher` again, a second SipHash of a word that already is one, on every
/// look-up: a sixth of the memory tier's hit. Being seeded, the hash spreads keys
/// chosen to collide (image URLs come from pages and servers) as a `Dictionary`
/// would.
protocol HashCarrying: Hashable {
    /// The key's hash: equal keys carry equal hashes.
    var carriedHash: Int { get }
}

extension String: HashCarrying {
    /// Hashed at each use, as a `Dictionary` would.
    var carriedHash: Int { hashValue }
}

/// An open-addressing index from keys' hashes to the slots of the entries an owner
/// keeps in an array (`LRUList`'s nodes): the owner says which slot matches a key,
/// and each slot's hash. Linear probing at a load of at most three quarters; a
/// removal moves the entries after it back, so no tombstones pile up.
struct SlotIndex: Sendable {
    /// Each bucket's slot plus one; 0 for an empty bucket. The count is a power of two.
    private var buckets: [Int] = []
    /// How many slots are indexed.
    private(set) var count = 0

    /// The indexed slot under `hash` for which `matches` holds.
    func slot(hash: Int, where matches: (Int) -> Bool) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let mask = buckets.count &- 1
        var bucket = hash & mask
        while true {
            let stored = buckets[bucket]
            if stored == 0 { return nil }
            if matches(stored &- 1) { return stored &- 1 }
            bucket = (bucket &+ 1) & mask
        }
    }

    /// Indexes `slot` under `hash`; `hashOf` gives the hash of any slot already
    /// indexed, for when the buckets grow.
    mutating func insert(_ slot: Int, hash: Int, hashOf: (Int) -> Int) {
        if (count + 1) * 4 > buckets.count * 3 {
            let old = buckets
            buckets = [Int](repeating: 0, count: max(8, old.count * 2))
            for stored in old where stored != 0 { place(stored - 1, hash: hashOf(stored - 1)) }
        }
        place(slot, hash: hash)
        count += 1
    }

    /// Takes `slot`, indexed under `hash`, out of the index.
    mutating func remove(_ slot: Int, hash: Int, hashOf: (Int) -> Int) {
        let mask = buckets.count &- 1
        var hole = hash & mask
        while buckets[hole] != slot &+ 1 { hole = (hole &+ 1) & mask }
        // Each later entry of the run moves into the hole unless its own bucket lies
        // after the hole (then a look-up would start past it and miss it).
        var next = (hole &+ 1) & mask
        while buckets[next] != 0 {
            let home = hashOf(buckets[next] &- 1) & mask
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next &+ 1) & mask
        }
        buckets[hole] = 0
        count -= 1
    }

    /// Every indexed slot, in no particular order.
    var slots: [Int] {
        buckets.compactMap { $0 == 0 ? nil : $0 - 1 }
    }

    private mutating func place(_ slot: Int, hash: Int) {
        let mask = buckets.count &- 1
        var bucket = hash & mask
        while buckets[bucket] != 0 { bucket = (bucket &+ 1) & mask }
        buckets[bucket] = slot &+ 1
    }
}
