import Foundation
import Synchronization

/// A progress bar on standard error: items done, bytes, rate and time left. Drawn
/// only when standard error is a terminal, at most ten times a second, so piped or
/// logged output stays clean.
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var bytes: Int64 = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let total: Int
    private let start = ContinuousClock.now
    private let state = Mutex(State())
    private let enabled: Bool

    init(total: Int) {
        self.total = total
        enabled = isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Counts one finished item of `bytes` bytes.
    func advance(bytes: Int) {
        guard enabled else { return }
        let line = state.withLock { state -> String? in
            state.done += 1
            state.bytes += Int64(bytes)
            let now = ContinuousClock.now
            guard state.done == total || now - state.lastDraw >= .milliseconds(100) else { return nil }
            state.lastDraw = now
            return render(done: state.done, bytes: state.bytes, elapsed: (now - start).seconds)
        }
        if let line { FileHandle.standardError.write(Data(line.utf8)) }
    }

    /// Clears the bar so the summary starts on a clean line.
    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }

    private func render(done: Int, bytes: Int64, elapsed: Double) -> String {
        let width = 24
        let filled = total == 0 ? width : width * done / total
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        let rate = elapsed > 0 ? Double(bytes) / elapsed : 0
        let left = done > 0 && done < total ? elapsed / Double(done) * Double(total - done) : 0
        return "\r\u{1B}[K[\(bar)] \(done)/\(total) items  \(formatBytes(bytes))  \(formatBytes(Int64(rate)))/s  \(done < total ? "about \(Int(left.rounded(.up))) s left" : "done")"
    }
}

func formatBytes(_ bytes: Int64) -> String {
    let units = ["B", "KB", "MB", "GB"]
    var value = Double(bytes), unit = 0
    while value >= 1000 && unit < units.count - 1 {
        value /= 1000
        unit += 1
    }
    return unit == 0 ? "\(bytes) B" : String(format: "%.1f %@", value, units[unit])
}
