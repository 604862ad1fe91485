import Foundation

/// Runs `body`, failing with `timedOut` if it takes longer than `seconds`; the body
/// is cancelled then, so a stalled transfer stops. An infinite (or absurdly long)
/// limit means no deadline.
///
/// The body runs as a task of its own rather than in a task group, because leaving a
/// group waits for every child: a data loader that ignored cancellation would hold
/// the load past its deadline. Here the deadline answers on time regardless.
///
/// The deadline is a task sleeping on one clock shared by every load, its entry
/// removed when the body ends. A `Task.sleep` cancelled on Linux keeps its timer, and
/// the sleeping task's memory, until the time it was set for: every load left about
/// 0.6 KB behind for its whole timeout, and a long `imago fetch` grew with the number
/// of URLs it had loaded. The timeout still answers from a task, as the work does:
/// when the concurrency pool is saturated, a load is not failed for time it could not
/// use (answered straight from the clock's thread, loads in a busy test run timed out
/// before they had sent their request).
func withDeadline<T: Sendable>(
    seconds: Double, url: String, _ body: @escaping @Sendable () async throws(ImagoError) -> T
) async -> Result<T, ImagoError> {
    let limited = DeadlineClock.isFinite(seconds)
    let state = Locked<(done: Bool, work: Task<Void, Never>?, timer: Task<Void, Never>?)>((false, nil, nil))
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ImagoError>, Never>) in
            let finish: @Sendable (Result<T, ImagoError>) -> Void = { result in
                let tasks = state.withLock { state -> (Task<Void, Never>?, Task<Void, Never>?)? in
                    guard !state.done else { return nil }
                    state.done = true
                    return (state.work, state.timer)
                }
                guard let tasks else { return }
                tasks.0?.cancel()
                tasks.1?.cancel()
                continuation.resume(returning: result)
            }
            let work = Task {
                do throws(ImagoError) { finish(.success(try await body())) } catch { finish(.failure(error)) }
            }
            let timer = limited ? Task {
                do { try await DeadlineClock.shared.sleep(seconds) } catch { return }
                finish(.failure(.timedOut(url: url, seconds: seconds)))
            } : nil
            let early = state.withLock { state -> Bool in
                state.work = work
                state.timer = timer
                return state.done
            }
            if early {
                work.cancel()
                timer?.cancel()
            } else if Task.isCancelled {
                // Cancelled before `work` was stored, where the handler could not see it.
                work.cancel()
            }
        }
    } onCancel: {
        let work = state.withLock { $0.work }
        work?.cancel()
    }
}

/// The deadlines and retry waits of every load, kept by one thread: scheduling and
/// cancelling are a dictionary entry and a heap insertion, and a cancelled entry's
/// action is released at once.
final class DeadlineClock: Sendable {
    static let shared = DeadlineClock()

    /// Whether `seconds` is a limit the clock keeps: not infinite, and not beyond a
    /// century, whose conversion to nanoseconds would overflow (no limit, then).
    static func isFinite(_ seconds: Double) -> Bool {
        seconds.isFinite && seconds < 3e9
    }

    private struct Entry: Comparable {
        let due: UInt64
        let id: Int
        static func < (a: Entry, b: Entry) -> Bool { (a.due, a.id) < (b.due, b.id) }
    }

    private struct State: Sendable {
        var heap = Heap<Entry>()
        var actions: [Int: (due: UInt64, action: @Sendable () -> Void)] = [:]
        var lastID = 0
        var running = false
    }

    private let state = Locked(State())
    /// Wakes the clock's thread when an earlier deadline arrives; a stray signal
    /// only makes it look again.
    private let wakeUp = DispatchSemaphore(value: 0)

    /// Runs `action` on the clock's thread once `seconds` have passed, unless
    /// cancelled first; returns the deadline's handle for `cancel`.
    func schedule(after seconds: Double, _ action: @escaping @Sendable () -> Void) -> Int {
        let due = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, seconds) * 1e9)
        let (id, startThread, signal) = state.withLock { state -> (Int, Bool, Bool) in
            state.lastID += 1
            state.actions[state.lastID] = (due, action)
            state.heap.insert(Entry(due: due, id: state.lastID))
            // Cancelled entries stay in the heap until their time comes; when they
            // outnumber the live ones, the heap is made again from the live ones alone.
            if state.heap.count > 2 * state.actions.count + 1024 {
                state.heap = Heap()
                for (id, entry) in state.actions { state.heap.insert(Entry(due: entry.due, id: id)) }
            }
            let startThread = !state.running
            state.running = true
            return (state.lastID, startThread, !startThread && state.heap.min?.id == state.lastID)
        }
        if startThread {
            let thread = Thread { [self] in run() }
            thread.name = "imago.deadlines"
            thread.start()
        } else if signal {
            wakeUp.signal()
        }
        return id
    }

    /// Forgets a deadline; its action is released and never runs.
    func cancel(_ id: Int) {
        let action = state.withLock { $0.actions.removeValue(forKey: id) }
        _ = action  // released after the lock is dropped
    }

    /// Returns after `seconds`, or throws `CancellationError` as soon as the task is
    /// cancelled, its entry gone with it.
    func sleep(_ seconds: Double) async throws {
        let sleeper = Sleeper()
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                sleeper.start(continuation, seconds: seconds, on: self)
            }
        } onCancel: {
            sleeper.end(cancelled: true, on: self)
        }
    }

    /// One sleep's state: its continuation is resumed once, by the clock or by the
    /// cancellation, whichever comes first, and the other finds nothing left to do.
    private final class Sleeper: Sendable {
        private let state = Locked<(continuation: CheckedContinuation<Void, any Error>?, id: Int?, cancelled: Bool)>((nil, nil, false))

        func start(_ continuation: CheckedContinuation<Void, any Error>, seconds: Double, on clock: DeadlineClock) {
            let cancelled = state.withLock { state -> Bool in
                if !state.cancelled { state.continuation = continuation }
                return state.cancelled
            }
            if cancelled { return continuation.resume(throwing: CancellationError()) }
            let id = clock.schedule(after: seconds) { [self] in end(cancelled: false, on: clock) }
            // Ended already (cancelled, or a deadline of no time): the entry goes too.
            let ended = state.withLock { state -> Bool in
                state.id = id
                return state.continuation == nil
            }
            if ended { clock.cancel(id) }
        }

        func end(cancelled: Bool, on clock: DeadlineClock) {
            let (continuation, id) = state.withLock { state in
                defer { state.continuation = nil }
                if cancelled { state.cancelled = true }
                return (state.continuation, state.id)
            }
            if cancelled, let id { clock.cancel(id) }
            if cancelled { continuation?.resume(throwing: CancellationError()) } else { continuation?.resume() }
        }
    }

    /// The clock's thread: runs each action when it is due, waiting on `wakeUp` for
    /// the earliest deadline (or for one to be scheduled).
    private func run() {
        while true {
            enum Next { case wait, waitUntil(UInt64), run(@Sendable () -> Void) }
            let next = state.withLock { state -> Next in
                while let first = state.heap.min {
                    guard state.actions[first.id] != nil else {
                        _ = state.heap.popMin()
                        continue
                    }
                    if first.due > DispatchTime.now().uptimeNanoseconds { return .waitUntil(first.due) }
                    _ = state.heap.popMin()
                    return state.actions.removeValue(forKey: first.id).map { .run($0.action) } ?? .wait
                }
                return .wait
            }
            switch next {
            case .wait: wakeUp.wait()
            case .waitUntil(let due): _ = wakeUp.wait(timeout: DispatchTime(uptimeNanoseconds: due))
            case .run(let action): action()
            }
        }
    }
}
