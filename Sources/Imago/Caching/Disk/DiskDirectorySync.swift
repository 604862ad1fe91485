import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the queue knows of the directory, to tell other processes' changes from
/// this one's.
///
/// Several processes may share the directory. Renames are atomic, concurrent writers
/// of one key race to the last rename, and deleting a file already gone is fine.
/// Each process sees others' changes through the directory's modification time and
/// re-reads the directory (at most every `rescanInterval` while others write, and in
/// `flush()` and `prune()`), so files it did not write count towards its limit.
struct DirectorySync {
    /// The directory as this process last left it.
    var stamp: DirectoryStamp?
    var foreignChange = false
    var changedSinceScan = false
    var lastScan: ContinuousClock.Instant?
}

/// A file a scan found in the directory.
struct ScannedFile {
    let name: String
    let size: Int
    /// Its modification time: the record's last use.
    let lastUse: Double
    /// From the header, when the scan read headers.
    var storedAt: Double?
    /// False when the header was read and is not a valid one for the file.
    var valid = true
}

// MARK: - Work on the queue

extension DiskCache {
    /// Brings the index in line with the directory if it may have drifted.
    func settle() {
        noteForeignChanges()
        let stale = sync.withLock { $0.foreignChange || $0.changedSinceScan }
        if stale { rescan(reading: .names) }
    }

    /// Notes whether the directory changed since this process last changed it, which
    /// means another process did; re-reads it if so, at most every `rescanInterval`.
    func noteForeignChanges() {
        let stamp = DirectoryStamp(path: path)
        let due = sync.withLock { sync -> Bool in
            if stamp != sync.stamp { sync.foreignChange = true }
            guard sync.foreignChange else { return false }
            return sync.lastScan.map { ContinuousClock.now - $0 >= Self.rescanInterval } ?? true
        }
        if due { rescan(reading: .names) }
    }

    /// Records the directory as this process's own change left it.
    func markOwnChange() {
        let stamp = DirectoryStamp(path: path)
        sync.withLock { sync in
            sync.stamp = stamp
            sync.changedSinceScan = true
        }
    }

    /// How much of each file a scan reads.
    enum ScanDepth {
        /// Names and sizes only.
        case names
        /// Every record's header: the maximum age is exact and foreign files go too.
        case headers
        /// Every byte, against the checksum: damaged bodies go too, which a load
        /// otherwise finds only when it next reads the record.
        case wholeRecords
    }

    /// Rebuilds the index from the directory: picks up other processes' files, drops
    /// entries whose files are gone, deletes expired records and abandoned temporary
    /// files (and, deeper, foreign and damaged ones), then evicts down to the size limit.
    func rescan(reading depth: ScanDepth) {
        let time = now().timeIntervalSince1970
        state.withLock { $0.deletedDuringScan = [] }
        var found: [ScannedFile] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            if name.hasPrefix(RecordFormat.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
                continue
            }
            guard RecordFormat.isRecordName(name) else { continue }
            var info = stat()
            guard stat(filePath(name), &info) == 0, DiskFiles.isRegularFile(info) else { continue }
            var file = ScannedFile(name: name, size: Int(info.st_size), lastUse: DiskFiles.modificationTime(info))
            if depth != .names {
                let header = depth == .wholeRecords ? RecordFile.intactHeader(at: filePath(name)) : RecordFile.header(at: filePath(name))
                if let header, header.fileSize == file.size {
                    file.storedAt = header.storedAt
                } else {
                    file.valid = false
                }
            }
            found.append(file)
        }

        let doomed = state.withLock { $0.adopt(found, at: time) }
        deleteFiles(doomed)
        let stamp = DirectoryStamp(path: path)
        sync.withLock { sync in
            sync.stamp = stamp
            sync.lastScan = ContinuousClock.now
            sync.foreignChange = false
            sync.changedSinceScan = false
        }
    }

    /// Deletes every record file and abandoned temporary files; other files stay.
    func sweep() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            if name.hasPrefix(RecordFormat.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
            } else if RecordFormat.isRecordName(name) {
                unlink(filePath(name))
            }
        }
    }

    /// How many record files in the directory were put there before `date`: after
    /// `removeAll()` and `flush()`, the records that could not be deleted, told apart
    /// from those that other processes sharing the directory wrote since. A file's
    /// status-change time says when it was renamed into place, whatever time its
    /// record claims; it is read from the kernel's coarse clock, so files are taken as
    /// new from a twentieth of a second before `date`. Reads the directory on the
    /// calling thread.
    package func recordCount(placedBefore date: Date) -> Int {
        let limit = date.timeIntervalSince1970 - 0.05
        var count = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] where RecordFormat.isRecordName(name) {
            var info = stat()
            if lstat(filePath(name), &info) == 0, DiskFiles.statusChangeTime(info) < limit { count += 1 }
        }
        return count
    }

    /// Deletes a temporary file whose writer is gone: this process (only the queue
    /// writes them, and the queue is here), a process that no longer exists, or one
    /// that has not touched it for an hour.
    private func removeIfAbandoned(temporary name: String) {
        let fields = name.dropFirst(RecordFormat.temporaryPrefix.count).split(separator: ".")
        let owner = fields.first.flatMap { pid_t($0) }
        var abandoned = owner == nil || owner == getpid() || (kill(owner!, 0) != 0 && errno == ESRCH)
        if !abandoned {
            var info = stat()
            if stat(filePath(name), &info) == 0 {
                abandoned = Date().timeIntervalSince1970 - DiskFiles.modificationTime(info) > Self.abandonedTemporaryAge
            }
        }
        if abandoned { unlink(filePath(name)) }
    }
}

extension DiskCacheState {
    /// Makes the index what a scan found: other processes' files join it, entries
    /// whose files are gone leave it, invalid and expired files are dropped, and
    /// recency follows the files' times. Returns the names to delete, tombstoned.
    mutating func adopt(_ found: [ScannedFile], at time: Double) -> [String] {
        var doomed: [String] = []
        // A queued sweep will delete what is on disk; keep only records still to come.
        let clearing = writes.clearsQueued > 0
        let deleted = deletedDuringScan ?? []
        deletedDuringScan = nil
        var seen = Set<String>()
        for file in found where !clearing && !writes.isDeleting(file.name) {
            let entry = index[file.name]
            // Seen before this process deleted it, and not stored again since.
            if entry == nil && deleted.contains(file.name) { continue }
            if (entry?.pendingSize ?? 0) == 0 {
                // The time stored is at most the last use, so a last use older than
                // the maximum age proves the record expired without reading it.
                let lastUse = max(entry?.lastUse ?? 0, file.lastUse)
                if !file.valid || isExpired(storedAt: file.storedAt ?? lastUse, at: time) {
                    if file.valid { evictions += 1 } else { discarded += 1 }
                    drop(file.name)
                    doomed.append(file.name)
                    continue
                }
            }
            seen.insert(file.name)
            if entry != nil {
                index.setDiskSize(file.name, file.size)
                index.noteLastUse(file.name, file.lastUse)
            } else {
                index.insertFromDisk(file.name, size: file.size, lastUse: file.lastUse)
            }
        }
        for name in index.names where !seen.contains(name) {
            // Deleted by someone else, or never on disk.
            index.setDiskSize(name, 0)
            if index[name]?.pendingSize == 0 { index.remove(name) }
        }
        index.reorderByLastUse()
        return doomed + evictOverLimit(keeping: nil)
    }
}
