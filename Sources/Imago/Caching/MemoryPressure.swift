import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How hard the system is pressed for memory.
public enum MemoryPressureLevel: Int, Sendable, Comparable, CustomStringConvertible {
    /// Memory is getting scarce: give back what is cheap to make again.
    case warning
    /// The system is about to kill processes, or has started: give back everything.
    case critical

    /// Orders by severity, so the worse of two events is their `max`.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The level's name, for logs.
    public var description: String {
        switch self {
        case .warning: "warning"
        case .critical: "critical"
        }
    }
}

/// What a memory-pressure source watches: for logs and tests, so a deployment can tell
/// whether it gets kernel signals or only the polling fallback.
public struct MemoryPressureMechanism: Hashable, Sendable, CustomStringConvertible {
    /// A short stable name, such as `psi` or `meminfo`.
    public var name: String
    /// What exactly is watched, such as a file and a trigger.
    public var detail: String

    /// Makes a description of a mechanism; custom sources name their own.
    public init(name: String, detail: String = "") {
        self.name = name
        self.detail = detail
    }

    /// The name, and the detail in parentheses when there is one.
    public var description: String { detail.isEmpty ? name : "\(name) (\(detail))" }
}

/// Where memory-pressure events come from: the operating system's signal, or a test's.
///
/// A ``MemoryPressureMonitor`` starts its source once, when the first subscriber
/// arrives, and stops it when the monitor goes away.
public protocol MemoryPressureSource: AnyObject, Sendable {
    /// Begins calling `handler` on each event, from any thread, and says what it
    /// watches; nil when nothing can be watched here (the source then stays silent).
    func start(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMechanism?
    /// Stops the events. When it returns, `handler` is no longer being called, except
    /// when `stop` is itself called from inside `handler`.
    func stop()
}

/// Fans memory-pressure events from one source out to any number of subscribers, such
/// as every ``ImageCache``.
///
/// One source serves them all, so a process watches the kernel once, not once per
/// cache. The source starts with the first subscription and runs until the monitor is
/// released: the shared monitor lives for the whole process, and starting and stopping
/// a kernel watch (a thread, open files) each time a cache comes and goes would cost
/// more than one idle thread.
public final class MemoryPressureMonitor: Sendable {
    /// The monitor on the system's own signal (``SystemMemoryPressureSource``).
    public static let shared = MemoryPressureMonitor(source: SystemMemoryPressureSource())

    private struct Handlers {
        var next = 0
        var all: [Int: @Sendable (MemoryPressureLevel) -> Void] = [:]
    }

    private struct Lifecycle {
        var started = false
        var mechanism: MemoryPressureMechanism?
    }

    private let source: any MemoryPressureSource
    // Two locks, so that a source reporting while it is being started (from its own
    // thread, or even synchronously) needs only the handlers' lock.
    private let handlers = Locked(Handlers())
    private let lifecycle = Locked(Lifecycle())

    /// Makes a monitor on `source`; tests pass one they can trigger.
    public init(source: any MemoryPressureSource) {
        self.source = source
    }

    deinit {
        if lifecycle.withLock({ $0.started }) { source.stop() }
    }

    /// What the source watches; nil before the first subscription, or when nothing
    /// can be watched on this system.
    public var mechanism: MemoryPressureMechanism? { lifecycle.withLock { $0.mechanism } }

    /// Calls `handler` on every event until the returned subscription is cancelled or
    /// released. Handlers run on the source's thread: keep them short.
    public func subscribe(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureSubscription {
        let id = handlers.withLock { handlers in
            defer { handlers.next += 1 }
            handlers.all[handlers.next] = handler
            return handlers.next
        }
        lifecycle.withLock { state in
            guard !state.started else { return }
            state.started = true
            // Weak: the source holds this closure, and the monitor holds the source.
            state.mechanism = source.start { [weak self] level in self?.report(level) }
        }
        return MemoryPressureSubscription(monitor: self, id: id)
    }

    fileprivate func unsubscribe(_ id: Int) {
        _ = handlers.withLock { $0.all.removeValue(forKey: id) }
    }

    /// Delivers `level` to every subscriber, outside the lock so that a handler may
    /// subscribe or cancel.
    func report(_ level: MemoryPressureLevel) {
        let all = handlers.withLock { Array($0.all.values) }
        for handler in all { handler(level) }
    }
}

/// A subscriber's place in a ``MemoryPressureMonitor``; released or cancelled, the
/// handler is called no more.
public final class MemoryPressureSubscription: Sendable {
    private let monitor: MemoryPressureMonitor
    private let id: Int

    fileprivate init(monitor: MemoryPressureMonitor, id: Int) {
        self.monitor = monitor
        self.id = id
    }

    deinit { monitor.unsubscribe(id) }

    /// Stops the handler now rather than when the subscription is released.
    public func cancel() { monitor.unsubscribe(id) }
}

/// Memory this process may use, for sizing caches.
enum SystemMemory {
    /// Physical memory, or the cgroup limit when that is smaller: inside a container
    /// `ProcessInfo.physicalMemory` is the host's.
    static var usable: UInt64 {
        let physical = ProcessInfo.processInfo.physicalMemory
        #if os(Linux)
        if let limit = LinuxCgroups.current.memoryLimit, limit > 0 { return min(physical, limit) }
        #endif
        return physical
    }
}

#if os(Linux)

/// The system's own memory-pressure signal on Linux, chosen at start among the
/// kernel's mechanisms by what this kernel offers and this process may use.
///
/// In order of preference (but see ``defaultPreference`` for processes under a
/// cgroup memory limit):
/// 1. PSI triggers: `some 150000 2000000` (some task stalled on memory for 150 ms in
///    a 2 s window) reports a warning, `full 150000 2000000` (every task stalled) a
///    critical event. The process's own cgroup v2 `memory.pressure` is used when the
///    process is not in the root cgroup, since a container's limit presses before
///    the machine does; `/proc/pressure/memory` otherwise. Needs Linux 5.2 with PSI
///    enabled and, before 6.5 lets anyone set a trigger whose window is a multiple of
///    2 s (as this one is), usually the CAP_SYS_RESOURCE capability: without it the
///    trigger write fails and the next mechanism is tried.
/// 2. cgroup v2 `memory.events`: the kernel flags the file when a counter moves; a
///    rise of `high` is a warning, of `max`, `oom` or `oom_kill` critical.
/// 3. cgroup v1 `memory.pressure_level`, registered through `cgroup.event_control`
///    with one eventfd per level: `medium` is a warning, `critical` critical. Needs
///    write access to the control file (usually root).
/// 4. Polling `MemAvailable` in `/proc/meminfo` every ``pollInterval`` seconds:
///    below twice ``availableMemoryThreshold`` of total memory is a warning, below it
///    critical, reported at each poll while it lasts. It sees the machine only, not a
///    container's limit.
///
/// The kernel mechanisms are waited on with `poll(2)` on one dedicated thread, next
/// to an eventfd that ``stop()`` signals, so stopping is immediate rather than
/// waiting out a poll timeout.
public final class SystemMemoryPressureSource: MemoryPressureSource {
    /// One of the kernel's ways to tell of memory pressure.
    public enum Kind: String, Sendable, CaseIterable {
        /// Pressure stall information triggers.
        case psi
        /// Changes of the cgroup v2 `memory.events` counters.
        case cgroupV2Events = "cgroup-v2-events"
        /// cgroup v1 `memory.pressure_level` notifications.
        case cgroupV1PressureLevel = "cgroup-v1-pressure-level"
        /// Polling `MemAvailable` in `/proc/meminfo`.
        case memAvailable = "meminfo"
    }

    /// The mechanisms tried, first choice first.
    public let preference: [Kind]
    /// The fraction of total memory below which available memory is critical for the
    /// polling fallback (a warning below twice this).
    public let availableMemoryThreshold: Double
    /// Seconds between two looks at `/proc/meminfo` in the polling fallback.
    public let pollInterval: Double

    private let running = Locked<(watcher: PressureWatcher, mechanism: MemoryPressureMechanism)?>(nil)

    /// The order tried by default: the order above, except that a process whose
    /// cgroup has a memory limit below the machine's memory watches its cgroup first.
    ///
    /// The limit is what will kill such a process, and the machine-wide PSI file does
    /// not see it coming: on this project's test VM (cgroup v1, no swap) a process
    /// growing into a 64 MiB limit drew seven v1 `medium` and six `critical`
    /// notifications, from 0.7 s on, before it was OOM-killed, and not one PSI
    /// trigger, since with nothing to swap the kernel stalls little before killing.
    public static var defaultPreference: [Kind] {
        let cgroups = LinuxCgroups.current
        guard let limit = cgroups.memoryLimit, limit < ProcessInfo.processInfo.physicalMemory else {
            return Kind.allCases
        }
        let first: Kind = cgroups.v2Directory != nil && !cgroups.v2IsRoot && cgroups.v1MemoryDirectory == nil
            ? .cgroupV2Events : .cgroupV1PressureLevel
        return [first] + Kind.allCases.filter { $0 != first }
    }

    /// Makes a source that will try `preference` in order when started.
    ///
    /// The 5% default means the machine is close to reclaiming hard or killing, yet
    /// it is not reached by a machine that merely runs full of page cache, which
    /// counts as available: caches are not purged on a healthy, busy machine.
    public init(
        preferring preference: [Kind] = SystemMemoryPressureSource.defaultPreference,
        availableMemoryThreshold: Double = 0.05,
        pollInterval: Double = 2
    ) {
        self.preference = preference
        self.availableMemoryThreshold = availableMemoryThreshold
        self.pollInterval = pollInterval
    }

    deinit { stop() }

    /// Watches with the first mechanism of ``preference`` that can be set up here and
    /// returns it; nil when none can. Starting a running source keeps its watch.
    public func start(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMechanism? {
        running.withLock { running in
            if let running { return running.mechanism }
            for kind in preference {
                guard let probe = makeProbe(kind), let watcher = PressureWatcher(probe: probe, report: handler),
                      watcher.start() else { continue }
                running = (watcher, probe.mechanism)
                return probe.mechanism
            }
            return nil
        }
    }

    /// Ends the watch and waits for its thread to finish (unless called from that
    /// thread, inside a handler, which then finishes on its own once it returns).
    public func stop() {
        running.withLock { $0.take() }?.watcher.stop()
    }

    /// The kernel's id of the watching thread once it runs (as in /proc/self/task),
    /// for tests that check it ends.
    var threadID: pid_t? { running.withLock { $0?.watcher.threadID } }

    private func makeProbe(_ kind: Kind) -> PressureProbe? {
        let cgroups = LinuxCgroups.current
        switch kind {
        case .psi:
            var paths = ["/proc/pressure/memory"]
            if let own = cgroups.v2Directory, !cgroups.v2IsRoot { paths.insert(own + "/memory.pressure", at: 0) }
            return paths.lazy.compactMap { PSIProbe(path: $0) }.first
        case .cgroupV2Events:
            guard let own = cgroups.v2Directory, !cgroups.v2IsRoot else { return nil }
            return CgroupEventsProbe(path: own + "/memory.events")
        case .cgroupV1PressureLevel:
            return cgroups.v1MemoryDirectory.flatMap { CgroupPressureLevelProbe(directory: $0) }
        case .memAvailable:
            return MemAvailableProbe(threshold: availableMemoryThreshold, interval: pollInterval)
        }
    }
}

/// One mechanism's descriptors, and how to read what `poll` says about them. Owned by
/// the watcher thread once it starts; closes its descriptors when released.
private class PressureProbe {
    let mechanism: MemoryPressureMechanism
    /// What to poll; a negative `fd` is skipped by `poll`, which retires a dead one.
    var watched: [pollfd] = []
    /// Milliseconds between calls without an event; -1 to wait for events only.
    var timeout: Int32 { -1 }
    private var owned: [Int32] = []

    init(mechanism: MemoryPressureMechanism) {
        self.mechanism = mechanism
    }

    deinit {
        for fd in owned { close(fd) }
    }

    func watch(_ fd: Int32, for events: Int32) {
        owned.append(fd)
        watched.append(pollfd(fd: fd, events: Int16(events), revents: 0))
    }

    func own(_ fd: Int32) { owned.append(fd) }

    /// The event `polled` (aligned with ``watched``) amounts to, if any.
    func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? { nil }
}

private final class PSIProbe: PressureProbe {
    private static let triggers: [(MemoryPressureLevel, String)] = [
        (.warning, "some 150000 2000000"),
        (.critical, "full 150000 2000000"),
    ]
    private var levels: [MemoryPressureLevel] = []

    init?(path: String) {
        super.init(mechanism: MemoryPressureMechanism(name: SystemMemoryPressureSource.Kind.psi.rawValue, detail: path))
        for (level, trigger) in Self.triggers {
            // One descriptor per trigger: the kernel keeps one trigger per open file.
            let fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            // The kernel overwrites the last byte written with a terminator, so the
            // terminator is written too.
            let written = fd < 0 ? -1 : trigger.withCString { write(fd, $0, strlen($0) + 1) }
            guard written > 0 else {
                if fd >= 0 { close(fd) }
                // Without the warning trigger PSI is no use; without "full" (never
                // seen, but cheap to allow) warnings still come.
                if level == .warning { return nil } else { continue }
            }
            watch(fd, for: POLLPRI)
            levels.append(level)
        }
    }

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? {
        var result: MemoryPressureLevel?
        for (i, entry) in polled.enumerated() where entry.revents != 0 {
            // An error means the trigger is gone (its cgroup removed): retire it
            // rather than spin on it.
            if entry.revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 {
                watched[i].fd = -1
            } else if entry.revents & Int16(POLLPRI) != 0 {
                result = max(result ?? levels[i], levels[i])
            }
        }
        return result
    }
}

private final class CgroupEventsProbe: PressureProbe {
    private let fd: Int32
    private var counters: [Substring: UInt64]

    init?(path: String) {
        fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        counters = [:]
        super.init(mechanism: MemoryPressureMechanism(name: SystemMemoryPressureSource.Kind.cgroupV2Events.rawValue, detail: path))
        // A kernfs file is flagged (POLLPRI | POLLERR) after each change until it is
        // read again, so the first read arms it.
        guard let first = readCounters() else {
            close(fd)
            return nil
        }
        counters = first
        watch(fd, for: POLLPRI)
    }

    private func readCounters() -> [Substring: UInt64]? {
        guard let text = LinuxFiles.reread(fd) else { return nil }
        var counters: [Substring: UInt64] = [:]
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2, let value = UInt64(fields[1]) { counters[fields[0]] = value }
        }
        return counters
    }

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? {
        guard polled.first.map({ $0.revents != 0 }) == true, let now = readCounters() else { return nil }
        defer { counters = now }
        func rose(_ key: Substring) -> Bool { (now[key] ?? 0) > (counters[key] ?? 0) }
        if rose("max") || rose("oom") || rose("oom_kill") { return .critical }
        if rose("high") { return .warning }
        return nil
    }
}

private final class CgroupPressureLevelProbe: PressureProbe {
    private var levels: [MemoryPressureLevel] = []

    init?(directory: String) {
        super.init(mechanism: MemoryPressureMechanism(
            name: SystemMemoryPressureSource.Kind.cgroupV1PressureLevel.rawValue, detail: directory))
        let levelFile = open(directory + "/memory.pressure_level", O_RDONLY | O_CLOEXEC)
        guard levelFile >= 0 else { return nil }
        own(levelFile)
        let control = open(directory + "/cgroup.event_control", O_WRONLY | O_CLOEXEC)
        guard control >= 0 else { return nil }
        defer { close(control) }
        // In the default mode a listener hears its level and every level above, so a
        // critical event wakes both descriptors; `handle` keeps the higher.
        for (level, name) in [(MemoryPressureLevel.warning, "medium"), (.critical, "critical")] {
            guard let event = GNU.makeEventFD() else { return nil }
            let line = "\(event) \(levelFile) \(name)"
            let written = line.withCString { write(control, $0, strlen($0)) }
            guard written == line.utf8.count else {
                close(event)
                return nil
            }
            watch(event, for: POLLIN)
            levels.append(level)
        }
    }

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? {
        var result: MemoryPressureLevel?
        for (i, entry) in polled.enumerated() where entry.revents & Int16(POLLIN) != 0 {
            var count: UInt64 = 0
            _ = read(entry.fd, &count, MemoryLayout<UInt64>.size)
            result = max(result ?? levels[i], levels[i])
        }
        return result
    }
}

private final class MemAvailableProbe: PressureProbe {
    private let fd: Int32
    private let threshold: Double
    private let interval: Double

    init?(threshold: Double, interval: Double) {
        fd = open("/proc/meminfo", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        self.threshold = threshold
        self.interval = interval
        super.init(mechanism: MemoryPressureMechanism(
            name: SystemMemoryPressureSource.Kind.memAvailable.rawValue,
            detail: "MemAvailable below \(threshold * 100)% of MemTotal, every \(interval) s"))
        own(fd)
        // MemAvailable exists since Linux 3.14; without it there is nothing to poll.
        guard sample() != nil else { return nil }
    }

    override var timeout: Int32 { Int32(clamping: Int((interval * 1000).rounded(.up))) }

    private func sample() -> (available: UInt64, total: UInt64)? {
        guard let text = LinuxFiles.reread(fd) else { return nil }
        var available: UInt64?, total: UInt64?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let value = UInt64(fields[1]) else { continue }
            if fields[0] == "MemTotal:" { total = value }
            if fields[0] == "MemAvailable:" { available = value }
            if let available, let total { return (available, total) }
        }
        return nil
    }

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? {
        guard let (available, total) = sample(), total > 0 else { return nil }
        let fraction = Double(available) / Double(total)
        if fraction < threshold { return .critical }
        if fraction < 2 * threshold { return .warning }
        return nil
    }
}

/// The thread that waits on a probe. Shared by the source (until `stop`) and the
/// thread (until it ends); whichever lets go last closes the descriptors.
private final class PressureWatcher: @unchecked Sendable {
    // Touched only by the watcher thread once it runs.
    private let probe: PressureProbe
    private let report: @Sendable (MemoryPressureLevel) -> Void
    private let wake: Int32
    // Written by `start` and read by `stop`, which the source's lock orders.
    private var thread = pthread_t()
    private let runningThreadID = Locked<pid_t?>(nil)

    init?(probe: PressureProbe, report: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        guard let wake = GNU.makeEventFD() else { return nil }
        self.wake = wake
        self.probe = probe
        self.report = report
    }

    deinit { close(wake) }

    var threadID: pid_t? { runningThreadID.withLock { $0 } }

    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let watcher = Unmanaged<PressureWatcher>.fromOpaque(context!).takeRetainedValue()
            watcher.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<PressureWatcher>.fromOpaque(context).release()
            return false
        }
        return true
    }

    func stop() {
        var one: UInt64 = 1
        _ = write(wake, &one, MemoryLayout<UInt64>.size)
        // From inside a handler (a subscriber releasing the last reference to the
        // monitor, say) the thread cannot wait for itself: it is left to end on its
        // own once the handler returns and it sees the wake-up.
        if pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    private func run() {
        _ = GNU.setThreadName?(pthread_self(), "imago-pressure")
        runningThreadID.withLock { $0 = GNU.threadID?() }
        defer { runningThreadID.withLock { $0 = nil } }
        while true {
            var polled = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)] + probe.watched
            let ready = poll(&polled, nfds_t(polled.count), probe.timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if polled[0].revents != 0 { return }
            if let level = probe.handle(Array(polled.dropFirst()), timedOut: ready == 0) {
                report(level)
            }
        }
    }
}

/// glibc functions the Swift Glibc module leaves out (glibc declares them only under
/// `_GNU_SOURCE`), looked up once at run time instead of adding C to the package.
enum GNU {
    private static func function<F>(_ name: String, as type: F.Type) -> F? {
        // The handle of the program itself searches every library loaded with it,
        // libc included; it is never closed, so it can be opened per look-up.
        dlsym(dlopen(nil, RTLD_NOW), name).map { unsafeBitCast($0, to: type) }
    }

    private static let eventfd = function("eventfd", as: (@convention(c) (UInt32, Int32) -> Int32).self)
    /// `gettid`: the kernel's id of the calling thread (glibc 2.30 and later).
    static let threadID = function("gettid", as: (@convention(c) () -> pid_t).self)
    /// `pthread_setname_np`, so the thread is recognisable in `top -H` and debuggers.
    static let setThreadName = function(
        "pthread_setname_np", as: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self)

    /// A new non-blocking, close-on-exec eventfd (its flags equal O_NONBLOCK and
    /// O_CLOEXEC by definition).
    static func makeEventFD() -> Int32? {
        guard let fd = eventfd?(0, O_NONBLOCK | O_CLOEXEC), fd >= 0 else { return nil }
        return fd
    }
}

/// Reading the small files of /proc and /sys, which report no size up front.
enum LinuxFiles {
    /// The file at `path`, at most `limit` bytes of it.
    static func contents(of path: String, limit: Int = 1 << 16) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return readAll(fd, limit: limit)
    }

    /// An open file read again from the start, as pressure files are between events.
    static func reread(_ fd: Int32, limit: Int = 1 << 14) -> String? {
        guard lseek(fd, 0, SEEK_SET) == 0 else { return nil }
        return readAll(fd, limit: limit)
    }

    private static func readAll(_ fd: Int32, limit: Int) -> String? {
        var bytes = [UInt8](repeating: 0, count: limit)
        var total = 0
        while total < limit {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + total, limit - total) }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            total += count
        }
        return String(decoding: bytes[..<total], as: UTF8.self)
    }
}

/// Where this process's cgroups are, found once from /proc/self/cgroup and
/// /proc/self/mountinfo.
struct LinuxCgroups: Sendable {
    /// This process's directory in the cgroup v2 hierarchy, when mounted.
    var v2Directory: String?
    /// Whether ``v2Directory`` is the hierarchy's root, which has no memory files of
    /// its own beyond the machine's.
    var v2IsRoot = true
    /// The v2 hierarchy's mount point.
    var v2Mount: String?
    /// This process's directory in the cgroup v1 memory hierarchy, when mounted.
    var v1MemoryDirectory: String?

    static let current = LinuxCgroups.discover()

    /// The tightest memory limit on this process's cgroup and its ancestors, if any.
    var memoryLimit: UInt64? {
        var limit: UInt64?
        if var directory = v2Directory, let mount = v2Mount {
            while directory.count > mount.count {
                if let text = LinuxFiles.contents(of: directory + "/memory.max"),
                   let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    limit = min(limit ?? value, value)
                }
                directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
            }
        }
        if let directory = v1MemoryDirectory {
            // hierarchical_memory_limit already folds in the ancestors' limits.
            let stat = LinuxFiles.contents(of: directory + "/memory.stat") ?? ""
            let hierarchical = stat.split(separator: "\n")
                .first { $0.hasPrefix("hierarchical_memory_limit ") }
                .flatMap { UInt64($0.split(separator: " ")[1]) }
            let own = LinuxFiles.contents(of: directory + "/memory.limit_in_bytes")
                .flatMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if let value = hierarchical ?? own { limit = min(limit ?? value, value) }
        }
        return limit
    }

    private static func discover() -> LinuxCgroups {
        var result = LinuxCgroups()
        guard let membership = LinuxFiles.contents(of: "/proc/self/cgroup"),
              let mounts = LinuxFiles.contents(of: "/proc/self/mountinfo", limit: 1 << 20) else { return result }
        var v2Path: String?, v1Path: String?
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[0] == "0", fields[1].isEmpty {
                v2Path = String(fields[2])
            } else if fields[1].split(separator: ",").contains("memory") {
                v1Path = String(fields[2])
            }
        }
        // mountinfo: id parent dev root mountpoint options [optional…] - type source superoptions
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash >= 5, fields.count > dash + 3 else { continue }
            let root = String(fields[3]), point = String(fields[4])
            if fields[dash + 1] == "cgroup2", result.v2Mount == nil, let path = v2Path {
                result.v2Mount = point
                (result.v2Directory, result.v2IsRoot) = resolve(path, root: root, mountPoint: point)
            } else if fields[dash + 1] == "cgroup", result.v1MemoryDirectory == nil, let path = v1Path,
                      fields[dash + 3].split(separator: ",").contains("memory") {
                result.v1MemoryDirectory = resolve(path, root: root, mountPoint: point).directory
            }
        }
        return result
    }

    /// The directory of cgroup `path` under a mount of the hierarchy's `root`.
    private static func resolve(_ path: String, root: String, mountPoint: String) -> (directory: String, isRoot: Bool) {
        var relative = Substring(path)
        if root != "/", relative.hasPrefix(root) { relative = relative.dropFirst(root.count) }
        relative = relative.drop { $0 == "/" }
        if relative.isEmpty { return (mountPoint, true) }
        let directory = mountPoint + "/" + relative
        // Seen through a cgroup namespace the path may not exist under the mount:
        // the mount's root is then the nearest cgroup visible.
        return access(directory, F_OK) == 0 ? (directory, false) : (mountPoint, true)
    }
}

#elseif canImport(Darwin)

/// The system's own memory-pressure signal on Apple platforms: the dispatch
/// memory-pressure source (warning and critical), and on UIKit platforms the
/// application's memory warning, reported as critical because iOS sends it just
/// before it terminates apps.
public final class SystemMemoryPressureSource: MemoryPressureSource, @unchecked Sendable {
    // The UIKit constant's value, spelt out: `UIApplication` is main-actor isolated
    // and `start` may run on any thread.
    private static let memoryWarning = Notification.Name("UIApplicationDidReceiveMemoryWarningNotification")
    private static let mechanism = MemoryPressureMechanism(name: "dispatch-memory-pressure")

    private let lock = NSLock()
    private var sources: [any DispatchSourceMemoryPressure] = []
    private var observer: (any NSObjectProtocol)?

    /// Makes a source; nothing is watched until `start`.
    public init() {}

    /// Listens to the dispatch source and, with UIKit, the memory warning.
    public func start(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMechanism? {
        lock.lock()
        defer { lock.unlock() }
        guard sources.isEmpty else { return Self.mechanism }
        // One dispatch source per level, so the handler needs no access to the
        // source to learn which level fired.
        let levels: [(DispatchSource.MemoryPressureEvent, MemoryPressureLevel)] = [(.warning, .warning), (.critical, .critical)]
        for (mask, level) in levels {
            let source = DispatchSource.makeMemoryPressureSource(eventMask: mask, queue: .global(qos: .utility))
            source.setEventHandler { handler(level) }
            source.resume()
            sources.append(source)
        }
        #if canImport(UIKit)
        observer = NotificationCenter.default.addObserver(forName: Self.memoryWarning, object: nil, queue: nil) { _ in
            handler(.critical)
        }
        #endif
        return Self.mechanism
    }

    /// Cancels the dispatch sources and the observer.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        for source in sources { source.cancel() }
        sources = []
        if let observer { NotificationCenter.default.removeObserver(observer) }
        observer = nil
    }
}

#else

/// No memory-pressure signal is known on this platform: the source stays silent.
public final class SystemMemoryPressureSource: MemoryPressureSource {
    /// Makes a silent source.
    public init() {}
    /// Watches nothing: returns nil.
    public func start(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMechanism? { nil }
    /// Does nothing.
    public func stop() {}
}

#endif
