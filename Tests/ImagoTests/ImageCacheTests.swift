import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A still image charged exactly `cost` bytes (at least 4).
private func image(cost: Int, tag: UInt8 = 0) -> DecodedImage {
    DecodedImage(bitmap: Bitmap(width: 1, height: 1, pixels: [UInt8](repeating: tag, count: cost)), format: .png)
}

/// A clock the test moves by hand.
private final class ManualClock: Sendable {
    private let seconds = Locked(0.0)
    var now: @Sendable () -> Double { { [self] in seconds.withLock { $0 } } }
    func advance(by delta: Double) { seconds.withLock { $0 += delta } }
}

/// A memory-pressure source the test fires.
private final class TestPressureSource: MemoryPressureSource {
    private struct State {
        var handler: (@Sendable (MemoryPressureMonitor.Level) -> Void)?
        var starts = 0
        var stops = 0
    }
    private let state = Locked(State())

    var starts: Int { state.withLock { $0.starts } }
    var stops: Int { state.withLock { $0.stops } }

    func start(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism? {
        state.withLock {
            $0.handler = handler
            $0.starts += 1
        }
        return MemoryPressureMechanism(name: "test")
    }

    func stop() {
        state.withLock {
            $0.handler = nil
            $0.stops += 1
        }
    }

    func fire(_ level: MemoryPressureMonitor.Level) {
        state.withLock { $0.handler }?(level)
    }
}

/// A cache that ignores the machine's memory pressure, so tests see only their own.
private func makeCache(
    costLimit: Int = 1 << 20, countLimit: Int = 1_000, entryCostLimit: Int? = nil,
    timeToLive: Double? = nil, memoryPressure: MemoryPressureMonitor? = nil,
    clock: @escaping @Sendable () -> Double = ImageCache.monotonicClock
) -> ImageCache {
    ImageCache(
        costLimit: costLimit, countLimit: countLimit, entryCostLimit: entryCostLimit,
        timeToLive: timeToLive, memoryPressure: memoryPressure, clock: clock)
}

private func keys(in cache: ImageCache, among candidates: [String]) -> [String] {
    candidates.filter { cache.image(forKey: $0) != nil }
}

@Suite("ImageCache")
struct ImageCacheTests {
    @Test func leastRecentlyUsedIsEvictedFirst() {
        let cache = makeCache(countLimit: 3)
        for key in ["a", "b", "c"] { cache.setImage(image(cost: 8), forKey: key) }
        #expect(cache.image(forKey: "a") != nil)  // a becomes the most recent; b the least
        cache.setImage(image(cost: 8), forKey: "d")
        #expect(cache.image(forKey: "b") == nil)
        #expect(keys(in: cache, among: ["a", "c", "d"]) == ["a", "c", "d"])
        // Replacing a key makes it the most recent too.
        cache.setImage(image(cost: 8, tag: 1), forKey: "a")  // order now c, d, a
        cache.setImage(image(cost: 8), forKey: "e")
        #expect(cache.image(forKey: "c") == nil)
        #expect(cache.image(forKey: "a")?.bitmap.pixels.first == 1)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func costLimitEvictsOldestUntilItFits() {
        let cache = makeCache(costLimit: 400, entryCostLimit: 400)
        for i in 0..<4 { cache.setImage(image(cost: 100), forKey: "\(i)") }
        #expect(cache.totalCost == 400)
        cache.setImage(image(cost: 250), forKey: "big")
        // 0, 1 and 2 go (the first two alone would leave 450); only 3 and big remain.
        #expect(keys(in: cache, among: ["0", "1", "2", "3", "big"]) == ["3", "big"])
        #expect(cache.totalCost == 350)
        // A replacement's new cost is what counts.
        cache.setImage(image(cost: 40), forKey: "big")
        #expect(cache.totalCost == 140)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func countLimitEvicts() {
        let cache = makeCache(countLimit: 5)
        for i in 0..<12 { cache.setImage(image(cost: 4), forKey: "\(i)") }
        #expect(cache.count == 5)
        #expect(keys(in: cache, among: (0..<12).map(String.init)) == ["7", "8", "9", "10", "11"])
    }

    @Test func perEntryCapDefaultsToATenthAndRejectsBiggerImages() {
        let clock = ManualClock()
        let cache = makeCache(costLimit: 1_000, clock: clock.now)
        #expect(cache.entryCostLimit == 100)
        cache.setImage(image(cost: 100), forKey: "fits")
        cache.setImage(image(cost: 104), forKey: "too big")
        #expect(cache.image(forKey: "fits") != nil)
        // Over the cap: not among the cached images, but kept a moment in a slot of
        // its own for its repeats, each renewing its stay.
        #expect(cache.count == 1 && cache.totalCost == 100)
        for _ in 0..<3 {
            clock.advance(by: ImageCache.oversizedLinger * 0.9)
            #expect(cache.image(forKey: "too big") != nil)
        }
        clock.advance(by: ImageCache.oversizedLinger)
        #expect(cache.image(forKey: "too big") == nil)
        // Replacing with an image too big to keep still removes the stale one; the
        // slot holds one image, the latest.
        cache.setImage(image(cost: 500), forKey: "fits")
        cache.setImage(image(cost: 600), forKey: "larger")
        #expect(cache.image(forKey: "fits") == nil && cache.image(forKey: "larger") != nil)
        #expect(cache.count == 0 && cache.totalCost == 0)
        cache.removeImage(forKey: "larger")
        #expect(cache.image(forKey: "larger") == nil)
        // A cache that keeps nothing keeps nothing over the cap either.
        let none = makeCache(costLimit: 1_000, countLimit: 0)
        none.setImage(image(cost: 500), forKey: "big")
        #expect(none.image(forKey: "big") == nil)
        // The cap never exceeds the cost limit.
        #expect(makeCache(costLimit: 100, entryCostLimit: 1_000).entryCostLimit == 100)
    }

    @Test func timeToLiveMakesExpiredImagesMissesAndRemovesThemLazily() {
        let clock = ManualClock()
        let cache = makeCache(timeToLive: 10, clock: clock.now)
        cache.setImage(image(cost: 8), forKey: "a")
        clock.advance(by: 5)
        cache.setImage(image(cost: 8), forKey: "b")
        clock.advance(by: 4.9)
        #expect(cache.image(forKey: "a") != nil)
        clock.advance(by: 0.1)  // a is 10 s old
        #expect(cache.count == 2)  // not removed until touched
        #expect(cache.image(forKey: "a") == nil)
        #expect(cache.count == 1 && cache.totalCost == 8)
        #expect(cache.image(forKey: "b") != nil)
        // Storing again restarts the clock for that key.
        cache.setImage(image(cost: 8), forKey: "a")
        clock.advance(by: 6)
        #expect(cache.image(forKey: "b") == nil)
        #expect(cache.image(forKey: "a") != nil)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func perImageTimeToLiveAndSweep() {
        let clock = ManualClock()
        let cache = makeCache(clock: clock.now)  // no default time-to-live
        cache.setImage(image(cost: 8), forKey: "forever")
        cache.setImage(image(cost: 8), forKey: "short", timeToLive: 1)
        cache.setImage(image(cost: 8), forKey: "long", timeToLive: 100)
        clock.advance(by: 2)
        #expect(cache.count == 3)
        cache.removeExpired()
        #expect(cache.count == 2)
        #expect(keys(in: cache, among: ["forever", "short", "long"]) == ["forever", "long"])
        clock.advance(by: 1_000)
        #expect(keys(in: cache, among: ["forever", "long"]) == ["forever"])
    }

    @Test func trimRemovesLeastRecentFirst() {
        let cache = makeCache()
        for i in 0..<10 { cache.setImage(image(cost: 10 * (i + 1)), forKey: "\(i)") }
        _ = cache.image(forKey: "0")  // most recent now
        cache.trim(toCost: 200)  // 0 (10) + 9 (100) + 8 (90) = 200
        #expect(keys(in: cache, among: (0..<10).map(String.init)) == ["0", "8", "9"])
        cache.trim(toCount: 1)
        #expect(keys(in: cache, among: ["0", "8", "9"]) == ["9"])  // the look-ups above made 9 the newest
        cache.trim(toCost: 0)
        #expect(cache.count == 0 && cache.totalCost == 0)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func setLimitsTrimsToTheNewLimitsAndKeepsTheEntryShare() {
        let cache = makeCache(costLimit: 1_000, countLimit: 100)
        for i in 0..<10 { cache.setImage(image(cost: 100), forKey: "\(i)") }
        _ = cache.image(forKey: "0")  // most recent now
        // Shrinking evicts the least recent at once, by cost and by count.
        cache.setLimits(cost: 400, count: 100)
        #expect(cache.costLimit == 400 && cache.totalCost == 400)
        #expect(keys(in: cache, among: (0..<10).map(String.init)) == ["0", "7", "8", "9"])
        cache.setLimits(cost: 400, count: 2)
        #expect(cache.countLimit == 2 && cache.count == 2)
        // One image keeps its tenth of the budget: 40 bytes now, so 100 is too big.
        #expect(cache.entryCostLimit == 40)
        cache.setImage(image(cost: 100), forKey: "big")
        #expect(cache.count == 2 && cache.totalCost == 200)
        // The look-ups above made 8 and 9 the most recent.
        #expect(keys(in: cache, among: ["0", "7", "8", "9"]) == ["8", "9"])
        #expect(cache.checkInvariants() == nil)
        // Growing admits more, and larger, images again.
        cache.setLimits(cost: 2_000, count: 100)
        #expect(cache.entryCostLimit == 200)
        for i in 10..<25 { cache.setImage(image(cost: 100), forKey: "\(i)") }
        #expect(cache.count == 17 && cache.totalCost == 1_700)
        // An explicit share is kept too.
        let half = makeCache(costLimit: 1_000, entryCostLimit: 500)
        half.setLimits(cost: 300, count: 10)
        #expect(half.entryCostLimit == 150)
        #expect(cache.checkInvariants() == nil && half.checkInvariants() == nil)
    }

    @Test func removeOneAndRemoveAll() {
        let cache = makeCache()
        for i in 0..<5 { cache.setImage(image(cost: 16), forKey: "\(i)") }
        cache.removeImage(forKey: "2")
        cache.removeImage(forKey: "absent")
        #expect(keys(in: cache, among: (0..<5).map(String.init)) == ["0", "1", "3", "4"])
        #expect(cache.totalCost == 64)
        cache.removeAll()
        #expect(cache.count == 0 && cache.totalCost == 0)
        // Usable after clearing, and freed slots are reused.
        for i in 0..<3 { cache.setImage(image(cost: 16), forKey: "\(i)") }
        cache.removeImage(forKey: "1")
        cache.setImage(image(cost: 16), forKey: "again")
        #expect(cache.count == 3)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func defaultCostLimitIsAFifthOfUsableMemoryAtMost512MiB() {
        let expected = min(Int(SystemMemory.usable / 5), 512 << 20)
        #expect(ImageCache.defaultCostLimit == expected)
        #expect(SystemMemory.usable <= ProcessInfo.processInfo.physicalMemory)
        #expect(ImageCache().entryCostLimit == ImageCache.defaultCostLimit / 10)
    }

    @Test func memoryPressureEventsPurgeTheCache() {
        let source = TestPressureSource()
        let monitor = MemoryPressureMonitor(source: source)
        let cache = makeCache(costLimit: 10_000, entryCostLimit: 1_000, memoryPressure: monitor)
        #expect(monitor.mechanism?.name == "test")
        for i in 0..<10 { cache.setImage(image(cost: 100), forKey: "\(i)") }
        _ = cache.image(forKey: "0")

        // A warning halves the cache, keeping the most recent images.
        source.fire(.warning)
        #expect(cache.totalCost == 500)
        #expect(keys(in: cache, among: (0..<10).map(String.init)) == ["0", "6", "7", "8", "9"])

        // A critical event empties it.
        source.fire(.critical)
        #expect(cache.count == 0 && cache.totalCost == 0)
        #expect(cache.checkInvariants() == nil)
    }

    @Test func warningDropsExpiredImagesFirst() {
        let source = TestPressureSource()
        let clock = ManualClock()
        let cache = makeCache(memoryPressure: MemoryPressureMonitor(source: source), clock: clock.now)
        cache.setImage(image(cost: 100), forKey: "stale", timeToLive: 1)
        cache.setImage(image(cost: 100), forKey: "fresh 1")
        cache.setImage(image(cost: 100), forKey: "fresh 2")
        _ = cache.image(forKey: "stale")  // the most recent, yet expired below
        clock.advance(by: 2)
        source.fire(.warning)  // target 150: the stale one goes, then the oldest fresh one
        #expect(keys(in: cache, among: ["stale", "fresh 1", "fresh 2"]) == ["fresh 2"])
    }

    @Test func monitorStartsOnceStopsWhenReleasedAndCachesUnsubscribe() {
        let source = TestPressureSource()
        var monitor: MemoryPressureMonitor? = MemoryPressureMonitor(source: source)
        #expect(source.starts == 0)  // nothing watched without subscribers
        var cache: ImageCache? = makeCache(memoryPressure: monitor)
        let other = makeCache(memoryPressure: monitor)
        #expect(source.starts == 1)

        weak let released = cache
        cache = nil
        #expect(released == nil)  // the monitor does not keep caches alive
        other.setImage(image(cost: 8), forKey: "x")
        source.fire(.critical)  // reaches the live cache, skips the released one
        #expect(other.count == 0)

        let calls = Locked(0)
        let subscription = monitor!.subscribe { _ in calls.withLock { $0 += 1 } }
        source.fire(.warning)
        subscription.cancel()
        source.fire(.warning)
        #expect(calls.withLock { $0 } == 1)

        // Caches and subscriptions hold the monitor; it stops its source when the last goes.
        monitor = nil
        #expect(source.stops == 0)
        _ = consume other
        _ = consume subscription
        #expect(source.stops == 1)
    }

    @Test func manyThreadsAtOnceKeepTheInvariants() {
        let cache = makeCache(costLimit: 4_000, countLimit: 40, entryCostLimit: 1_000)
        let threads = 8, operations = 10_000
        let done = DispatchGroup()
        let problems = Locked<[String]>([])
        for t in 0..<threads {
            done.enter()
            let thread = Thread {
                var random = SystemRandomNumberGenerator()
                for n in 0..<operations {
                    let key = "\(Int.random(in: 0..<64, using: &random))"
                    switch Int.random(in: 0..<10, using: &random) {
                    case 0..<5:
                        if let found = cache.image(forKey: key), found.cost % 4 != 0 {
                            problems.withLock { $0.append("corrupt image under \(key)") }
                        }
                    case 5..<9: cache.setImage(image(cost: 4 * Int.random(in: 1...250, using: &random)), forKey: key)
                    default: cache.removeImage(forKey: ImageCacheKey(imageKey: key))
                    }
                    // One thread checks the whole structure now and then, mid-flight.
                    if t == 0, n % 500 == 0, let problem = cache.checkInvariants() {
                        problems.withLock { $0.append(problem) }
                    }
                }
                done.leave()
            }
            thread.start()
        }
        #expect(done.wait(timeout: .now() + 120) == .success)
        #expect(problems.withLock { $0 } == [])
        #expect(cache.checkInvariants() == nil)
        #expect(cache.count <= 40 && cache.totalCost <= 4_000)
    }
}

#if os(Linux)
/// Whether the kernel still lists thread `id` of this process, waiting up to a
/// second for it to go: a joined thread may linger a moment in /proc.
private func threadExists(_ id: pid_t, waitingForExit: Bool = false) async throws -> Bool {
    let path = "/proc/self/task/\(id)"
    guard waitingForExit else { return access(path, F_OK) == 0 }
    for _ in 0..<100 {
        if access(path, F_OK) != 0 { return false }
        try await Task.sleep(for: .milliseconds(10))
    }
    return true
}

/// Waits until `source` reports its thread's id.
private func threadID(of source: SystemMemoryPressureSource) async throws -> pid_t? {
    for _ in 0..<200 {
        if let id = source.threadID { return id }
        try await Task.sleep(for: .milliseconds(5))
    }
    return nil
}

@Suite("MemoryPressure")
struct MemoryPressureTests {
    @Test func systemSourceStartsReportsItsMechanismAndStopsItsThread() async throws {
        let source = SystemMemoryPressureSource()
        let mechanism = try #require(source.start { _ in })
        print("memory pressure mechanism on this machine: \(mechanism)")
        #expect(SystemMemoryPressureSource.Kind(rawValue: mechanism.name) != nil)
        #expect(source.start { _ in } == mechanism)  // a second start keeps the first watch
        let id = try #require(try await threadID(of: source))
        #expect(try await threadExists(id))
        let name = try String(contentsOfFile: "/proc/self/task/\(id)/comm", encoding: .utf8)
        #expect(name == "imago-pressure\n")
        source.stop()
        #expect(try await !threadExists(id, waitingForExit: true))
        #expect(source.threadID == nil)
        source.stop()  // a second stop is harmless
    }

    @Test(arguments: SystemMemoryPressureSource.Kind.allCases)
    func eachMechanismStartsWhereAvailableAndStopsCleanly(kind: SystemMemoryPressureSource.Kind) async throws {
        let source = SystemMemoryPressureSource(preferring: [kind])
        guard let mechanism = source.start({ _ in }) else {
            // cgroup v2 memory.events needs the memory controller on the v2
            // hierarchy, which a hybrid (v1) machine like this one lacks.
            print("memory pressure mechanism \(kind.rawValue): not available here")
            return
        }
        print("memory pressure mechanism \(kind.rawValue): \(mechanism)")
        #expect(mechanism.name == kind.rawValue)
        let id = try #require(try await threadID(of: source))
        source.stop()
        #expect(try await !threadExists(id, waitingForExit: true))
    }

    @Test func pollingFallbackReportsLowMemory() async throws {
        // A threshold of 100% makes any machine "low", so the poll fires at once.
        let source = SystemMemoryPressureSource(preferring: [.memAvailable], availableMemoryThreshold: 1, pollInterval: 0.02)
        let monitor = MemoryPressureMonitor(source: source)
        let cache = ImageCache(costLimit: 1 << 20, memoryPressure: monitor)
        cache.setImage(image(cost: 64), forKey: "a")
        #expect(monitor.mechanism?.name == "meminfo")
        var emptied = false
        for _ in 0..<200 where !emptied {
            try await Task.sleep(for: .milliseconds(10))
            emptied = cache.count == 0
        }
        #expect(emptied)
    }

    @Test func stoppingFromInsideTheHandlerDoesNotDeadlock() async throws {
        let source = SystemMemoryPressureSource(preferring: [.memAvailable], availableMemoryThreshold: 1, pollInterval: 0.01)
        // The handler runs on the watcher thread: it notes that thread's id, then stops.
        let stoppedOn = Locked<pid_t?>(nil)
        let handler: @Sendable (MemoryPressureMonitor.Level) -> Void = { [weak source] _ in
            source?.stop()
            stoppedOn.withLock { $0 = LinuxThreads.currentID }
        }
        _ = try #require(source.start(handler))
        for _ in 0..<200 where stoppedOn.withLock({ $0 }) == nil {
            try await Task.sleep(for: .milliseconds(10))
        }
        let id = try #require(stoppedOn.withLock { $0 })
        #expect(id != LinuxThreads.currentID)
        #expect(try await !threadExists(id, waitingForExit: true))
    }

    @Test func defaultPreferenceTriesEveryMechanismOnce() {
        let preference = SystemMemoryPressureSource.defaultPreference
        #expect(Set(preference) == Set(SystemMemoryPressureSource.Kind.allCases))
        #expect(preference.count == SystemMemoryPressureSource.Kind.allCases.count)
        #expect(preference.last == .memAvailable)
    }

    @Test func cgroupDiscoveryFindsThisProcess() {
        let cgroups = LinuxCgroups.current
        // Every Linux with cgroups mounted has at least one of the two hierarchies.
        #expect(cgroups.v1MemoryDirectory != nil || cgroups.v2Directory != nil)
        if let limit = cgroups.memoryLimit { #expect(limit > 0) }
    }
}
#endif

/// The cache's behaviour does not depend on the key's parts; these tests name
/// entries by plain strings.
private extension ImageCache {
    func setImage(_ image: DecodedImage, forKey key: String) { setImage(image, forKey: ImageCacheKey(imageKey: key)) }
    func image(forKey key: String) -> DecodedImage? { image(forKey: ImageCacheKey(imageKey: key)) }
}
