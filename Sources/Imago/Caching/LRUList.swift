/// Values by key in least-recently-used order: O(1) look-up, insertion, removal and
/// moving to the most recent end. `LRUStore` (the memory tier, the memories of
/// recent loads) and the disk index keep their recency in one.
///
/// Entries live in one array and are chained by index, not by reference: moving an
/// entry to the most recent end is a handful of integer stores, with no reference
/// counting and no allocation (the memory tier does it on every hit, under its lock),
/// and a long list is freed as one array rather than node by node. Slots of removed
/// entries are reused before the array grows.
///
/// A slot is an entry's place in the array: stable while the entry is in the list,
/// reused once it is removed. -1 stands for none. Keys are found through a
/// `SlotIndex` by the hash they carry.
struct LRUList<Key: HashCarrying, Value> {
    fileprivate struct Node {
        /// Nil only while the slot is free, so a free slot holds no key or value alive.
        var key: Key?
        var value: Value?
        /// The key's hash, for the index.
        var hash: Int
        /// The slot of the next entry towards the least recent, or -1.
        var older: Int
        /// The slot of the next entry towards the most recent, or -1.
        var newer: Int
    }

    private var index = SlotIndex()
    private var nodes: [Node] = []
    /// Slots of removed entries, reused before the array grows.
    private var free: [Int] = []
    /// The slot of the most recently used entry, or -1 when empty.
    private(set) var newest = -1
    /// The slot of the least recently used entry, or -1 when empty.
    private(set) var oldest = -1

    /// Makes an empty list.
    init() {}

    /// How many entries the list holds.
    var count: Int { index.count }

    /// The slot of the entry under `key`, if there is one.
    func slot(for key: Key) -> Int? {
        let hash = key.carriedHash
        return nodes.withUnsafeBufferPointer { nodes in
            index.slot(hash: hash) { nodes[$0].hash == hash && nodes[$0].key.unsafelyUnwrapped == key }
        }
    }

    /// The value in `slot`, which must hold an entry (checked in debug builds only:
    /// this is the memory tier's hit path).
    subscript(slot: Int) -> Value {
        get { nodes[slot].value.unsafelyUnwrapped }
        set { nodes[slot].value = newValue }
    }

    /// The key of the entry in `slot`, which must hold an entry.
    func key(at slot: Int) -> Key { nodes[slot].key! }

    /// The slot of the next more recent entry than the one in `slot`, or -1.
    func newer(than slot: Int) -> Int { nodes[slot].newer }

    /// Adds `value` under `key`, which must not be in the list yet, as the most recent
    /// entry; returns its slot.
    @discardableResult
    mutating func insertNewest(_ value: consuming Value, forKey key: Key) -> Int {
        let slot: Int
        if let reused = free.popLast() {
            // Field by field: a free slot's fields are nil, and assigning the whole
            // node would copy and destroy it through its generic value witnesses,
            // which costs the memory tier's insertions a tenth of their time.
            slot = reused
            nodes[slot].key = key
            nodes[slot].value = value
            nodes[slot].hash = key.carriedHash
        } else {
            slot = nodes.count
            nodes.append(Node(key: key, value: value, hash: key.carriedHash, older: -1, newer: -1))
        }
        index.insert(slot, hash: nodes[slot].hash) { nodes[$0].hash }
        link(slot)
        return slot
    }

    /// Makes the entry in `slot` the most recent.
    mutating func moveToNewest(_ slot: Int) {
        guard newest != slot else { return }
        unlink(slot)
        link(slot)
    }

    /// Takes the entry in `slot` out and hands back its value, so that the caller
    /// decides when it is released (the memory tier does it after its lock).
    mutating func remove(_ slot: Int) -> Value {
        unlink(slot)
        index.remove(slot, hash: nodes[slot].hash) { nodes[$0].hash }
        nodes[slot].key = nil
        free.append(slot)
        return nodes[slot].value.take()!
    }

    /// Removes every entry.
    mutating func removeAll() {
        self = LRUList()
    }

    /// The slots of every entry, least recent first.
    var slotsFromOldest: [Int] {
        var result: [Int] = []
        result.reserveCapacity(count)
        var slot = oldest
        while slot >= 0 {
            result.append(slot)
            slot = nodes[slot].newer
        }
        return result
    }

    /// Relinks every entry so that recency follows `areInIncreasingOrder` on the
    /// values, least recent first; for an order learnt all at once, as from files.
    mutating func reorder(by areInIncreasingOrder: (Value, Value) -> Bool) {
        let sorted = index.slots.sorted { areInIncreasingOrder(nodes[$0].value!, nodes[$1].value!) }
        newest = -1
        oldest = -1
        for slot in sorted { link(slot) }
    }

    private mutating func unlink(_ slot: Int) {
        let older = nodes[slot].older, newer = nodes[slot].newer
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
    }

    /// Links the entry in `slot` as the most recent.
    private mutating func link(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot } else { oldest = slot }
        newest = slot
    }

    /// Whether links, keys and slots agree; a description of the first problem found
    /// otherwise. For tests.
    func checkInvariants() -> String? {
        var seen = 0, slot = oldest, previous = -1
        while slot >= 0 {
            let node = nodes[slot]
            guard node.older == previous else { return "broken older link at \(slot)" }
            guard node.value != nil, let key = node.key, node.hash == key.carriedHash, self.slot(for: key) == slot else {
                return "entry \(slot) not indexed"
            }
            seen += 1
            guard seen <= nodes.count else { return "cycle in the list" }
            previous = slot
            slot = node.newer
        }
        if previous != newest { return "newest is \(newest), list ends at \(previous)" }
        if seen != index.count || index.slots.count != index.count { return "\(seen) linked, \(index.count) indexed" }
        if seen + free.count != nodes.count { return "slots leaked" }
        return nil
    }
}

extension LRUList: Sendable where Key: Sendable, Value: Sendable {}

extension LRUList.Node: Sendable where Key: Sendable, Value: Sendable {}
