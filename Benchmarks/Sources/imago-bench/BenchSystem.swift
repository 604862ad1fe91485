import Foundation
import ImagoCommandLine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// What `imago-bench` asks of the operating system: a process's own peak memory, how
// busy the machine was, and a progress line.

#if canImport(Glibc)
private let rusageSelf = __rusage_who_t(RUSAGE_SELF.rawValue)
private let rusageChildren = __rusage_who_t(RUSAGE_CHILDREN.rawValue)
#else
private let rusageSelf = RUSAGE_SELF
private let rusageChildren = RUSAGE_CHILDREN
#endif

/// The one-minute load average.
func loadAverage() -> Double {
    var loads = [0.0, 0.0, 0.0]
    return getloadavg(&loads, 3) > 0 ? loads[0] : 0
}

/// How much of the machine's CPU time other processes took while the benchmark ran:
/// all busy time (from /proc/stat) less this process's and its children's. Linux only;
/// nil elsewhere.
struct OthersCPUShare {
    private let start: (busy: Double, total: Double, ours: Double)?

    init() {
        start = Self.sample()
    }

    /// The share, 0 to 1, of all cores' time since `init` that went to other processes.
    func share() -> Double? {
        guard let start, let end = Self.sample(), end.total > start.total else { return nil }
        let others = (end.busy - start.busy) - (end.ours - start.ours)
        return min(max(others / (end.total - start.total), 0), 1)
    }

    /// Busy and total CPU seconds of the whole machine, and this process's (children
    /// included) CPU seconds.
    private static func sample() -> (busy: Double, total: Double, ours: Double)? {
        #if os(Linux)
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = stat.split(separator: "\n").first, line.hasPrefix("cpu ") else { return nil }
        // user nice system idle iowait irq softirq steal, in clock ticks.
        let ticks = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
        guard ticks.count == 8 else { return nil }
        let hertz = Double(sysconf(Int32(_SC_CLK_TCK)))
        let idle = ticks[3] + ticks[4]
        let total = ticks.reduce(0, +)
        return ((total - idle) / hertz, total / hertz, cpuSeconds(rusageSelf) + cpuSeconds(rusageChildren))
        #else
        return nil
        #endif
    }

    #if os(Linux)
    private static func cpuSeconds(_ who: __rusage_who_t) -> Double {
        var usage = rusage()
        getrusage(who, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }
    #endif
}

/// A one-line progress report on standard error, only when it is a terminal.
enum Progress {
    private static let isTerminal = isatty(STDERR_FILENO) != 0

    static func show(_ text: String) {
        guard isTerminal else { return }
        FileHandle.standardError.write(Data(("\r\u{1B}[K" + text).utf8))
    }

    static func clear() {
        guard isTerminal else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
