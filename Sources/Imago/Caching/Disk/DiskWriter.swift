import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Records stored but not yet on disk, the one being written, and the names whose
/// files are being deleted.
///
/// A store replaces the pending record under its name and gives it a new
/// generation, so a write queued for an older version finds it gone and does
/// nothing. A name is tombstoned while its file is being deleted, once per deletion
/// in flight: reads of it miss meanwhile, and a write waits before renaming over it.
struct PendingWrites {
    /// A record waiting to be written.
    struct Record {
        let key: String
        let data: Data
        let metadata: Data
        /// The CRC-32 of `data`, when it came with it.
        let bodyChecksum: UInt32?
        let storedAt: Double
        /// The size of its file.
        let size: Int
        let generation: UInt64
    }

    /// The record being written now.
    struct Writing {
        let name: String
        /// Removed or evicted while being written: its file is deleted after the rename.
        var orphaned: Bool
    }

    private(set) var records: [String: Record] = [:]
    /// Bytes of the records waiting.
    private(set) var bytes = 0
    private var generation: UInt64 = 0
    private(set) var writing: Writing?
    private var tombstones: [String: Int] = [:]
    /// Queued `removeAll` sweeps; while any is queued, only pending records exist.
    var clearsQueued = 0

    /// Whether the file of `name` is being deleted.
    func isDeleting(_ name: String) -> Bool { tombstones[name] != nil }

    /// Whether another thread is deleting the file of `name`, leaving aside the
    /// tombstone an orphaned write holds on its own name.
    func isDeletedElsewhere(_ name: String) -> Bool {
        let own = writing?.orphaned == true ? 1 : 0
        return (tombstones[name] ?? 0) > own
    }

    /// Whether a record of `size` bytes under `name` fits in `limit` bytes waiting.
    func admits(size: Int, under name: String, limit: Int) -> Bool {
        bytes - (records[name]?.size ?? 0) + size <= limit
    }

    /// Holds a record for writing, replacing any under `name`; returns its generation.
    mutating func add(_ name: String, key: String, data: Data, metadata: Data, bodyChecksum: UInt32?, storedAt: Double, size: Int) -> UInt64 {
        generation += 1
        bytes += size - (records[name]?.size ?? 0)
        records[name] = Record(
            key: key, data: data, metadata: metadata, bodyChecksum: bodyChecksum, storedAt: storedAt, size: size, generation: generation)
        return generation
    }

    /// Forgets the record waiting under `name`.
    mutating func remove(_ name: String) {
        if let record = records.removeValue(forKey: name) { bytes -= record.size }
    }

    /// Forgets `name` and tombstones it until its file is deleted; a record being
    /// written right now is orphaned, and deleted after its rename.
    mutating func discard(_ name: String) {
        remove(name)
        if writing?.name == name { orphanWriting() }
        tombstone(name)
    }

    /// Forgets every record waiting and orphans the one being written.
    mutating func removeAll() {
        records = [:]
        bytes = 0
        orphanWriting()
    }

    private mutating func orphanWriting() {
        guard let writing, !writing.orphaned else { return }
        self.writing?.orphaned = true
        tombstone(writing.name)
    }

    mutating func tombstone(_ name: String) {
        tombstones[name, default: 0] += 1
    }

    /// Ends one deletion of `name`'s file.
    mutating func release(_ name: String) {
        guard let count = tombstones[name] else { return }
        tombstones[name] = count > 1 ? count - 1 : nil
    }

    /// The record of `generation` under `name`, now being written; nil if a newer
    /// store or a removal has replaced it.
    mutating func beginWrite(_ name: String, generation: UInt64) -> Record? {
        guard let record = records[name], record.generation == generation else { return nil }
        writing = Writing(name: name, orphaned: false)
        return record
    }

    /// Ends the write begun last; true if it was orphaned meanwhile.
    mutating func endWrite() -> Bool {
        defer { writing = nil }
        return writing?.orphaned ?? false
    }
}

// MARK: - Writing on the queue

extension DiskCache {
    /// Writes the record of `generation` under `name` if it is still the one waiting,
    /// and moves it from the pending bytes to the bytes on disk.
    func performWrite(name: String, generation: UInt64) {
        guard let job = state.withLock({ $0.writes.beginWrite(name, generation: generation) }) else { return }
        noteForeignChanges()
        let outcome = writeFile(job, name: name)
        let written = outcome == .written
        markOwnChange()

        var victims: [String] = []
        let orphaned = state.withLock { s -> Bool in
            let orphaned = s.writes.endWrite()
            let current = s.writes.records[name]?.generation == generation
            if written {
                guard !orphaned, s.index[name] != nil else { return orphaned }
                s.index.setDiskSize(name, job.size)
                if current {
                    s.writes.remove(name)
                    s.index.setPendingSize(name, 0)
                }
                // A newer version still waits; until it lands, both count.
                victims = s.evictOverLimit(keeping: name)
            } else {
                s.droppedWrites += 1
                if outcome == .noSpace {
                    victims = s.shrinkAfterRunningOutOfSpace(writing: job.size, at: now().timeIntervalSince1970)
                }
                guard current else { return orphaned }
                s.writes.remove(name)
                // An older version may still be on disk; it must not be served in place
                // of the one just stored.
                s.drop(name)
                victims.append(name)
            }
            return orphaned
        }
        if orphaned {
            // Removed or evicted while being written: the rename may have brought the
            // file back after its deletion.
            unlink(filePath(name))
            state.withLock { $0.writes.release(name) }
        }
        deleteFiles(victims)
    }

    /// How a record's write ended.
    enum WriteOutcome {
        case written
        /// The file system is full (or the user's quota is): the limit is too high
        /// for this disk.
        case noSpace
        case failed
    }

    /// Writes `job` to a temporary file in the directory and renames it into place,
    /// so that readers see the old record or the new one, never half of one; on
    /// failure nothing is left behind.
    ///
    /// No fsync: it would cost milliseconds per record for durability a cache does
    /// not need; after a power loss the checksum turns damage into a miss.
    private func writeFile(_ job: PendingWrites.Record, name: String) -> WriteOutcome {
        let serial = temporarySerial.withLock { serial -> Int in
            serial += 1
            return serial
        }
        let temporary = path + "/" + RecordFormat.temporaryPrefix + "\(getpid()).\(serial).\(name)"
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        var fd = open(temporary, flags, 0o600)
        if fd < 0 && errno == ENOENT {
            // The directory was deleted under us (a user cleaning ~/.cache): make it again.
            DiskFiles.createDirectory(path)
            fd = open(temporary, flags, 0o600)
        }
        func failure() -> WriteOutcome { errno == ENOSPC || errno == EDQUOT ? .noSpace : .failed }
        guard fd >= 0 else { return failure() }
        let prefix = RecordFormat.prefix(key: job.key, metadata: job.metadata, bodyCount: job.data.count, storedAt: job.storedAt)
        let trailer = RecordFormat.trailer(prefix: prefix, body: job.data, bodyChecksum: job.bodyChecksum)
        var outcome = WriteOutcome.written
        if !(FileDescriptors.writeAll(fd, prefix) && FileDescriptors.writeAll(fd, job.data) && FileDescriptors.writeAll(fd, trailer)) {
            outcome = failure()
        }
        // The modification time is the record's last use; start it at the time stored.
        if outcome == .written { DiskFiles.setTimes(fd, to: job.storedAt) }
        if close(fd) != 0 && outcome == .written { outcome = failure() }
        if outcome == .written {
            waitForDeletions(of: name)
            if rename(temporary, filePath(name)) == 0 { return .written }
            outcome = failure()
        }
        unlink(temporary)
        return outcome
    }

    /// Waits while another thread is deleting the file this write is about to rename
    /// into place: that deletion was decided before this record was stored, and run
    /// after the rename it would delete the new record. Deleting threads release their
    /// names right after the unlink, so the wait is microseconds; it is bounded anyway.
    private func waitForDeletions(of name: String) {
        for _ in 0..<10_000 {
            guard state.withLock({ $0.writes.isDeletedElsewhere(name) }) else { return }
            usleep(100)
        }
    }

    /// Deletes the files of removed or evicted records, then lets readers look at
    /// those names again.
    func deleteFiles(_ names: [String]) {
        guard !names.isEmpty else { return }
        for name in names { unlink(filePath(name)) }
        state.withLock { s in
            for name in names { s.writes.release(name) }
            s.deletedDuringScan?.formUnion(names)
        }
    }
}
