#if os(Linux)
import Foundation
import Glibc

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
final class SystemMemoryPressureSource: MemoryPressureSource {
    /// One of the kernel's ways to tell of memory pressure.
    enum Kind: String, Sendable, CaseIterable {
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
    let preference: [Kind]
    /// The fraction of total memory below which available memory is critical for the
    /// polling fallback (a warning below twice this).
    let availableMemoryThreshold: Double
    /// Seconds between two looks at `/proc/meminfo` in the polling fallback.
    let pollInterval: Double

    private let running = Locked<(watcher: PressureWatcher, mechanism: MemoryPressureMechanism)?>(nil)

    /// The order tried by default: the order above, except that a process whose
    /// cgroup has a memory limit below the machine's memory watches its cgroup first.
    ///
    /// The limit is what will kill such a process, and the machine-wide PSI file does
    /// not see it coming: on this project's test VM (cgroup v1, no swap) a process
    /// growing into a 64 MiB limit drew seven v1 `medium` and six `critical`
    /// notifications, from 0.7 s on, before it was OOM-killed, and not one PSI
    /// trigger, since with nothing to swap the kernel stalls little before killing.
    static var defaultPreference: [Kind] {
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
    init(
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
    func start(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism? {
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
    func stop() {
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
            // A loop, not `lazy.compactMap(...).first`, which makes the first probe
            // twice: each PSI trigger costs the kernel milliseconds to set up and to
            // tear down.
            for path in paths {
                if let probe = PSIProbe(path: path) { return probe }
            }
            return nil
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

#endif
