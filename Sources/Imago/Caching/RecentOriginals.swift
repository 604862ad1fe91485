import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The original bytes of images recently fetched over the network, kept in memory
/// within a byte budget, so that a repeat of a URL costs a decode, not a transfer.
/// A file larger than a memory entry may be (`entryByteLimit`) is spilled to a
/// temporary file instead, within a budget of its own (`spillByteLimit`): mapped
/// back when asked for, so a 13 MB photo listed a thousand times is transferred once
/// and costs the process's memory nothing while it waits.
///
/// The memory tier keeps decoded images, which are about ten times the size of their
/// files: a large photo's pixels are over its per-entry cap, and a list naming the
/// same few photos again and again would fetch them again and again once their
/// transfers are no longer in flight. Their files are far smaller and fit here. The
/// loader consults this store before the disk tier and the network.
///
/// What is kept follows HTTP simply: only a whole 2xx response fetched over the
/// network; never one the server forbade storing (`Cache-Control: no-store`, or
/// `Vary: *`), nor a body cut short. Like a browser's memory of the images of a
/// page (and like the memory tier), what is kept is reused without asking the server
/// about its freshness, for at most `timeToLive` when one is set; the disk tier is
/// where freshness and revalidation live. Bytes that turn out not to decode are
/// dropped. A repeat answered here says so (`ImageResponse.Source.recent`).
///
/// A spilled file is unlinked as soon as it is written and mapped: nothing is left
/// in the temporary directory, whatever ends the process, and the kernel frees it
/// when its entry goes.
public final class RecentOriginalFiles: Sendable {
    /// Makes a store of at most `byteLimit` bytes of files, `countLimit` files and
    /// `entryByteLimit` bytes for one file (by default a quarter of `byteLimit`, so
    /// one large file never flushes the whole store), each reused for at most
    /// `timeToLive` seconds after it was fetched (nil: until it is evicted).
    ///
    /// The default budget, 32 MiB, holds a dozen or more full-size photos' files or
    /// thousands of thumbnails': enough for the repeats of a page or a list, small
    /// beside the memory tier.
    ///
    /// Files larger than `entryByteLimit` are spilled to temporary files, at most
    /// `spillByteLimit` bytes of them (256 MiB; 0 for none) and a sixteenth of
    /// `countLimit` files.
    public convenience init(
        byteLimit: Int = 32 << 20, countLimit: Int = 1_000, entryByteLimit: Int? = nil, spillByteLimit: Int = 256 << 20,
        timeToLive: Double? = nil
    ) {
        self.init(byteLimit: byteLimit, countLimit: countLimit, entryByteLimit: entryByteLimit, spillByteLimit: spillByteLimit,
                  timeToLive: timeToLive, clock: ImageCache.monotonicClock)
    }

    /// A store whose time-to-live runs on `clock`, for tests that step time.
    package init(
        byteLimit: Int = 32 << 20, countLimit: Int = 1_000, entryByteLimit: Int? = nil, spillByteLimit: Int = 256 << 20,
        timeToLive: Double? = nil, clock: @escaping @Sendable () -> Double
    ) {
        self.entryByteLimit = max(0, min(entryByteLimit ?? byteLimit / 4, byteLimit))
        memory = RecentMemory(costLimit: byteLimit, countLimit: countLimit, timeToLive: timeToLive, clock: clock)
        spilled = RecentMemory(costLimit: max(0, spillByteLimit), countLimit: max(1, countLimit / 16), timeToLive: timeToLive, clock: clock)
    }

    private let memory: RecentMemory<Entry>
    /// The files over `entryByteLimit`, each a mapping of an unlinked temporary file.
    private let spilled: RecentMemory<Entry>

    struct Entry: Sendable {
        let data: Data
        let metadata: HTTPCacheMetadata?
    }

    /// The most bytes of files kept.
    package var byteLimit: Int { memory.costLimit }
    /// The most files kept.
    package var countLimit: Int { memory.countLimit }
    /// The largest file kept, in bytes.
    package let entryByteLimit: Int
    /// Seconds a file is reused after it was fetched; nil for as long as it stays.
    package var timeToLive: Double? { memory.timeToLive }
    /// How many files are kept in memory.
    package var count: Int { memory.count }
    /// Bytes of files kept in memory.
    package var totalBytes: Int { memory.totalCost }
    /// How many files are spilled to temporary files, and their bytes.
    package var spilledCount: Int { spilled.count }
    package var spilledBytes: Int { spilled.totalCost }

    /// The bytes kept for `imageKey` (`ImageRequest.imageKey`), if any.
    func data(forKey imageKey: String) -> Data? {
        entry(forKey: imageKey)?.data
    }

    /// Forgets the bytes of `imageKey`.
    package func removeData(forKey imageKey: String) {
        memory.removeValue(forKey: imageKey)
        spilled.removeValue(forKey: imageKey)
    }

    /// Forgets every file.
    public func removeAll() {
        memory.removeAll()
        spilled.removeAll()
    }

    func entry(forKey imageKey: String) -> Entry? {
        memory.value(forKey: imageKey) ?? spilled.value(forKey: imageKey)
    }

    /// Keeps `data` unless HTTP forbids it (see the type's documentation): in memory,
    /// or spilled when it is larger than a memory entry may be.
    func store(_ data: Data, metadata: HTTPCacheMetadata?, forKey imageKey: String) {
        guard let metadata, metadata.isStorable else {
            removeData(forKey: imageKey)
            return
        }
        guard data.count > entryByteLimit else {
            memory.set(Entry(data: data, metadata: metadata), cost: data.count, entryCostLimit: entryByteLimit, forKey: imageKey)
            return
        }
        memory.removeValue(forKey: imageKey)
        guard data.count <= spilled.costLimit, let mapped = Self.spill(data) else {
            spilled.removeValue(forKey: imageKey)
            return
        }
        spilled.set(Entry(data: mapped, metadata: metadata), cost: data.count, entryCostLimit: spilled.costLimit, forKey: imageKey)
    }

    /// `data` written to a temporary file, mapped back and unlinked: the same bytes,
    /// held by the page cache rather than the process's heap; nil when the file could
    /// not be written (a full disk, say), and the bytes are not kept then.
    private static func spill(_ data: Data) -> Data? {
        let template = FileManager.default.temporaryDirectory.appendingPathComponent("imago-original-XXXXXX").path
        var path = Array(template.utf8CString)
        let fd = mkstemp(&path)
        guard fd >= 0 else { return nil }
        unlink(path)
        defer { close(fd) }
        guard FileDescriptors.writeAll(fd, data),
              let mapping = mmap(nil, data.count, PROT_READ, MAP_SHARED, fd, 0), mapping != MAP_FAILED
        else { return nil }
        let count = data.count
        return Data(bytesNoCopy: mapping, count: count, deallocator: .custom { pointer, _ in munmap(pointer, count) })
    }
}
