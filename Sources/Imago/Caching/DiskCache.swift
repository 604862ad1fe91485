import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The disk tier's storage engine: for each key, the body bytes and an opaque metadata
/// blob (the HTTP layer above keeps response headers there), one file per key.
///
/// **Files.** A record lives in a file named by the SHA-256 (hex) of its key. The file
/// starts with a 40-byte header (magic, format version, key, metadata and body
/// lengths, time stored), then the key, the metadata and the body, and ends with a
/// CRC-32 of everything before it. CRC-32 rather than SHA-256: the checksum guards
/// against accidents (a flipped bit, a write cut short by a crash, a stray file), and
/// CRC-32 catches every error of up to 32 adjacent bits and lets other damage through
/// once in four billion; a forger needs no hash collision, since whoever can write the
/// directory can write a valid record anyway. A disk hit checks every byte, and here
/// CRC-32 runs at 2 GB/s against 0.3 GB/s for the Swift SHA-256 (release build).
/// The stored key catches name collisions and foreign files. Whatever fails a
/// check (damaged, truncated, foreign, from another format version) is deleted and
/// reported as a miss, so the layer above fetches it again.
///
/// **Writes** never block the caller: `store` keeps the record in memory, where reads
/// find it at once, and a serial queue writes it to a temporary file in the same
/// directory and renames it into place, so readers (in this process or another) see
/// the old record or the new one, never half of one. There is no fsync: it would
/// cost milliseconds per record for durability a cache does not need; after a power
/// loss a record may be missing or damaged, and the checksum turns damage into a miss.
/// A write that fails (unwritable directory, full disk) is dropped and counted in
/// `statistics.droppedWrites`; nothing is thrown and nothing crashes. So is a store
/// made while 64 MiB already wait for a slower disk: memory stays bounded, and the
/// record is fetched again later.
///
/// `flush()` waits for what is queued; tests and command-line tools need it, apps
/// rarely do.
///
/// **The size limit** holds at every moment, not only after a background sweep:
/// `store` evicts least recently used records until the bytes on disk plus the
/// bytes waiting in memory fit, deleting the evicted files before it returns (one
/// unlink each; the only file work done on the caller's thread). Recency is kept in
/// memory and persisted in each file's modification time, which this class sets
/// itself (when written, and when read if the last mark is over a minute old), since
/// access times are unreliable (`noatime`, `relatime`). At start, the index is rebuilt
/// from the directory in the background. Sizes are file sizes, not blocks allocated.
///
/// **Several processes** may share the directory. Renames are atomic, concurrent
/// writers of one key race to the last rename, and deleting a file already gone is
/// fine. Each process sees others' changes through the directory's modification time
/// and re-reads the directory (at most every two seconds while others write, and in
/// `flush()` and `prune()`), so files it did not write count towards its limit.
///
/// **Records older than `maximumAge`** (by the time stored) are misses and are deleted
/// when read or found by a scan.
///
/// `record(forKey:)` reads the file on the calling thread: call it off the main thread.
public final class DiskCache: Sendable {
    /// A stored record.
    public struct Record: Sendable, Equatable {
        /// The body bytes.
        public var data: Data
        /// The metadata stored with the body, as given to `store`.
        public var metadata: Data
        /// When the record was stored (by the cache's clock).
        public var storedAt: Date

        /// Makes a record.
        public init(data: Data, metadata: Data, storedAt: Date) {
            self.data = data
            self.metadata = metadata
            self.storedAt = storedAt
        }
    }

    /// Counters since the cache was opened, and its present contents.
    public struct Statistics: Sendable, Equatable {
        /// Records held, on disk or waiting to be written.
        public var count = 0
        /// Bytes held: the files' sizes plus the records waiting in memory.
        public var totalSize = 0
        /// Records waiting in memory to be written.
        public var pendingWrites = 0
        /// Bytes of the records waiting to be written.
        public var pendingSize = 0
        /// Writes given up: the directory or the disk refused them, the record alone
        /// was larger than the size limit, or too many bytes were already waiting.
        public var droppedWrites = 0
        /// Reads that found a valid record.
        public var hits = 0
        /// Reads that found nothing usable.
        public var misses = 0
        /// Records deleted to keep the size limit or because they were too old.
        public var evictions = 0
        /// Damaged, truncated or foreign files found and deleted.
        public var discarded = 0
    }

    /// Where the records live.
    public let directory: URL
    /// The most bytes kept (file sizes plus records waiting to be written).
    public let sizeLimit: Int
    /// Records stored longer ago than this many seconds are misses; nil keeps them
    /// until evicted.
    public let maximumAge: Double?

    /// At most this many bytes wait in memory for the disk; beyond it, writes are
    /// dropped rather than letting a slow disk grow the process without bound.
    static let maximumPendingBytes = 64 << 20
    /// A read marks a file as used (its modification time) only when the last mark
    /// is older than this, so a hot record does not cost an inode write per hit.
    static let touchInterval: Double = 60
    /// Seen changes by other processes re-read the directory at most this often.
    static let rescanInterval: Duration = .seconds(2)
    /// A temporary file of a live process older than this is abandoned.
    static let abandonedTemporaryAge: Double = 3600

    private let path: String
    private let now: @Sendable () -> Date
    private let queue = DispatchQueue(label: "imago.disk-cache", qos: .utility)
    private let state = Locked(State())
    /// Touched only by work on `queue`; a lock because the compiler cannot know that.
    private let upkeep = Locked(Upkeep())

    /// The platform's cache directory, in a folder of Imago's own: on Linux
    /// `$XDG_CACHE_HOME/imago` (else `~/.cache/imago`); on Apple platforms
    /// `Library/Caches/<bundle identifier>/imago`, never a backed-up location.
    public static var defaultDirectory: URL {
        #if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD)
        // The XDG base-directory spec ignores relative paths in the variable.
        let environment = ProcessInfo.processInfo.environment
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else {
            base = (environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.cache"
        }
        return URL(fileURLWithPath: base, isDirectory: true).appendingPathComponent("imago", isDirectory: true)
        #else
        let caches = FileManager.default.urls(for: .cachesDirectory, in: .userDomainMask).first
            ?? URL(fileURLWithPath: NSTemporaryDirectory(), isDirectory: true)
        // Apps outside the sandbox share ~/Library/Caches; a folder per app keeps their
        // limits apart.
        let app = Bundle.main.bundleIdentifier.map { caches.appendingPathComponent($0, isDirectory: true) } ?? caches
        return app.appendingPathComponent("imago", isDirectory: true)
        #endif
    }

    /// Opens the cache in `directory` (default: `defaultDirectory`), creating it with
    /// mode 0700 if needed. Never fails: an unusable directory makes every write a
    /// dropped write and every read a miss.
    ///
    /// - Parameters:
    ///   - sizeLimit: the most bytes kept.
    ///   - maximumAge: seconds after which a record is a miss; nil for no limit.
    ///   - now: the clock for record times and recency; tests move it.
    public init(
        directory: URL? = nil, sizeLimit: Int = 512 << 20, maximumAge: Double? = 30 * 86400,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        let directory = (directory ?? Self.defaultDirectory).standardizedFileURL
        self.directory = directory
        self.path = directory.path
        self.sizeLimit = max(0, sizeLimit)
        self.maximumAge = maximumAge
        self.now = now
        queue.async { [self] in
            createDirectory()
            rescan(checkingHeaders: false)
        }
    }

    /// The file that holds (or would hold) the record for `key`.
    public func fileURL(forKey key: String) -> URL {
        directory.appendingPathComponent(Self.fileName(forKey: key), isDirectory: false)
    }

    /// The state of the cache now.
    public var statistics: Statistics {
        state.withLock { s in
            Statistics(
                count: s.entries.count, totalSize: s.totalSize, pendingWrites: s.pending.count,
                pendingSize: s.pendingBytes, droppedWrites: s.droppedWrites, hits: s.hits, misses: s.misses,
                evictions: s.evictions, discarded: s.discarded)
        }
    }

    // MARK: - Reading

    /// The record stored under `key`, if there is a valid one younger than
    /// `maximumAge`. Reads the file on the calling thread; a damaged, foreign or
    /// expired file is deleted and reported as nil.
    public func record(forKey key: String) -> Record? {
        let name = Self.fileName(forKey: key)
        let time = now().timeIntervalSince1970
        var victims: [String] = []
        enum Plan { case answer(Record?), disk }
        let plan: Plan = state.withLock { s in
            if let pending = s.pending[name] {
                guard pending.key == key else {
                    s.misses += 1
                    return .answer(nil)
                }
                if isExpired(storedAt: pending.storedAt, at: time) {
                    Self.drop(name, from: &s)
                    victims = [name]
                    s.evictions += 1
                    s.misses += 1
                    return .answer(nil)
                }
                if let entry = s.entries[name] { Self.touch(entry, at: time, in: &s) }
                s.hits += 1
                return .answer(Record(data: pending.data, metadata: pending.metadata, storedAt: Date(timeIntervalSince1970: pending.storedAt)))
            }
            // Removed, evicted or cleared, with the file perhaps not deleted yet.
            if s.tombstones[name] != nil || s.clearsQueued > 0 {
                s.misses += 1
                return .answer(nil)
            }
            return .disk
        }
        if case .answer(let record) = plan {
            deleteFiles(victims)
            return record
        }

        switch readFile(name: name, key: key, at: time) {
        case .missing:
            state.withLock { $0.misses += 1 }
            return nil
        case .invalid(let identity, let expired):
            // Only the file read is deleted: another process may have replaced it since.
            let current = Self.identity(ofPath: filePath(name))
            if current == identity { unlink(filePath(name)) }
            state.withLock { s in
                s.misses += 1
                if expired { s.evictions += 1 } else { s.discarded += 1 }
                if let entry = s.entries[name], entry.pendingSize == 0 { Self.remove(entry, from: &s) }
            }
            return nil
        case .hit(let record, let size):
            state.withLock { s in
                s.hits += 1
                if let entry = s.entries[name] {
                    if entry.pendingSize == 0 && entry.diskSize != size {
                        s.totalSize += size - entry.diskSize
                        entry.diskSize = size
                    }
                    Self.touch(entry, at: time, in: &s)
                } else if s.pending[name] == nil && s.tombstones[name] == nil && s.clearsQueued == 0 {
                    // A file this process has not indexed yet: another process wrote
                    // it, or the start-up scan has not reached it.
                    let entry = Entry(name: name, diskSize: size, lastUse: time, sequence: Self.nextSequence(&s))
                    s.entries[name] = entry
                    s.totalSize += size
                    Self.insertNewest(entry, in: &s)
                }
                victims = evictOverLimit(&s, keeping: name)
            }
            deleteFiles(victims)
            return record
        }
    }

    // MARK: - Writing

    /// Stores `data` and `metadata` under `key`, replacing any record there. Returns at
    /// once: the record is readable immediately and written to disk in the background.
    public func store(_ data: Data, metadata: Data = Data(), forKey key: String) {
        let name = Self.fileName(forKey: key)
        let size = RecordFormat.fileSize(key: key.utf8.count, metadata: metadata.count, body: data.count)
        let time = now().timeIntervalSince1970
        let victims: [String] = state.withLock { s in
            let replaced = s.pending[name]?.size ?? 0
            // A record bigger than the whole cache would only flush everything else.
            guard size <= sizeLimit, s.pendingBytes - replaced + size <= Self.maximumPendingBytes else {
                s.droppedWrites += 1
                // Not stored, so an older version must not answer for it either.
                Self.drop(name, from: &s)
                return [name]
            }
            s.generation += 1
            let generation = s.generation
            s.pending[name] = Pending(key: key, data: data, metadata: metadata, storedAt: time, size: size, generation: generation)
            s.pendingBytes += size - replaced
            if let entry = s.entries[name] {
                s.totalSize += size - entry.pendingSize
                entry.pendingSize = size
                Self.touch(entry, at: time, in: &s)
            } else {
                let entry = Entry(name: name, diskSize: 0, lastUse: time, sequence: Self.nextSequence(&s))
                entry.pendingSize = size
                s.entries[name] = entry
                s.totalSize += size
                Self.insertNewest(entry, in: &s)
            }
            // Queued under the lock so the queue's order is the order of the stores.
            queue.async { [self] in performWrite(name: name, generation: generation) }
            return evictOverLimit(&s, keeping: name)
        }
        deleteFiles(victims)
    }

    /// Removes the record under `key`; a read afterwards misses.
    public func removeRecord(forKey key: String) {
        let name = Self.fileName(forKey: key)
        state.withLock { Self.drop(name, from: &$0) }
        deleteFiles([name])
    }

    /// Removes every record, at once for readers; the files are deleted in the
    /// background (`flush()` waits for it). Files that are not records are left alone.
    public func removeAll() {
        state.withLock { s in
            Self.clearIndex(&s)
            s.pending = [:]
            s.pendingBytes = 0
            if let writing = s.writing, !writing.orphaned {
                s.writing?.orphaned = true
                s.tombstones[writing.name, default: 0] += 1
            }
            // Until the sweep has deleted the files, readers are answered from here.
            s.clearsQueued += 1
            queue.async { [self] in
                noteForeignChanges()
                sweep()
                state.withLock { $0.clearsQueued -= 1 }
                markOwnChange()
            }
        }
    }

    /// Re-reads the directory in the background and enforces the size limit and the
    /// maximum age now, reading every file's header; also deletes files that are not
    /// valid records and temporary files abandoned by dead processes. `flush()` waits
    /// for it.
    public func prune() {
        queue.async { [self] in
            noteForeignChanges()
            rescan(checkingHeaders: true)
        }
    }

    /// Waits until every write, removal and prune asked for so far has reached the
    /// disk, and the index agrees with the directory. Blocks: keep it off the main thread.
    public func flush() {
        queue.sync { settle() }
    }

    /// Waits, without blocking a thread, until every write, removal and prune asked
    /// for so far has reached the disk, and the index agrees with the directory.
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async { [self] in
                settle()
                continuation.resume()
            }
        }
    }

    // MARK: - Work on the queue

    private func settle() {
        noteForeignChanges()
        let stale = upkeep.withLock { $0.foreignChange || $0.changedSinceScan }
        if stale { rescan(checkingHeaders: false) }
    }

    private func performWrite(name: String, generation: UInt64) {
        let job: Pending? = state.withLock { s in
            guard let pending = s.pending[name], pending.generation == generation else { return nil }
            s.writing = Writing(name: name, orphaned: false)
            return pending
        }
        guard let job else { return }
        noteForeignChanges()
        let written = writeFile(job, name: name)
        markOwnChange()

        var victims: [String] = []
        let orphaned = state.withLock { s -> Bool in
            let orphaned = s.writing?.orphaned ?? false
            s.writing = nil
            let current = s.pending[name]?.generation == generation
            if written {
                guard !orphaned, let entry = s.entries[name] else { return orphaned }
                s.totalSize += job.size - entry.diskSize
                entry.diskSize = job.size
                if current {
                    s.pending[name] = nil
                    s.pendingBytes -= job.size
                    s.totalSize -= entry.pendingSize
                    entry.pendingSize = 0
                }
                // A newer version still waits; until it lands, both count.
                victims = evictOverLimit(&s, keeping: name)
            } else {
                s.droppedWrites += 1
                guard current else { return orphaned }
                s.pending[name] = nil
                s.pendingBytes -= job.size
                // An older version may still be on disk; it must not be served in place
                // of the one just stored.
                Self.drop(name, from: &s)
                victims.append(name)
            }
            return orphaned
        }
        if orphaned {
            // Removed or evicted while being written: the rename may have brought the
            // file back after its deletion.
            unlink(filePath(name))
            state.withLock { Self.release(name, in: &$0) }
        }
        deleteFiles(victims)
    }

    /// Writes `job` to a temporary file and renames it into place; false if any step
    /// failed, leaving nothing behind.
    private func writeFile(_ job: Pending, name: String) -> Bool {
        let serial = upkeep.withLock { upkeep -> Int in
            upkeep.temporaryCounter += 1
            return upkeep.temporaryCounter
        }
        let temporary = path + "/" + RecordFormat.temporaryPrefix + "\(getpid()).\(serial).\(name)"
        let flags = O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC
        var fd = open(temporary, flags, 0o600)
        if fd < 0 && errno == ENOENT {
            // The directory was deleted under us (a user cleaning ~/.cache): make it again.
            createDirectory()
            fd = open(temporary, flags, 0o600)
        }
        guard fd >= 0 else { return false }
        let prefix = RecordFormat.prefix(key: job.key, metadata: job.metadata, bodyCount: job.data.count, storedAt: job.storedAt)
        var checksum = prefix.withUnsafeBytes { CRC32.update(0, $0) }
        checksum = job.data.withUnsafeBytes { CRC32.update(checksum, $0) }
        let trailer = RecordFormat.littleEndian(UInt64(checksum), count: 4)
        var ok = Self.writeAll(fd, prefix) && Self.writeAll(fd, job.data) && Self.writeAll(fd, trailer)
        if ok {
            // The modification time is the record's last use; start it at the time stored.
            var times = [Self.fileTime(job.storedAt), Self.fileTime(job.storedAt)]
            _ = futimens(fd, &times)
        }
        if close(fd) != 0 { ok = false }
        if ok { waitForDeletions(of: name) }
        if ok && rename(temporary, filePath(name)) == 0 { return true }
        unlink(temporary)
        return false
    }

    /// Waits while another thread is deleting the file this write is about to rename
    /// into place: that deletion was decided before this record was stored, and run
    /// after the rename it would delete the new record. Deleting threads release their
    /// names right after the unlink, so the wait is microseconds; it is bounded anyway.
    private func waitForDeletions(of name: String) {
        for _ in 0..<10_000 {
            let busy = state.withLock { s -> Bool in
                // An orphaned write's own tombstone is released by the write itself.
                let own = s.writing?.orphaned == true ? 1 : 0
                return (s.tombstones[name] ?? 0) > own
            }
            guard busy else { return }
            usleep(100)
        }
    }

    /// Notes whether the directory changed since this process last changed it, which
    /// means another process did; re-reads it if so, at most every `rescanInterval`.
    private func noteForeignChanges() {
        let stamp = Self.stamp(ofPath: path)
        let due = upkeep.withLock { upkeep -> Bool in
            if stamp != upkeep.stamp { upkeep.foreignChange = true }
            guard upkeep.foreignChange else { return false }
            return upkeep.lastScan.map { ContinuousClock.now - $0 >= Self.rescanInterval } ?? true
        }
        if due { rescan(checkingHeaders: false) }
    }

    private func markOwnChange() {
        let stamp = Self.stamp(ofPath: path)
        upkeep.withLock { upkeep in
            upkeep.stamp = stamp
            upkeep.changedSinceScan = true
        }
    }

    /// Rebuilds the index from the directory: picks up other processes' files, drops
    /// entries whose files are gone, deletes expired records and abandoned temporary
    /// files, then evicts down to the size limit. With `checkingHeaders`, every
    /// record's header is read, so the maximum age is exact and foreign files go too.
    private func rescan(checkingHeaders: Bool) {
        struct Found {
            let name: String
            let size: Int
            let lastUse: Double
            var storedAt: Double?
            var valid = true
        }
        let time = now().timeIntervalSince1970
        var found: [Found] = []
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            if name.hasPrefix(RecordFormat.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
                continue
            }
            guard RecordFormat.isRecordName(name) else { continue }
            var info = stat()
            guard stat(filePath(name), &info) == 0, Self.isRegularFile(info) else { continue }
            var file = Found(name: name, size: Int(info.st_size), lastUse: Self.modificationTime(info))
            if checkingHeaders {
                if let header = readHeader(name: name), header.fileSize == file.size {
                    file.storedAt = header.storedAt
                } else {
                    file.valid = false
                }
            }
            found.append(file)
        }

        var doomed: [String] = []
        state.withLock { s in
            // A queued sweep will delete what is on disk; keep only records still to come.
            let clearing = s.clearsQueued > 0
            var seen = Set<String>()
            for file in found where !clearing && s.tombstones[file.name] == nil {
                let entry = s.entries[file.name]
                if (entry?.pendingSize ?? 0) == 0 {
                    // The time stored is at most the last use, so a last use older than
                    // the maximum age proves the record expired without reading it.
                    let lastUse = max(entry?.lastUse ?? 0, file.lastUse)
                    if !file.valid || isExpired(storedAt: file.storedAt ?? lastUse, at: time) {
                        if file.valid { s.evictions += 1 } else { s.discarded += 1 }
                        Self.drop(file.name, from: &s)
                        doomed.append(file.name)
                        continue
                    }
                }
                seen.insert(file.name)
                if let entry {
                    s.totalSize += file.size - entry.diskSize
                    entry.diskSize = file.size
                    entry.lastUse = max(entry.lastUse, file.lastUse)
                } else {
                    // Known only from disk: older than anything used in memory at the same time.
                    let entry = Entry(name: file.name, diskSize: file.size, lastUse: file.lastUse, sequence: 0)
                    s.entries[file.name] = entry
                    s.totalSize += file.size
                }
            }
            for (name, entry) in s.entries where !seen.contains(name) {
                // Deleted by someone else, or never on disk.
                s.totalSize -= entry.diskSize
                entry.diskSize = 0
                if entry.pendingSize == 0 { s.entries[name] = nil }
            }
            Self.reorder(&s)
            doomed += evictOverLimit(&s, keeping: nil)
        }
        deleteFiles(doomed)
        let stamp = Self.stamp(ofPath: path)
        upkeep.withLock { upkeep in
            upkeep.stamp = stamp
            upkeep.lastScan = ContinuousClock.now
            upkeep.foreignChange = false
            upkeep.changedSinceScan = false
        }
    }

    /// Deletes every record file and abandoned temporary files; other files stay.
    private func sweep() {
        for name in (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [] {
            if name.hasPrefix(RecordFormat.temporaryPrefix) {
                removeIfAbandoned(temporary: name)
            } else if RecordFormat.isRecordName(name) {
                unlink(filePath(name))
            }
        }
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
                abandoned = Date().timeIntervalSince1970 - Self.modificationTime(info) > Self.abandonedTemporaryAge
            }
        }
        if abandoned { unlink(filePath(name)) }
    }

    private func createDirectory() {
        // Each missing level gets 0700, as the XDG spec asks of ~/.cache itself.
        var prefix = ""
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST { return }
        }
    }

    // MARK: - Files

    private enum ReadOutcome {
        case missing
        case invalid(FileIdentity, expired: Bool)
        case hit(Record, size: Int)
    }

    private func filePath(_ name: String) -> String { path + "/" + name }

    private func readFile(name: String, key: String, at time: Double) -> ReadOutcome {
        let fd = open(filePath(name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .missing }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, Self.isRegularFile(info) else { return .missing }
        let identity = FileIdentity(info)
        let size = Int(info.st_size)
        var headerBytes = Data(count: RecordFormat.headerSize)
        guard size >= RecordFormat.headerSize + RecordFormat.trailerSize, Self.readAll(fd, into: &headerBytes),
              let header = RecordFormat.Header(headerBytes), header.fileSize == size
        else { return .invalid(identity, expired: false) }
        if isExpired(storedAt: header.storedAt, at: time) { return .invalid(identity, expired: true) }

        var keyAndMetadata = Data(count: header.keyCount + header.metadataCount)
        var body = Data(count: header.bodyCount + RecordFormat.trailerSize)
        guard Self.readAll(fd, into: &keyAndMetadata), Self.readAll(fd, into: &body) else {
            return .invalid(identity, expired: false)
        }
        var checksum = headerBytes.withUnsafeBytes { CRC32.update(0, $0) }
        checksum = keyAndMetadata.withUnsafeBytes { CRC32.update(checksum, $0) }
        let stored = body.withUnsafeBytes { bytes -> UInt32 in
            checksum = CRC32.update(checksum, UnsafeRawBufferPointer(rebasing: bytes.prefix(header.bodyCount)))
            return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: header.bodyCount, as: UInt32.self))
        }
        guard stored == checksum, keyAndMetadata.prefix(header.keyCount).elementsEqual(key.utf8) else {
            return .invalid(identity, expired: false)
        }
        body.count = header.bodyCount
        if time - Self.modificationTime(info) >= Self.touchInterval {
            var times = [Self.fileTime(time), Self.fileTime(time)]
            _ = futimens(fd, &times)
        }
        let metadata = keyAndMetadata.subdata(in: header.keyCount..<keyAndMetadata.count)
        return .hit(Record(data: body, metadata: metadata, storedAt: Date(timeIntervalSince1970: header.storedAt)), size: size)
    }

    private func readHeader(name: String) -> RecordFormat.Header? {
        let fd = open(filePath(name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = Data(count: RecordFormat.headerSize)
        guard Self.readAll(fd, into: &bytes) else { return nil }
        return RecordFormat.Header(bytes)
    }

    /// Deletes the files of removed or evicted records, then lets readers look at
    /// those names again.
    private func deleteFiles(_ names: [String]) {
        guard !names.isEmpty else { return }
        for name in names { unlink(filePath(name)) }
        state.withLock { s in
            for name in names { Self.release(name, in: &s) }
        }
    }

    private static func readAll(_ fd: Int32, into data: inout Data) -> Bool {
        data.withUnsafeMutableBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = read(fd, buffer.baseAddress! + done, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }

    private static func writeAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                let count = write(fd, buffer.baseAddress! + done, buffer.count - done)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                done += count
            }
            return true
        }
    }

    // MARK: - Index

    private func isExpired(storedAt: Double, at time: Double) -> Bool {
        maximumAge.map { time - storedAt > $0 } ?? false
    }

    /// Evicts least recently used records until the total fits; returns their names,
    /// tombstoned, for `deleteFiles`.
    private func evictOverLimit(_ s: inout State, keeping kept: String?) -> [String] {
        var victims: [String] = []
        while s.totalSize > sizeLimit, let oldest = s.oldest {
            if oldest.name == kept {
                // Only the record being stored is left, with an older version of it on
                // disk: the older file goes first.
                if oldest.diskSize > 0 {
                    s.totalSize -= oldest.diskSize
                    oldest.diskSize = 0
                    s.tombstones[oldest.name, default: 0] += 1
                    victims.append(oldest.name)
                }
                break
            }
            Self.drop(oldest.name, from: &s)
            s.evictions += 1
            victims.append(oldest.name)
        }
        return victims
    }

    /// Forgets `name` (index and pending write) and tombstones it until the caller has
    /// deleted its file; one being written right now is deleted after its rename.
    private static func drop(_ name: String, from s: inout State) {
        if let entry = s.entries[name] { remove(entry, from: &s) }
        if let pending = s.pending.removeValue(forKey: name) { s.pendingBytes -= pending.size }
        if s.writing?.name == name, s.writing?.orphaned == false {
            s.writing?.orphaned = true
            s.tombstones[name, default: 0] += 1
        }
        s.tombstones[name, default: 0] += 1
    }

    private static func release(_ name: String, in s: inout State) {
        guard let count = s.tombstones[name] else { return }
        s.tombstones[name] = count > 1 ? count - 1 : nil
    }

    private static func nextSequence(_ s: inout State) -> UInt64 {
        s.sequence += 1
        return s.sequence
    }

    private static func touch(_ entry: Entry, at time: Double, in s: inout State) {
        entry.lastUse = max(entry.lastUse, time)
        entry.sequence = nextSequence(&s)
        guard s.newest !== entry else { return }
        detach(entry, in: &s)
        insertNewest(entry, in: &s)
    }

    private static func insertNewest(_ entry: Entry, in s: inout State) {
        entry.older = s.newest
        entry.newer = nil
        s.newest?.newer = entry
        s.newest = entry
        if s.oldest == nil { s.oldest = entry }
    }

    private static func detach(_ entry: Entry, in s: inout State) {
        entry.newer?.older = entry.older
        entry.older?.newer = entry.newer
        if s.newest === entry { s.newest = entry.older }
        if s.oldest === entry { s.oldest = entry.newer }
        entry.newer = nil
        entry.older = nil
    }

    private static func remove(_ entry: Entry, from s: inout State) {
        detach(entry, in: &s)
        s.entries[entry.name] = nil
        s.totalSize -= entry.diskSize + entry.pendingSize
    }

    /// Empties the index, unlinking entries one by one: releasing a long list from its
    /// head would free it recursively, one stack frame per entry.
    private static func clearIndex(_ s: inout State) {
        var entry = s.oldest
        while let current = entry {
            entry = current.newer
            current.newer = nil
        }
        s.entries = [:]
        s.newest = nil
        s.oldest = nil
        s.totalSize = 0
    }

    /// Relinks every entry by last use, as a scan learns recency from the files.
    private static func reorder(_ s: inout State) {
        let sorted = s.entries.values.sorted { ($0.lastUse, $0.sequence) < ($1.lastUse, $1.sequence) }
        s.newest = nil
        s.oldest = nil
        for entry in sorted {
            entry.newer = nil
            entry.older = nil
        }
        for entry in sorted { insertNewest(entry, in: &s) }
    }

    // MARK: - Platform

    static func fileName(forKey key: String) -> String { SHA256.hex(key) }

    private static func isRegularFile(_ info: stat) -> Bool {
        (info.st_mode & S_IFMT) == S_IFREG
    }

    private static func modificationTime(_ info: stat) -> Double {
        #if canImport(Darwin)
        Double(info.st_mtimespec.tv_sec) + Double(info.st_mtimespec.tv_nsec) / 1e9
        #else
        Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        #endif
    }

    private static func fileTime(_ seconds: Double) -> timespec {
        let whole = seconds.rounded(.down)
        var value = timespec()
        value.tv_sec = .init(whole)
        value.tv_nsec = .init(((seconds - whole) * 1e9).rounded(.down))
        return value
    }

    private static func identity(ofPath path: String) -> FileIdentity? {
        var info = stat()
        return stat(path, &info) == 0 ? FileIdentity(info) : nil
    }

    private static func stamp(ofPath path: String) -> DirectoryStamp? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        return DirectoryStamp(identity: FileIdentity(info), seconds: Int64(time.tv_sec), nanoseconds: Int64(time.tv_nsec))
    }
}

// MARK: - State

/// One record in the in-memory index, a node of the recency list. Only ever touched
/// with the cache's lock held, which the compiler cannot see.
private final class Entry: @unchecked Sendable {
    let name: String
    /// The size of the file believed on disk; 0 when there is none.
    var diskSize: Int
    /// The size of a record waiting to be written; 0 when there is none. Until the
    /// write lands, old file and new record both count.
    var pendingSize = 0
    var lastUse: Double
    /// Orders entries used at the same clock reading; 0 for entries known only from disk.
    var sequence: UInt64
    var newer: Entry?
    weak var older: Entry?

    init(name: String, diskSize: Int, lastUse: Double, sequence: UInt64) {
        self.name = name
        self.diskSize = diskSize
        self.lastUse = lastUse
        self.sequence = sequence
    }
}

private struct Pending {
    let key: String
    let data: Data
    let metadata: Data
    let storedAt: Double
    let size: Int
    let generation: UInt64
}

private struct Writing {
    let name: String
    /// Removed or evicted while being written.
    var orphaned: Bool
}

private struct State {
    var entries: [String: Entry] = [:]
    var newest: Entry?
    var oldest: Entry?
    var totalSize = 0
    var pending: [String: Pending] = [:]
    var pendingBytes = 0
    var generation: UInt64 = 0
    var sequence: UInt64 = 0
    var writing: Writing?
    /// Names whose files are being deleted; reads of them miss meanwhile.
    var tombstones: [String: Int] = [:]
    /// Queued `removeAll` sweeps; while any is queued, only pending records exist.
    var clearsQueued = 0
    var hits = 0
    var misses = 0
    var evictions = 0
    var discarded = 0
    var droppedWrites = 0
}

private struct Upkeep {
    /// The directory as this process last left it.
    var stamp: DirectoryStamp?
    var foreignChange = false
    var changedSinceScan = false
    var lastScan: ContinuousClock.Instant?
    var temporaryCounter = 0
}

private struct FileIdentity: Equatable {
    let device: UInt64
    let inode: UInt64
    init(_ info: stat) {
        device = UInt64(truncatingIfNeeded: info.st_dev)
        inode = UInt64(truncatingIfNeeded: info.st_ino)
    }
}

private struct DirectoryStamp: Equatable {
    let identity: FileIdentity
    let seconds: Int64
    let nanoseconds: Int64
}

// MARK: - Format

/// The record file format, version 1. All integers little-endian.
///
///     offset  size  field
///          0     8  magic: 89 'I' 'M' 'G' 'O' 0D 0A 1A
///          8     4  format version (1)
///         12     4  key length K (UTF-8 bytes)
///         16     4  metadata length M
///         20     4  reserved, zero
///         24     8  body length B
///         32     8  time stored: IEEE 754 double, seconds since 1970
///         40     K  key
///       40+K     M  metadata
///     40+K+M     B  body
///   40+K+M+B     4  CRC-32 (ISO-HDLC, as zlib and PNG) of every byte before it
enum RecordFormat {
    static let magic: [UInt8] = [0x89, 0x49, 0x4D, 0x47, 0x4F, 0x0D, 0x0A, 0x1A]
    static let version: UInt32 = 1
    static let headerSize = 40
    static let trailerSize = 4
    /// Temporary files: `.tmp.<pid>.<serial>.<name>`; hidden, and never a record name.
    static let temporaryPrefix = ".tmp."

    struct Header {
        let keyCount: Int
        let metadataCount: Int
        let bodyCount: Int
        let storedAt: Double
        var fileSize: Int { RecordFormat.fileSize(key: keyCount, metadata: metadataCount, body: bodyCount) }

        init?(_ bytes: Data) {
            guard bytes.count >= RecordFormat.headerSize, bytes.prefix(8).elementsEqual(RecordFormat.magic) else { return nil }
            func field(_ offset: Int, _ size: Int) -> UInt64 {
                var value: UInt64 = 0
                for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[bytes.startIndex + offset + index]) }
                return value
            }
            guard field(8, 4) == RecordFormat.version, field(20, 4) == 0 else { return nil }
            let body = field(24, 8)
            // Bounds that keep the size arithmetic from overflowing on garbage.
            guard body < 1 << 48 else { return nil }
            keyCount = Int(field(12, 4))
            metadataCount = Int(field(16, 4))
            bodyCount = Int(body)
            storedAt = Double(bitPattern: field(32, 8))
            guard storedAt.isFinite else { return nil }
        }
    }

    static func fileSize(key: Int, metadata: Int, body: Int) -> Int {
        headerSize + key + metadata + body + trailerSize
    }

    /// A record name: 64 lowercase hex digits.
    static func isRecordName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Header, key and metadata: everything before the body.
    static func prefix(key: String, metadata: Data, bodyCount: Int, storedAt: Double) -> Data {
        let keyBytes = Array(key.utf8)
        var data = Data(capacity: headerSize + keyBytes.count + metadata.count)
        data += magic
        data += littleEndian(UInt64(version), count: 4)
        data += littleEndian(UInt64(keyBytes.count), count: 4)
        data += littleEndian(UInt64(metadata.count), count: 4)
        data += littleEndian(0, count: 4)
        data += littleEndian(UInt64(bodyCount), count: 8)
        data += littleEndian(storedAt.bitPattern, count: 8)
        data += keyBytes
        data += metadata
        return data
    }

    static func littleEndian(_ value: UInt64, count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) })
    }
}

/// CRC-32 as zlib, gzip and PNG compute it (reflected polynomial 0xEDB88320), eight
/// bytes a step with eight tables, so checking a disk hit costs little next to
/// reading it.
enum CRC32 {
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            tables[byte] = crc
        }
        for table in 1..<8 {
            for byte in 0..<256 {
                let previous = tables[(table - 1) * 256 + byte]
                tables[table * 256 + byte] = (previous >> 8) ^ tables[Int(previous & 0xff)]
            }
        }
        return tables
    }()

    /// Continues `crc` (0 to start) over `bytes`.
    static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        guard var pointer = bytes.baseAddress else { return crc }
        var remaining = bytes.count
        var crc = ~crc
        tables.withUnsafeBufferPointer { t in
            while remaining >= 8 {
                let low = UInt32(littleEndian: pointer.loadUnaligned(as: UInt32.self)) ^ crc
                let high = UInt32(littleEndian: pointer.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
                crc = t[7 * 256 + Int(low & 0xff)] ^ t[6 * 256 + Int((low >> 8) & 0xff)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xff)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xff)] ^ t[2 * 256 + Int((high >> 8) & 0xff)]
                    ^ t[256 + Int((high >> 16) & 0xff)] ^ t[Int(high >> 24)]
                pointer += 8
                remaining -= 8
            }
            while remaining > 0 {
                crc = t[Int((crc ^ UInt32(pointer.load(as: UInt8.self))) & 0xff)] ^ (crc >> 8)
                pointer += 1
                remaining -= 1
            }
        }
        return ~crc
    }
}
