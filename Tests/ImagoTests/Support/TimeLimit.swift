import Foundation
@testable import Imago
import Synchronization
import Testing

/// Runs `operation` in its own task and waits at most `seconds` for it.
///
/// A task group cannot bound a hang: leaving the group waits for every child, hung
/// ones included. Here the operation runs unstructured and the caller resumes on
/// whichever comes first, the result or the timer, so a hang fails the test (and
/// leaves the stuck task behind) instead of stalling the whole suite.
func withTimeLimit<T: Sendable>(
    _ seconds: Double,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ operation: @escaping @Sendable () async -> T
) async -> T? {
    let resumed = Locked(false)
    let work = Locked<Task<Void, Never>?>(nil)
    let timer = Locked<Task<Void, Never>?>(nil)
    let result: T? = await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let finish: @Sendable (T?) -> Void = { value in
                let first = resumed.withLock { done -> Bool in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: value) }
            }
            work.withLock { $0 = Task { finish(await operation()) } }
            timer.withLock {
                $0 = Task {
                    try? await Task.sleep(for: .seconds(seconds))
                    finish(nil)
                }
            }
            // Cancelled before the work existed: pass it on now.
            if Task.isCancelled { work.withLock { $0?.cancel() } }
        }
    } onCancel: {
        // The work is unstructured, so the caller's cancellation must be passed on.
        work.withLock { $0?.cancel() }
    }
    timer.withLock { $0?.cancel() }
    if result == nil {
        work.withLock { $0?.cancel() }
        Issue.record("did not finish within \(seconds) s", sourceLocation: sourceLocation)
    }
    return result
}
