import Foundation

/// Runs blocking work (waiting for a process, sleeping between its steps) on a
/// thread of its own. Swift's concurrency pool has one thread per core, and a test
/// that blocks one of them delays every other test's timers.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Waits for `process` to end without holding a thread of the concurrency pool.
func waitForExit(of process: Process) async -> Int32 {
    (try? await offThePool {
        process.waitUntilExit()
        return process.terminationStatus
    }) ?? -1
}
