import Foundation
import Imago
import ImagoCommandLine

/// A progress bar on standard error: items done, bytes, rate and time left. Drawn
/// only when standard error is a terminal, at most ten times a second, so piped or
/// logged output stays clean.
///
/// The total may be unknown while the input is still being read (a stream on
/// standard input): the bar then counts without a fill or an estimate until
/// `setTotal` is called.
final class ProgressBar: Sendable {
    private struct State {
        var done = 0
        var total: Int?
        var bytes: Int64 = 0
        var lastDraw = ContinuousClock.now - .seconds(1)
    }

    private let start = ContinuousClock.now
    private let state: Locked<State>
    private let enabled: Bool

    init(total: Int?) {
        state = Locked(State(total: total))
        enabled = isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// The total, once the input has been read to its end.
    func setTotal(_ total: Int) {
        state.withLock { $0.total = total }
    }

    /// Counts one finished item of `bytes` bytes.
    func advance(bytes: Int) {
        guard enabled else { return }
        // Drawn with the lock held, so that a line printed above the bar by another
        // thread cannot land in the middle of it.
        state.withLock { state in
            state.done += 1
            state.bytes += Int64(bytes)
            let now = ContinuousClock.now
            guard state.done == state.total || now - state.lastDraw >= .milliseconds(100) else { return }
            state.lastDraw = now
            FileHandle.standardError.write(Data(render(state, elapsed: (now - start).seconds).utf8))
        }
    }

    /// Writes `line` on standard error as `Output.error` does, above the bar: the bar
    /// is cleared first and drawn again by the next `advance`.
    func error(_ line: String) {
        guard enabled else { return Output.error(line) }
        state.withLock { state in
            FileHandle.standardError.write(Data(("\r\u{1B}[Kimago: " + line + "\n").utf8))
            state.lastDraw = ContinuousClock.now - .seconds(1)
        }
    }

    /// Clears the bar so the summary starts on a clean line.
    func finish() {
        guard enabled else { return }
        state.withLock { _ in FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    private func render(_ state: State, elapsed: Double) -> String {
        let done = state.done
        let rate = elapsed > 0 ? Double(state.bytes) / elapsed : 0
        let figures = "\(formatBytes(state.bytes))  \(formatBytes(Int64(rate)))/s"
        guard let total = state.total else {
            return "\r\u{1B}[K[\(done) items, reading more]  \(figures)"
        }
        let width = 24
        let filled = total == 0 ? width : min(width, width * done / total)
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        let left = done > 0 && done < total ? elapsed / Double(done) * Double(total - done) : 0
        return "\r\u{1B}[K[\(bar)] \(done)/\(total) items  \(figures)  \(done < total ? "about \(Int(left.rounded(.up))) s left" : "done")"
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
