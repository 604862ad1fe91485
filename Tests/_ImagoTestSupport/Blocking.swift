import Foundation

/// Runs blocking work (waiting for a process, sleeping between its steps) on a
/// thread of its own. Swift's concurrency pool has one thread per core, and a test
/// that blocks one of them delays every other test's timers.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// Waits for `process` to end without holding a thread of the concurrency pool.
public func waitForExit(of process: Process) async -> Int32 {
    (try? await offThePool {
        process.waitUntilExit()
        return process.terminationStatus
    }) ?? -1
}

/// The CPU time the calling thread spends in `body`: for bounds on synchronous work
/// that must hold on two cores shared with the rest of the suite, where wall time
/// also counts the time other threads had the core.
public func threadCPUTime(_ body: () throws -> Void) rethrows -> Duration {
    func now() -> Duration {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return .seconds(time.tv_sec) + .nanoseconds(time.tv_nsec)
    }
    let start = now()
    try body()
    return now() - start
}
