#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutual-exclusion lock on `pthread_mutex_t`.
///
/// Why not `Synchronization.Mutex`:
/// - On Linux it waits on a raw futex that the thread sanitizer does not model, so
///   TSan reports every access it guards as a race and real races drown in the noise.
/// - It collapses when more threads contend than there are cores. Measured on this
///   project's 2-core VM (release build, a dictionary look-up under the lock): 50–80
///   ns per operation for both with one or two threads, but with eight threads 19–35
///   µs for `Mutex` against 60–120 ns for this lock (likely its spinning waiters
///   starving a preempted holder). The cache's eight-thread test (debug build) takes
///   1.1–2.1 s on `Mutex` and 0.16–0.2 s here.
///
/// A pthread mutex is understood by TSan, exists everywhere (Synchronization only from
/// macOS 15 and iOS 18 on, later than Imago's minimums), and (glibc's default kind)
/// puts a waiter to sleep in the kernel instead of spinning.
final class Lock: @unchecked Sendable {
    // Heap-allocated so it never moves: a pthread mutex must stay at one address.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held.
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// A value only reachable with its lock held: the shape of `Mutex`, on ``Lock``.
///
/// The module's one lock: state shared between threads sits in a `Locked`, held for
/// a few operations at a time, never while work runs or another component is called
/// (the pipeline's graph lock included: see `Pipeline`). The bare ``Lock`` serves
/// only where the guarded state cannot be `Sendable` (an animation's frame cursor
/// and waiting continuations, a batch's input sequence, Apple's dispatch sources),
/// each saying so beside its `@unchecked Sendable`.
///
/// `@unchecked Sendable`: the value is only reached through `withLock`.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = Lock()
    /// Behind a pointer rather than in a stored `var`: the lock already keeps accesses
    /// apart, and a class's stored property would have each one checked again at run
    /// time for overlapping access (about 70 instructions, as many as the lock itself).
    private let value: UnsafeMutablePointer<Value>

    package init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
    }

    deinit {
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Runs `body` on the value with the lock held.
    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try lock.withLock { try body(&value.pointee) }
    }
}
