import Foundation
import Imago
import Testing

/// Runs `operation` in its own task and waits at most `seconds` for it (of time the
/// concurrency pool let pass).
///
/// A task group cannot bound a hang: leaving the group waits for every child, hung
/// ones included. Here the operation runs unstructured and the caller resumes on
/// whichever comes first, the result or the timer, so a hang fails the test (and
/// leaves the stuck task behind) instead of stalling the whole suite.
public func withTimeLimit<T: Sendable>(
    _ seconds: Double,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async -> T
) async -> T? {
    let race = Race()
    let result: T? = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let finish: @Sendable (T?) -> Void = { value in
                let first = race.state.withLock { state -> Bool in
                    defer { state.resumed = true }
                    return !state.resumed
                }
                if first { continuation.resume(returning: value) }
            }
            let work = Task { finish(await operation()) }
            let timer = Task {
                // As with `waitUntil`: only time the pool let pass counts, a second a
                // look at most, five times `seconds` in all, so that a suite
                // holding the pool does not fail a load that had no chance to run.
                let clock = ContinuousClock()
                let giveUp = clock.now + .seconds(seconds * 5)
                var waited = Duration.zero
                while waited < .seconds(seconds), clock.now < giveUp {
                    let before = clock.now
                    try? await Task.sleep(for: .milliseconds(100))
                    if Task.isCancelled { return }
                    waited += min(clock.now - before, .seconds(1))
                }
                finish(nil)
            }
            race.state.withLock {
                $0.work = work
                $0.timer = timer
            }
            // Cancelled before the work existed: pass it on now.
            if Task.isCancelled { work.cancel() }
        }
    } onCancel: {
        // The work is unstructured, so the caller's cancellation must be passed on.
        race.state.withLock { $0.work }?.cancel()
    }
    race.state.withLock { $0.timer }?.cancel()
    if result == nil {
        race.state.withLock { $0.work }?.cancel()
        Issue.record("did not finish within \(seconds) s", sourceLocation: sourceLocation)
    }
    return result
}

/// The work and its timer, and whether one of them has answered already.
private final class Race: Sendable {
    let state = LockedValue((resumed: false, work: Task<Void, Never>?.none, timer: Task<Void, Never>?.none))
}
