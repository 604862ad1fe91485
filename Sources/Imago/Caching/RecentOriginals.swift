import Foundation

/// The original bytes of images recently fetched over the network, kept in memory
/// within a byte budget, so that a repeat of a URL costs a decode, not a transfer.
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
/// dropped.
public final class RecentOriginalFiles: Sendable {
    /// Makes a store of at most `byteLimit` bytes of files, `countLimit` files and
    /// `entryByteLimit` bytes for one file (by default a quarter of `byteLimit`, so
    /// one large file never flushes the whole store), each reused for at most
    /// `timeToLive` seconds after it was fetched (nil: until it is evicted).
    ///
    /// The default budget, 32 MiB, holds a dozen or more full-size photos' files or
    /// thousands of thumbnails': enough for the repeats of a page or a list, small
    /// beside the memory tier.
    public convenience init(byteLimit: Int = 32 << 20, countLimit: Int = 1_000, entryByteLimit: Int? = nil, timeToLive: Double? = nil) {
        self.init(byteLimit: byteLimit, countLimit: countLimit, entryByteLimit: entryByteLimit, timeToLive: timeToLive,
                  clock: ImageCache.monotonicClock)
    }

    /// A store whose time-to-live runs on `clock`, for tests that step time.
    package init(
        byteLimit: Int = 32 << 20, countLimit: Int = 1_000, entryByteLimit: Int? = nil, timeToLive: Double? = nil,
        clock: @escaping @Sendable () -> Double
    ) {
        self.entryByteLimit = max(0, min(entryByteLimit ?? byteLimit / 4, byteLimit))
        memory = RecentMemory(costLimit: byteLimit, countLimit: countLimit, timeToLive: timeToLive, clock: clock)
    }

    private let memory: RecentMemory<Entry>

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
    /// How many files are kept.
    package var count: Int { memory.count }
    /// Bytes of files kept.
    package var totalBytes: Int { memory.totalCost }

    /// The bytes kept for `imageKey` (`ImageRequest.imageKey`), if any.
    func data(forKey imageKey: String) -> Data? {
        memory.value(forKey: imageKey)?.data
    }

    /// Forgets the bytes of `imageKey`.
    package func removeData(forKey imageKey: String) {
        memory.removeValue(forKey: imageKey)
    }

    /// Forgets every file.
    public func removeAll() {
        memory.removeAll()
    }

    func entry(forKey imageKey: String) -> Entry? {
        memory.value(forKey: imageKey)
    }

    /// Keeps `data` unless HTTP forbids it (see the type's documentation).
    func store(_ data: Data, metadata: HTTPCacheMetadata?, forKey imageKey: String) {
        guard let metadata, metadata.isStorable else {
            memory.removeValue(forKey: imageKey)
            return
        }
        memory.set(Entry(data: data, metadata: metadata), cost: data.count, entryCostLimit: entryByteLimit, forKey: imageKey)
    }
}
