/// The disk tier's in-memory index: every record on disk or waiting to be written,
/// in least-recently-used order, the bytes they hold, and which to evict.
///
/// Recency is kept here and persisted in each file's modification time, which the
/// tier sets itself (access times are unreliable under `noatime` and `relatime`); a
/// scan of the directory learns it back (``reorderByLastUse()``).
struct DiskIndex {
    /// What the index knows of one record.
    struct Entry: Equatable {
        /// The size of the file believed on disk; 0 when there is none.
        var diskSize: Int
        /// The size of a record waiting to be written; 0 when there is none. Until
        /// the write lands, old file and new record both count.
        var pendingSize: Int
        /// Seconds since 1970.
        var lastUse: Double
        /// Orders entries used at the same clock reading; 0 for entries known only
        /// from disk.
        var sequence: UInt64
    }

    /// What ``evict(toFit:keeping:)`` took out.
    struct Eviction {
        /// Records removed from the index, least recent first.
        var evicted: [String] = []
        /// The kept record's older file, to delete while its new version waits to
        /// be written; it stays in the index for the pending bytes.
        var staleFile: String?
    }

    private var list = LRUList<String, Entry>()
    /// Bytes held: the files' sizes plus the records waiting to be written.
    private(set) var totalSize = 0
    private var sequence: UInt64 = 0

    /// How many records the index holds.
    var count: Int { list.count }

    /// The entry for the record file `name`, if indexed.
    subscript(name: String) -> Entry? {
        list.slot(for: name).map { list[$0] }
    }

    /// The names of every indexed record.
    var names: [String] { list.slotsFromOldest.map { list.key(at: $0) } }

    /// Adds `name`, which must not be indexed yet, as the most recently used record.
    mutating func insertNewest(_ name: String, diskSize: Int, pendingSize: Int, lastUse: Double) {
        let entry = Entry(diskSize: diskSize, pendingSize: pendingSize, lastUse: lastUse, sequence: nextSequence())
        list.insertNewest(entry, forKey: name)
        totalSize += diskSize + pendingSize
    }

    /// Adds `name`, which must not be indexed yet, as found on disk: older than any
    /// record used in memory at the same time. Its place is settled by
    /// ``reorderByLastUse()``.
    mutating func insertFromDisk(_ name: String, size: Int, lastUse: Double) {
        list.insertNewest(Entry(diskSize: size, pendingSize: 0, lastUse: lastUse, sequence: 0), forKey: name)
        totalSize += size
    }

    /// Marks `name`, if indexed, as used at `time`: the most recent record.
    mutating func touch(_ name: String, at time: Double) {
        guard let slot = list.slot(for: name) else { return }
        list[slot].lastUse = max(list[slot].lastUse, time)
        list[slot].sequence = nextSequence()
        list.moveToNewest(slot)
    }

    /// Sets the size of the file believed on disk for `name`, if indexed.
    mutating func setDiskSize(_ name: String, _ size: Int) {
        guard let slot = list.slot(for: name) else { return }
        totalSize += size - list[slot].diskSize
        list[slot].diskSize = size
    }

    /// Sets the size of the record waiting to be written for `name`, if indexed.
    mutating func setPendingSize(_ name: String, _ size: Int) {
        guard let slot = list.slot(for: name) else { return }
        totalSize += size - list[slot].pendingSize
        list[slot].pendingSize = size
    }

    /// Raises the last use of `name`, if indexed, to `time` without moving it; for
    /// scans, which reorder everything afterwards.
    mutating func noteLastUse(_ name: String, _ time: Double) {
        guard let slot = list.slot(for: name) else { return }
        list[slot].lastUse = max(list[slot].lastUse, time)
    }

    /// Takes `name` out of the index.
    @discardableResult
    mutating func remove(_ name: String) -> Entry? {
        guard let slot = list.slot(for: name) else { return nil }
        return remove(slot: slot)
    }

    private mutating func remove(slot: Int) -> Entry {
        let entry = list.remove(slot)
        totalSize -= entry.diskSize + entry.pendingSize
        return entry
    }

    /// Empties the index.
    mutating func removeAll() {
        list.removeAll()
        totalSize = 0
    }

    /// Relinks every entry by last use, as a scan learns recency from the files.
    mutating func reorderByLastUse() {
        list.reorder { ($0.lastUse, $0.sequence) < ($1.lastUse, $1.sequence) }
    }

    /// Removes least recently used records until the total fits `limit`, never
    /// `kept` (the record being stored or read): when only it is left over the
    /// limit, its older file on disk, if any, goes instead.
    mutating func evict(toFit limit: Int, keeping kept: String?) -> Eviction {
        var eviction = Eviction()
        while totalSize > limit, list.oldest >= 0 {
            let oldest = list.oldest
            let name = list.key(at: oldest)
            if name == kept {
                if list[oldest].diskSize > 0 {
                    totalSize -= list[oldest].diskSize
                    list[oldest].diskSize = 0
                    eviction.staleFile = name
                }
                break
            }
            _ = remove(slot: oldest)
            eviction.evicted.append(name)
        }
        return eviction
    }

    private mutating func nextSequence() -> UInt64 {
        sequence += 1
        return sequence
    }
}
