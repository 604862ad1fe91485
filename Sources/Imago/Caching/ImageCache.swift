import Foundation

/// A memory cache of decoded images, as the loader uses it: looked up before any
/// load, filled after each decode.
///
/// Conform to plug in another cache; `ImageCache` is the built-in one.
public protocol ImageCaching: AnyObject, Sendable {
    /// The image stored under `key`, if any; must be quick and never wait on a load.
    func image(forKey key: ImageCacheKey) -> DecodedImage?
    /// Stores `image` under `key`, replacing what was there.
    func setImage(_ image: DecodedImage, forKey key: ImageCacheKey)
    /// Removes the image under `key`.
    func removeImage(forKey key: ImageCacheKey)
    /// Removes every image.
    func removeAll()
}

extension ImageResponse {
    /// The response for an image that was at hand and cost nothing to load: one the
    /// memory cache held, or one from the platform's named-image cache (`.local`).
    package init(image: DecodedImage, url: URL, source: ImageResponse.Source) {
        self.init(image: image, url: url, source: source, metrics: ImageResponse.Metrics())
    }
}

/// The memory tier: least-recently-used eviction under a cost limit (bytes of decoded
/// pixels) and a count limit, O(1) look-up and insertion under one short lock.
///
/// The images are kept in an `LRUStore` (as the memories of recent loads are), whose
/// recency is an `LRUList`: entries live in one array chained by index, not by
/// reference: moving an entry to the front on a hit is a handful of
/// integer stores, with no reference counting and no allocation while the lock is
/// held. Images that leave the cache are released after the lock is dropped, so
/// freeing megabytes of pixels never holds up another thread's hit.
///
/// Reads move the entry to the front at once (plain LRU). The alternative, where a
/// read only marks the entry and eviction gives marked entries a second chance, was
/// measured on this layout (release build, 1,000 keys of URL length, random hits):
/// 80 against 77 ns per hit on one thread, 78 against 77 with eight, within the noise,
/// because hashing the key and the cache misses dominate. It is not worth an eviction
/// order that is harder to reason about (and Nuke's own cache is plain LRU today).
///
/// By default the cache listens to ``MemoryPressureMonitor/shared``: on a warning it
/// drops expired entries and halves itself, on a critical event it empties itself.
/// Halving rather than emptying on a warning keeps the most recent half (the images on
/// screen, the hot thumbnails) for a pressure blip, while repeated warnings (PSI
/// reports at most once per two-second window while pressure lasts) still drain it
/// geometrically; a critical event means the kernel or the OS is about to kill
/// someone, and decoded pixels are the cheapest memory there is to give back.
///
/// An image over the per-entry cap is not cached, but the latest one stays in a slot
/// of its own for `oversizedLinger` (2 s) after its last use, at most
/// `oversizedCostLimit` bytes: a list or a page naming one large photo many times
/// decodes it once, and it is gone once the repeats are. Pressure and trims empty it.
///
/// ```swift
/// let key = ImageRequest(url: url, targetSize: .thumbnail(256)).cacheKey
/// ImageCache.shared.setImage(image, forKey: key)
/// if let hit = ImageCache.shared.image(forKey: key) { print(hit) }  // "jpeg 256×171, 1 frame"
/// ImageCache.shared.trim(toCost: 64 << 20)                           // down to 64 MiB of pixels
///
/// // A small cache of one's own, for a loader of its own.
/// let loader = ImageLoader(cache: ImageCache(costLimit: 32 << 20))
/// ```
public final class ImageCache: ImageCaching {
    /// The cache the loader uses unless told otherwise.
    public static let shared = ImageCache()

    /// A fifth of the memory this process may use, at most 512 MiB.
    ///
    /// "May use" is the smaller of physical memory and, on Linux, the cgroup memory
    /// limit (v2 `memory.max` up the hierarchy, v1 `hierarchical_memory_limit`):
    /// `ProcessInfo.physicalMemory` reports the host's memory inside a container, and
    /// a cache sized from the host would get a small container killed.
    ///
    /// A fifth leaves most memory to the app itself and to the decoding in flight
    /// (which briefly needs the compressed bytes and the pixels at once); it is also
    /// Nuke's choice, so apps moving over see the same footprint. The 512 MiB cap is
    /// where more memory stops buying hits: decoded pixels take about ten times their
    /// encoded size, so past a few screens' worth (ten 12-megapixel photos, or some
    /// 1,400 thumbnails of 300×300) the disk tier holds the same images far more
    /// cheaply, and on a large server an uncapped fifth would be gigabytes taken from
    /// the work the server exists to do.
    public static var defaultCostLimit: Int {
        min(Int(clamping: SystemMemory.usable / 5), 512 << 20)
    }

    /// A clock in seconds that only moves forward and keeps counting while the
    /// machine sleeps, so a time-to-live is not stretched by a suspended laptop nor
    /// broken by the wall clock being set back.
    package static let monotonicClock: @Sendable () -> Double = {
        let elapsed = ContinuousClock.now - clockOrigin
        let (seconds, attoseconds) = elapsed.components
        return Double(seconds) + Double(attoseconds) * 1e-18
    }
    private static let clockOrigin = ContinuousClock.now

    /// What the cache keeps, changed together under the lock by `setLimits`.
    private struct Limits {
        var cost: Int
        var count: Int
        var entryCost: Int
        var oversizedCost: Int
        /// The share of `cost` one image may take, as the cache was made: kept when
        /// the limits change, so a cache made with the default tenth keeps a tenth.
        var entryShare: Double

        init(cost: Int, count: Int, entryCost: Int?) {
            self.cost = max(0, cost)
            self.count = max(0, count)
            self.entryCost = min(max(0, entryCost ?? cost / 10), self.cost)
            let total = self.cost
            entryShare = entryCost.map { total > 0 ? Double(min(max(0, $0), total)) / Double(total) : 0.1 } ?? 0.1
            oversizedCost = Self.oversizedCost(cost: self.cost, count: self.count)
        }

        /// The largest image kept in the slot for one over the per-entry cap.
        static func oversizedCost(cost: Int, count: Int) -> Int {
            cost > 0 && count > 0 ? min(max(2 * cost, 64 << 20), 256 << 20) : 0
        }

        mutating func set(cost: Int, count: Int) {
            self.cost = max(0, cost)
            self.count = max(0, count)
            entryCost = min(Int(Double(self.cost) * entryShare), self.cost)
            oversizedCost = Self.oversizedCost(cost: self.cost, count: self.count)
        }
    }

    private struct State {
        var store = LRUStore<ImageCacheKey, DecodedImage>()
        var limits: Limits
        /// The latest image over the per-entry cap, and until when it is kept (on the
        /// cache's clock): see `oversizedLinger`.
        var oversized: (key: ImageCacheKey, image: DecodedImage, until: Double)?

        /// The image over the per-entry cap if it is `key`'s and still kept (its stay
        /// renewed), or nil and the expired image to release.
        mutating func takeOversized(_ key: ImageCacheKey, now clock: () -> Double, linger: Double) -> (DecodedImage?, DecodedImage?) {
            guard let oversized, oversized.key == key else { return (nil, nil) }
            let now = clock()
            guard oversized.until > now else {
                self.oversized = nil
                return (nil, oversized.image)
            }
            self.oversized?.until = now + linger
            return (oversized.image, nil)
        }
    }

    private let state: Locked<State>
    private let clock: @Sendable () -> Double
    /// Held for the cache's lifetime; dropping it (with the cache) unsubscribes.
    private let pressureSubscription = Locked<MemoryPressureMonitor.Subscription?>(nil)

    /// The most bytes of pixels kept; `setLimits(cost:count:)` changes it.
    public var costLimit: Int { state.withLock { $0.limits.cost } }
    /// The most images kept; `setLimits(cost:count:)` changes it.
    public var countLimit: Int { state.withLock { $0.limits.count } }
    /// The most bytes one image may take and still be stored; larger images are not
    /// cached at all (and storing one removes what its key held before).
    /// `setLimits(cost:count:)` keeps its share of `costLimit`.
    public var entryCostLimit: Int { state.withLock { $0.limits.entryCost } }
    /// How long, in seconds, an image is served after it was stored; nil for as long
    /// as it stays in the cache.
    package let timeToLive: Double?
    /// The largest image kept beside the cache in its slot for one image over the
    /// per-entry cap (none in a cache that keeps nothing).
    package var oversizedCostLimit: Int { state.withLock { $0.limits.oversizedCost } }
    /// Seconds the image over the per-entry cap stays after its last use. Long enough
    /// for the repeats of a list or a page naming one large image to be answered
    /// without decoding it again each time; short enough that it is gone once they
    /// are, since it is counted in no budget.
    package static let oversizedLinger = 2.0

    /// Makes a cache with the given limits.
    ///
    /// - Parameters:
    ///   - costLimit: The most bytes of decoded pixels kept.
    ///   - countLimit: The most images kept.
    ///   - entryCostLimit: The largest single image stored, in bytes; by default a
    ///     tenth of `costLimit`. Eviction knows only recency, so without a cap one
    ///     huge image, often shown once, would push out dozens of small ones that are
    ///     shown again and again; a tenth bounds what one insertion can flush to 10%
    ///     of the cache while still admitting a 12-megapixel photo (46 MiB) under the
    ///     512 MiB default.
    ///   - timeToLive: Seconds an image is served after being stored; nil for no
    ///     expiry. Expired images are misses, and are removed when next looked up,
    ///     evicted in turn, or swept with the other expired ones.
    ///   - memoryPressure: The monitor whose events purge this cache; nil to ignore
    ///     memory pressure.
    public convenience init(
        costLimit: Int = ImageCache.defaultCostLimit,
        countLimit: Int = 10_000,
        entryCostLimit: Int? = nil,
        timeToLive: Double? = nil,
        memoryPressure: MemoryPressureMonitor? = .shared
    ) {
        self.init(costLimit: costLimit, countLimit: countLimit, entryCostLimit: entryCostLimit,
                  timeToLive: timeToLive, memoryPressure: memoryPressure, clock: ImageCache.monotonicClock)
    }

    /// A cache whose time-to-live runs on `clock`: seconds on any scale that never
    /// goes back. Tests pass their own to step time without waiting.
    package init(
        costLimit: Int = ImageCache.defaultCostLimit,
        countLimit: Int = 10_000,
        entryCostLimit: Int? = nil,
        timeToLive: Double? = nil,
        memoryPressure: MemoryPressureMonitor? = .shared,
        clock: @escaping @Sendable () -> Double
    ) {
        state = Locked(State(limits: Limits(cost: costLimit, count: countLimit, entryCost: entryCostLimit)))
        self.timeToLive = timeToLive
        self.clock = clock
        if let memoryPressure {
            // The monitor outlives any cache (the shared one lives forever), so it
            // holds the cache weakly and the subscription ends with the cache.
            let subscription = memoryPressure.subscribe { [weak self] level in
                self?.respond(to: level)
            }
            pressureSubscription.withLock { $0 = subscription }
        }
    }

    /// How many images are stored, counting expired ones not yet removed.
    public var count: Int { state.withLock { $0.store.count } }
    /// Bytes of pixels stored, counting expired images not yet removed.
    public var totalCost: Int { state.withLock { $0.store.totalCost } }

    /// The image under `key`; an expired one is removed and reported as a miss.
    public func image(forKey key: ImageCacheKey) -> DecodedImage? {
        let (image, expired) = state.withLock { state -> (DecodedImage?, DecodedImage?) in
            let found = state.store.value(forKey: key, now: clock)
            if found.value == nil, found.expired == nil { return state.takeOversized(key, now: clock, linger: Self.oversizedLinger) }
            return found
        }
        _ = expired
        return image
    }

    /// Stores `image` under `key` with the cache's time-to-live.
    public func setImage(_ image: DecodedImage, forKey key: ImageCacheKey) {
        store(image, forKey: key, timeToLive: timeToLive)
    }

    /// Stores `image` under `key`, served for `timeToLive` seconds (nil: until
    /// evicted) whatever the cache's own time-to-live. For images whose freshness
    /// is known, such as an HTTP `max-age` shorter than the cache's default.
    public func setImage(_ image: DecodedImage, forKey key: ImageCacheKey, timeToLive: Double?) {
        store(image, forKey: key, timeToLive: timeToLive)
    }

    private func store(_ image: DecodedImage, forKey key: ImageCacheKey, timeToLive: Double?) {
        let cost = image.cost
        let expiry = timeToLive.map { clock() + $0 } ?? .infinity
        let evicted = state.withLock { state -> [DecodedImage] in
            var evicted: [DecodedImage] = []
            if let old = state.store.removeValue(forKey: key) { evicted.append(old) }
            let limits = state.limits
            if let oversized = state.oversized, oversized.key == key || cost > limits.entryCost {
                evicted.append(oversized.image)
                state.oversized = nil
            }
            // Too big to keep: storing it would flush much of the cache for one
            // image, and the old image under the key must go all the same, since
            // the caller has replaced it. It stays a moment in a slot of its own.
            guard cost <= limits.entryCost else {
                if cost <= limits.oversizedCost { state.oversized = (key, image, clock() + Self.oversizedLinger) }
                return evicted
            }
            state.store.insert(image, cost: cost, expiry: expiry, forKey: key)
            let costLimit = limits.cost, countLimit = limits.count
            state.store.evict(into: &evicted) { $0.totalCost > costLimit || $0.count > countLimit }
            return evicted
        }
        _ = evicted
    }

    /// Removes the image under `key`.
    public func removeImage(forKey key: ImageCacheKey) {
        let removed = state.withLock { state -> DecodedImage? in
            if let oversized = state.oversized, oversized.key == key {
                state.oversized = nil
                return oversized.image
            }
            return state.store.removeValue(forKey: key)
        }
        _ = removed
    }

    /// Removes every image.
    public func removeAll() {
        // The old state, and every image in it, is freed after the lock is dropped.
        let old = state.withLock { state -> State in
            var old = State(limits: state.limits)
            swap(&old, &state)
            return old
        }
        _ = old
    }

    /// Removes least recently used images until at most `cost` bytes remain: to make
    /// room ahead of a burst, or to shrink for a while without a new cache.
    public func trim(toCost cost: Int) {
        let evicted = state.withLock { state -> [DecodedImage] in
            var evicted = state.oversized.map { [$0.image] } ?? []
            state.oversized = nil
            state.store.evict(into: &evicted) { $0.totalCost > cost }
            return evicted
        }
        _ = evicted
    }

    /// Changes the limits while the cache is in use, removing the least recently used
    /// images over the new ones at once: for a cache sized from what a view shows
    /// (a grid's cells, say), which grows and shrinks with its window.
    ///
    /// One image keeps the share of the budget it had (a tenth by default), so a
    /// cache made small and grown later admits the images its new size is for. An
    /// image kept beside the cache for being over that share is dropped when the
    /// limits shrink.
    ///
    /// ```swift
    /// let thumbnails = ImageCache(costLimit: 8 << 20)
    /// thumbnails.setLimits(cost: 24 << 20, count: 600)    // the window grew
    /// ```
    public func setLimits(cost: Int, count: Int) {
        let evicted = state.withLock { state -> [DecodedImage] in
            let old = state.limits
            state.limits.set(cost: cost, count: count)
            var evicted: [DecodedImage] = []
            if let oversized = state.oversized,
                state.limits.cost < old.cost || oversized.image.cost > state.limits.oversizedCost
            {
                evicted.append(oversized.image)
                state.oversized = nil
            }
            let costLimit = state.limits.cost, countLimit = state.limits.count
            state.store.evict(into: &evicted) { $0.totalCost > costLimit || $0.count > countLimit }
            return evicted
        }
        _ = evicted
    }

    /// Removes least recently used images until at most `count` remain: Kingfisher's
    /// `countLimit` applied now, to shrink a cache a screen no longer needs.
    public func trim(toCount count: Int) {
        let evicted = state.withLock { state -> [DecodedImage] in
            var evicted = state.oversized.map { [$0.image] } ?? []
            state.oversized = nil
            state.store.evict(into: &evicted) { $0.count > count }
            return evicted
        }
        _ = evicted
    }

    /// Removes every expired image now rather than when it is next touched: O(n), for
    /// a periodic sweep or before a memory-hungry task.
    package func removeExpired() {
        let now = clock()
        let evicted = state.withLock { state -> [DecodedImage] in
            var evicted: [DecodedImage] = []
            state.store.removeExpired(at: now, into: &evicted)
            return evicted
        }
        _ = evicted
    }

    private func respond(to level: MemoryPressureMonitor.Level) {
        switch level {
        case .warning:
            let target = totalCost / 2
            removeExpired()
            trim(toCost: target)
        case .critical:
            removeAll()
        }
    }

    /// Whether the internal structure is consistent; a description of the first
    /// problem found otherwise. For tests.
    func checkInvariants() -> String? {
        state.withLock { $0.store.checkInvariants(costLimit: $0.limits.cost, countLimit: $0.limits.count) }
    }
}
