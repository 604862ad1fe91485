#if os(Linux)
import Glibc

/// Pressure stall information triggers on a PSI file: a warning when some task,
/// critical when every task, stalled on memory for 150 ms in a 2 s window.
final class PSIProbe: PressureProbe {
    private static let triggers: [(MemoryPressureMonitor.Level, String)] = [
        (.warning, "some 150000 2000000"),
        (.critical, "full 150000 2000000"),
    ]
    private var levels: [MemoryPressureMonitor.Level] = []

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

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureMonitor.Level? {
        var result: MemoryPressureMonitor.Level?
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

#endif
