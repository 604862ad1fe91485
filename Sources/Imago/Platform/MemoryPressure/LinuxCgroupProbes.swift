#if os(Linux)
import Glibc

/// The cgroup v2 `memory.events` counters: a rise of `high` is a warning, of `max`,
/// `oom` or `oom_kill` critical.
final class CgroupEventsProbe: PressureProbe {
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

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureMonitor.Level? {
        guard polled.first.map({ $0.revents != 0 }) == true, let now = readCounters() else { return nil }
        defer { counters = now }
        func rose(_ key: Substring) -> Bool { (now[key] ?? 0) > (counters[key] ?? 0) }
        if rose("max") || rose("oom") || rose("oom_kill") { return .critical }
        if rose("high") { return .warning }
        return nil
    }
}

/// cgroup v1 `memory.pressure_level` notifications, one eventfd per level: `medium`
/// is a warning, `critical` critical.
final class CgroupPressureLevelProbe: PressureProbe {
    private var levels: [MemoryPressureMonitor.Level] = []

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
        for (level, name) in [(MemoryPressureMonitor.Level.warning, "medium"), (.critical, "critical")] {
            guard let event = LinuxThreads.makeEventFD() else { return nil }
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

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureMonitor.Level? {
        var result: MemoryPressureMonitor.Level?
        for (i, entry) in polled.enumerated() where entry.revents & Int16(POLLIN) != 0 {
            var count: UInt64 = 0
            _ = read(entry.fd, &count, MemoryLayout<UInt64>.size)
            result = max(result ?? levels[i], levels[i])
        }
        return result
    }
}

#endif
