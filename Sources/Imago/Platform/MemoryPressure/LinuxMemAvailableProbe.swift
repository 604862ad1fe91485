#if os(Linux)
import Glibc

/// `MemAvailable` in `/proc/meminfo`, polled: below twice the threshold fraction of
/// `MemTotal` a warning, below it critical.
final class MemAvailableProbe: PressureProbe {
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

    override func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureMonitor.Level? {
        guard let (available, total) = sample(), total > 0 else { return nil }
        let fraction = Double(available) / Double(total)
        if fraction < threshold { return .critical }
        if fraction < 2 * threshold { return .warning }
        return nil
    }
}

#endif
