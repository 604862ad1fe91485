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
/// record is fetched again later. A full disk also lowers the size limit, so that
/// evicting makes room, until the disk has room again (its free space is measured
/// every few seconds meanwhile).
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
///
/// ```swift
/// // The loader's disk tier: originals and the thumbnails made from them.
/// let disk = DiskCache(directory: URL(fileURLWithPath: "/var/cache/thumbnails"), sizeLimit: 2 << 30)
/// let loader = ImageLoader(configuration: .init(diskCache: disk))
///
/// // Or records of one's own, by key.
/// disk.store(Data("hello".utf8), forKey: "greeting")
/// print(disk.record(forKey: "greeting")?.data.count ?? 0)   // 5
/// print(disk.statistics.count)                              // records, those of earlier runs included
/// await disk.flush()                                        // before a tool exits
/// ```
public final class DiskCache: Sendable {
    // The parts, one job to a file in this folder: RecordFormat, CRC32 and RecordFile
    // (what a record file holds, and reading one back), DiskIndex (recency, bytes
    // held, eviction), PendingWrites and DiskWriter (stores on their way to disk),
    // DiskDirectorySync (other processes' changes, scans), DiskCacheState (the books
    // those share, under one lock). This type ties them together.

    /// A stored record.
    @_spi(Internals) public struct Record: Sendable, Equatable {
        /// The body bytes.
        @_spi(Internals) public var data: Data
        /// The metadata stored with the body, as given to `store`.
        @_spi(Internals) public var metadata: Data
        /// When the record was stored (by the cache's clock).
        @_spi(Internals) public var storedAt: Date

        /// Makes a record.
        @_spi(Internals) public init(data: Data, metadata: Data, storedAt: Date) {
            self.data = data
            self.metadata = metadata
            self.storedAt = storedAt
        }
    }

    /// Counters since the cache was opened, and its present contents.
    @_spi(Internals) public struct Statistics: Sendable, Equatable {
        /// Records held, on disk or waiting to be written.
        @_spi(Internals) public var count = 0
        /// Bytes held: the files' sizes plus the records waiting in memory.
        @_spi(Internals) public var totalSize = 0
        /// Records waiting in memory to be written.
        @_spi(Internals) public var pendingWrites = 0
        /// Bytes of the records waiting to be written.
        @_spi(Internals) public var pendingSize = 0
        /// Writes given up: the directory or the disk refused them, the record alone
        /// was larger than the size limit, or too many bytes were already waiting.
        @_spi(Internals) public var droppedWrites = 0
        /// Reads that found a valid record.
        @_spi(Internals) public var hits = 0
        /// Reads that found nothing usable.
        @_spi(Internals) public var misses = 0
        /// Records deleted to keep the size limit or because they were too old.
        @_spi(Internals) public var evictions = 0
        /// Damaged, truncated or foreign files found and deleted.
        @_spi(Internals) public var discarded = 0
        /// The size limit in force: `DiskCache.sizeLimit`, or less after the disk ran
        /// out of space below it, until the disk has room again.
        @_spi(Internals) public var sizeLimit = 0
    }

    /// Where the records live.
    public let directory: URL
    /// The most bytes kept (file sizes plus records waiting to be written).
    public let sizeLimit: Int
    /// Records stored longer ago than this many seconds are misses; nil keeps them
    /// until evicted.
    public let maximumAge: Double?

    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()

    /// At most this many bytes wait in memory for the disk; beyond it, writes are
    /// dropped rather than letting a slow disk grow the process without bound.
    static let maximumPendingBytes = 64 << 20
    /// A read marks a file as used (its modification time) only when the last mark
    /// is older than this, so a hot record does not cost an inode write per hit.
    static let touchInterval: Double = 60
    /// Seen changes by other processes re-read the directory at most this often.
    static let rescanInterval: Duration = .seconds(2)
    /// While the disk's filling up holds the size limit below the configured one, its
    /// free space is measured again (statvfs, on the next store) at most this often, in
    /// seconds, and the limit raised to what it allows: a disk freed by its user is
    /// used again within seconds, and a disk that stays full costs one system call
    /// every few seconds.
    static let spaceCheckInterval: Double = 2
    /// A temporary file of a live process older than this is abandoned.
    static let abandonedTemporaryAge: Double = 3600

    /// The directory's path, for the system calls.
    let path: String
    let now: @Sendable () -> Date
    /// Runs writes, sweeps and rescans one at a time, in the order they were asked for.
    /// At the decodes' priority: a write finishes work a load has done, and one left
    /// behind holds its body in memory. On Linux a utility queue's thread runs at
    /// nice 2, a default one at 0, beside the decodes' -2; while those kept both cores
    /// busy the writes fell behind the loads, held up to `maximumPendingBytes` in
    /// memory and then were dropped (3,000 photos through `imago fetch` peaked at
    /// 112 MB, 57-111 MB at the default priority, against 43 MB without the disk
    /// tier, and a sixth of them were not kept).
    let queue = DispatchQueue(label: "imago.disk-cache", qos: .userInitiated)
    /// The index, the writes waiting and the counters.
    let state: Locked<DiskCacheState>
    /// Touched only by work on `queue`; a lock because the compiler cannot know that.
    let sync = Locked(DirectorySync())
    /// Numbers this process's temporary files.
    let temporarySerial = Locked(0)
    /// Left when the first scan of the directory has built the index. Opening does
    /// not wait for it (an app opens its cache on the main thread); `statistics`
    /// does, since until then the index knows only this process's own stores.
    let indexLoaded = DispatchGroup()

    /// The platform's cache directory, in a folder of Imago's own: on Linux
    /// `$XDG_CACHE_HOME/imago` (else `~/.cache/imago`); on Apple platforms
    /// `Library/Caches/<bundle identifier>/imago`, never a backed-up location.
    public static var defaultDirectory: URL {
        #if os(Linux) || os(Android) || os(FreeBSD) || os(OpenBSD)
        // The XDG base-directory specification ignores relative paths in the variable.
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
    ///   - directory: where the records are kept; nil for `defaultDirectory`.
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
        self.state = Locked(DiskCacheState(sizeLimit: self.sizeLimit, maximumAge: maximumAge))
        indexLoaded.enter()
        queue.async { [self] in
            DiskFiles.createDirectory(path)
            rescan(reading: .names)
            indexLoaded.leave()
        }
    }

    /// Why the directory cannot hold records ("'/x' is not a directory"), checked now
    /// by making it and a file in it; nil when it can. The cache works either way (an
    /// unusable directory only drops every write), so a program that was told where
    /// to cache can say once that nothing will be.
    package func directoryProblem() -> String? {
        DiskFiles.problem(with: path)
    }

    /// The file that holds (or would hold) the record for `key`.
    @_spi(Internals) public func fileURL(forKey key: String) -> URL {
        directory.appendingPathComponent(Self.fileName(forKey: key), isDirectory: false)
    }

    /// The state of the cache now, the records already in the directory included:
    /// the first read after opening waits for the directory's first scan (60 ms for
    /// 3,000 records in a debug build); later reads return at once. Opening itself
    /// does not wait, since apps open their cache on the main thread.
    ///
    /// ```swift
    /// let disk = DiskCache(directory: DiskCache.defaultDirectory)
    /// print(disk.statistics.count, disk.statistics.totalSize)   // what earlier runs stored
    /// ```
    @_spi(Internals) public var statistics: Statistics {
        indexLoaded.wait()
        return state.withLock { $0.statistics }
    }

    // MARK: - Reading

    /// The record stored under `key`, if there is a valid one younger than
    /// `maximumAge`. Reads the file on the calling thread; a damaged, foreign or
    /// expired file is deleted and reported as nil.
    @_spi(Internals) public func record(forKey key: String) -> Record? {
        guard case .record(let record)? = read(key, wholeBody: true) else { return nil }
        return record
    }

    /// The metadata stored under `key` and the length of the body stored with it,
    /// read without the body: for a caller whose metadata may say the body is not
    /// wanted (a stored thumbnail answers after its original's 304). The checksum
    /// covers the body and is checked only by `record(forKey:)`, which the caller
    /// uses for the body.
    func recordHead(forKey key: String) -> (metadata: Data, bodyCount: Int)? {
        guard case .head(let metadata, let bodyCount)? = read(key, wholeBody: false) else { return nil }
        return (metadata, bodyCount)
    }

    /// The record under `key` (or its head, without the body), from the writes
    /// still waiting or from its file; an expired, damaged or foreign file is deleted.
    private func read(_ key: String, wholeBody: Bool) -> RecordFile.Found? {
        let name = Self.fileName(forKey: key)
        let time = now().timeIntervalSince1970
        // A head alone counts no hit: it is counted when the body is read, if it is.
        switch state.withLock({ $0.lookUp(name, key: key, at: time, countingHit: wholeBody) }) {
        case .answer(let record):
            return record.map { wholeBody ? .record($0) : .head(metadata: $0.metadata, bodyCount: $0.data.count) }
        case .expired:
            deleteFiles([name])
            return nil
        case .readFile:
            break
        }
        let outcome = RecordFile.read(filePath(name), key: key, wholeBody: wholeBody, at: time, touchInterval: Self.touchInterval) {
            storedAt in maximumAge.map { time - storedAt > $0 } ?? false
        }
        switch outcome {
        case .missing:
            noteMissing()
            return nil
        case .invalid(let identity, let expired):
            dropInvalidFile(name, identity: identity, expired: expired)
            return nil
        case .found(let found, let size):
            if wholeBody { deleteFiles(state.withLock { $0.noteHit(name, size: size, at: time) }) }
            return found
        }
    }

    private func noteMissing() {
        state.withLock { $0.misses += 1 }
    }

    /// Deletes a damaged, foreign or expired file found under `name`, if it is still
    /// the one read (`identity`): another process may have replaced it since.
    private func dropInvalidFile(_ name: String, identity: FileIdentity, expired: Bool) {
        if FileIdentity(path: filePath(name)) == identity { unlink(filePath(name)) }
        state.withLock { $0.noteInvalidFile(name, expired: expired) }
    }

    // MARK: - Writing

    /// Stores `data` and `metadata` under `key`, replacing any record there. Returns at
    /// once: the record is readable immediately and written to disk in the background.
    @_spi(Internals) public func store(_ data: Data, metadata: Data = Data(), forKey key: String) {
        store(data, metadata: metadata, forKey: key, bodyChecksum: nil)
    }

    /// Stores as `store(_:metadata:forKey:)` does; `bodyChecksum`, the CRC-32 of
    /// `data` when known, spares the writer a pass over it.
    func store(_ data: Data, metadata: Data, forKey key: String, bodyChecksum: UInt32?) {
        let name = Self.fileName(forKey: key)
        let size = RecordFormat.fileSize(key: key.utf8.count, metadata: metadata.count, body: data.count)
        let time = now().timeIntervalSince1970
        if state.withLock({ $0.claimSpaceCheck(at: time) }), let available = DiskFiles.availableSpace(path) {
            state.withLock { $0.noteFreeSpace(available) }
        }
        let victims: [String] = state.withLock { s in
            guard let generation = s.stage(name, key: key, data: data, metadata: metadata, bodyChecksum: bodyChecksum, size: size, at: time) else {
                return [name]
            }
            // Queued under the lock so the queue's order is the order of the stores.
            queue.async { [self] in performWrite(name: name, generation: generation) }
            return s.evictOverLimit(keeping: name)
        }
        deleteFiles(victims)
    }

    /// Removes the record under `key`; a read afterwards misses.
    public func removeRecord(forKey key: String) {
        let name = Self.fileName(forKey: key)
        state.withLock { $0.drop(name) }
        deleteFiles([name])
    }

    /// Removes every record, at once for readers; the files are deleted in the
    /// background (`flush()` waits for it). Files that are not records are left alone.
    public func removeAll() {
        state.withLock { s in
            s.clear()
            queue.async { [self] in
                noteForeignChanges()
                sweep()
                state.withLock { $0.writes.clearsQueued -= 1 }
                markOwnChange()
            }
        }
    }

    /// Sweeps the disk tier now rather than at its next write: other processes'
    /// changes are read, the size limit and maximum age enforced, damaged and
    /// abandoned files deleted. Returns once the sweep has ended. SDWebImage's
    /// `deleteOldFiles`, Kingfisher's `cleanExpiredDiskCache`.
    public func sweep() async {
        prune()
        await flush()
    }

    /// Re-reads the directory in the background and enforces the size limit and the
    /// maximum age now, reading every file's header; also deletes files that are not
    /// valid records and temporary files abandoned by dead processes, and with
    /// `readingWholeRecords` records whose bytes fail their checksum. `flush()` waits
    /// for it.
    package func prune(readingWholeRecords: Bool = false) {
        queue.async { [self] in
            noteForeignChanges()
            rescan(reading: readingWholeRecords ? .wholeRecords : .headers)
        }
    }

    /// Waits until every write, removal and prune asked for so far has reached the
    /// disk, and the index agrees with the directory. Blocks: keep it off the main thread.
    @_spi(Internals) public func flush() {
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

    // MARK: - Names

    static func fileName(forKey key: String) -> String { SHA256.hex(key) }

    func filePath(_ name: String) -> String { path + "/" + name }
}
