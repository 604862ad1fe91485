import Foundation

/// Threads for work that blocks on another server (a command to Redis). GCD's global
/// queues run a thread a core and, on Linux, add none while one blocks, and the Swift
/// concurrency pool has a thread a core too, whose timers and continuations wait
/// behind a blocked one: a command waiting for its reply on either idles a core
/// that a decode could use, or holds up every task. Each of these serial queues has a
/// thread of its own while it has work.
enum BlockingWork {
    private static let queues = (0..<8).map { DispatchQueue(label: "imago.blocking-work.\($0)", qos: .userInitiated) }
    private static let next = Locked(0)

    /// Runs `work` on one of the queues, in turn.
    static func run(_ work: @escaping @Sendable () -> Void) {
        nextQueue().async(execute: work)
    }

    /// What `work` returns, run on one of the queues while the caller's task waits
    /// without holding a thread of the pool.
    static func value<Value: Sendable>(_ work: @escaping @Sendable () -> Value) async -> Value {
        await nextQueue().value(of: work)
    }

    private static func nextQueue() -> DispatchQueue {
        let index = next.withLock { index in
            defer { index = (index + 1) % queues.count }
            return index
        }
        return queues[index]
    }
}

extension DispatchQueue {
    /// What `work` returns, run on this queue while the caller's task waits without
    /// holding a thread of the concurrency pool.
    ///
    /// The value crosses through a lock as well as the continuation. A continuation
    /// resumed before its task has suspended gives the thread sanitizer no order
    /// between the two threads (swiftlang/swift#57803), so it takes every later read
    /// of what the value refers to (a decoded image, a file's bytes) for a race with
    /// its making; the lock's order it sees.
    func value<Value: Sendable>(of work: @escaping @Sendable () -> Value) async -> Value {
        let handed = Locked<Value?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.async {
                let value = work()
                handed.withLock { $0 = value }
                continuation.resume()
            }
        }
        // Set before the resume.
        return handed.withLock { $0! }
    }
}
