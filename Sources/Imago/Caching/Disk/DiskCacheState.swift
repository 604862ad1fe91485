import Foundation

/// The disk tier's books, kept under one lock so that they always agree: the index
/// of what is held, the writes waiting, and the counters. Every change that touches
/// more than one of them is made here.
struct DiskCacheState {
    /// The limit in force: the configured one, lowered for a while when the disk ran
    /// out of space below it (a cache that never reaches its limit would never evict
    /// again), raised again as the disk has room.
    private(set) var sizeLimit: Int
    /// The limit the cache was made with.
    let configuredLimit: Int
    /// When the disk's free space is to be measured again, on the cache's clock: set
    /// while the limit is below the configured one, nil otherwise.
    private(set) var spaceCheckDue: Double?
    let maximumAge: Double?
    var index = DiskIndex()
    var writes = PendingWrites()
    var hits = 0
    var misses = 0
    var evictions = 0
    var discarded = 0
    var droppedWrites = 0
    /// Files deleted while a directory scan runs, from its listing on: the scan may
    /// have seen them before they went, and must not index them again.
    var deletedDuringScan: Set<String>?

    init(sizeLimit: Int, maximumAge: Double?) {
        self.sizeLimit = sizeLimit
        configuredLimit = sizeLimit
        self.maximumAge = maximumAge
    }

    var statistics: DiskCache.Statistics {
        DiskCache.Statistics(
            count: index.count, totalSize: index.totalSize, pendingWrites: writes.records.count,
            pendingSize: writes.bytes, droppedWrites: droppedWrites, hits: hits, misses: misses,
            evictions: evictions, discarded: discarded, sizeLimit: sizeLimit)
    }

    func isExpired(storedAt: Double, at time: Double) -> Bool {
        maximumAge.map { time - storedAt > $0 } ?? false
    }

    // MARK: - Reading

    /// What memory alone can say of a read.
    enum MemoryAnswer {
        /// The answer, from a record waiting to be written or from a removal whose
        /// file may not be deleted yet.
        case answer(DiskCache.Record?)
        /// A record waiting to be written had expired: it is dropped, and its name
        /// waits for `deleteFiles`.
        case expired
        /// Only the file can tell.
        case readFile
    }

    /// Answers a read of `key` (file `name`) from memory when it can; a read of a
    /// record's head alone does not count as a hit (`countingHit`), which its body's
    /// read counts if there is one.
    mutating func lookUp(_ name: String, key: String, at time: Double, countingHit: Bool = true) -> MemoryAnswer {
        if let pending = writes.records[name] {
            guard pending.key == key else {
                misses += 1
                return .answer(nil)
            }
            if isExpired(storedAt: pending.storedAt, at: time) {
                drop(name)
                evictions += 1
                misses += 1
                return .expired
            }
            index.touch(name, at: time)
            if countingHit { hits += 1 }
            return .answer(DiskCache.Record(
                data: pending.data, metadata: pending.metadata, storedAt: Date(timeIntervalSince1970: pending.storedAt)))
        }
        // Removed, evicted or cleared, with the file perhaps not deleted yet.
        if writes.isDeleting(name) || writes.clearsQueued > 0 {
            misses += 1
            return .answer(nil)
        }
        return .readFile
    }

    /// Books a file read that found no valid record; the caller has deleted it.
    mutating func noteInvalidFile(_ name: String, expired: Bool) {
        misses += 1
        if expired { evictions += 1 } else { discarded += 1 }
        if let entry = index[name], entry.pendingSize == 0 { index.remove(name) }
    }

    /// Books a file read that found a valid record of `size` bytes; returns the names
    /// evicted to make room for it, for `deleteFiles`.
    mutating func noteHit(_ name: String, size: Int, at time: Double) -> [String] {
        hits += 1
        if let entry = index[name] {
            if entry.pendingSize == 0 && entry.diskSize != size { index.setDiskSize(name, size) }
            index.touch(name, at: time)
        } else if writes.records[name] == nil && !writes.isDeleting(name) && writes.clearsQueued == 0 {
            // A file this process has not indexed yet: another process wrote it, or
            // the start-up scan has not reached it.
            index.insertNewest(name, diskSize: size, pendingSize: 0, lastUse: time)
        }
        return evictOverLimit(keeping: name)
    }

    // MARK: - Writing and removing

    /// Holds a new record for writing and indexes it as the most recent; returns its
    /// generation, or nil when it is not kept (too big, or too many bytes already
    /// waiting), in which case its name waits for `deleteFiles`.
    mutating func stage(
        _ name: String, key: String, data: Data, metadata: Data, bodyChecksum: UInt32?, size: Int, at time: Double
    ) -> UInt64? {
        // A record bigger than the whole cache would only flush everything else.
        guard size <= sizeLimit, writes.admits(size: size, under: name, limit: DiskCache.maximumPendingBytes) else {
            droppedWrites += 1
            // Not stored, so an older version must not answer for it either.
            drop(name)
            return nil
        }
        let generation = writes.add(name, key: key, data: data, metadata: metadata, bodyChecksum: bodyChecksum, storedAt: time, size: size)
        if index[name] != nil {
            index.setPendingSize(name, size)
            index.touch(name, at: time)
        } else {
            index.insertNewest(name, diskSize: 0, pendingSize: size, lastUse: time)
        }
        return generation
    }

    /// Forgets `name` (index and pending write) and tombstones it until the caller has
    /// deleted its file.
    mutating func drop(_ name: String) {
        index.remove(name)
        writes.discard(name)
    }

    /// Forgets every record at once; a sweep on the queue deletes the files.
    mutating func clear() {
        index.removeAll()
        writes.removeAll()
        // Until the sweep has deleted the files, readers are answered from here.
        writes.clearsQueued += 1
    }

    /// The disk ran out of space writing a record of `size` bytes: the limit comes
    /// down to 90 % of what is held now, less that record, so that evicting frees room
    /// for the writes to come, and the free space is measured again in a while
    /// (`DiskCache.spaceCheckInterval`). Returns the names evicted, for `deleteFiles`.
    mutating func shrinkAfterRunningOutOfSpace(writing size: Int, at time: Double) -> [String] {
        sizeLimit = max(0, min(sizeLimit, (index.totalSize - size) * 9 / 10))
        spaceCheckDue = time + DiskCache.spaceCheckInterval
        return evictOverLimit(keeping: nil)
    }

    /// Whether the caller is to measure the free space now; the check is claimed, so
    /// that one thread measures and the next check waits its interval.
    mutating func claimSpaceCheck(at time: Double) -> Bool {
        guard let due = spaceCheckDue, time >= due else { return false }
        spaceCheckDue = time + DiskCache.spaceCheckInterval
        return true
    }

    /// The disk has `available` bytes free: the limit rises to what is on disk plus
    /// nine tenths of them (a tenth is left to whoever else writes there), never
    /// above the configured limit and never down; once back at the configured limit,
    /// the free space is no longer watched.
    mutating func noteFreeSpace(_ available: Int) {
        let room = index.totalSize - writes.bytes + available / 10 * 9
        sizeLimit = max(sizeLimit, min(configuredLimit, room))
        if sizeLimit >= configuredLimit { spaceCheckDue = nil }
    }

    /// Evicts least recently used records until the total fits; returns their names,
    /// tombstoned, for `deleteFiles`.
    mutating func evictOverLimit(keeping kept: String?) -> [String] {
        let eviction = index.evict(toFit: sizeLimit, keeping: kept)
        for name in eviction.evicted {
            writes.discard(name)
            evictions += 1
        }
        guard let stale = eviction.staleFile else { return eviction.evicted }
        // Only the record being stored is left, with an older version of it on disk:
        // the older file goes first.
        writes.tombstone(stale)
        return eviction.evicted + [stale]
    }
}
