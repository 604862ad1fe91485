import Dispatch

/// Runs `body`, failing with `timedOut` if it takes longer than `seconds`; the body
/// is cancelled then, so a stalled transfer stops. An infinite (or absurdly long)
/// limit means no deadline.
///
/// The body runs as a task of its own rather than in a task group, because leaving a
/// group waits for every child: a data loader that ignored cancellation would hold
/// the load past its deadline. Here the deadline answers on time regardless.
///
/// The deadline is a dispatch timer, cancelled when the body ends. A `Task.sleep`
/// cancelled on Linux keeps its timer, and the sleeping task's memory, until the time
/// it was set for: every load left about 0.6 KB behind for its whole timeout, and a
/// long `imago fetch` grew with the number of URLs it had loaded.
func withDeadline<T: Sendable>(
    seconds: Double, url: String, _ body: @escaping @Sendable () async throws(ImagoError) -> T
) async -> Result<T, ImagoError> {
    // Beyond a century the timer's conversion to nanoseconds would overflow.
    let limited = seconds.isFinite && seconds < 3e9
    let state = Locked<(done: Bool, work: Task<Void, Never>?, timer: DeadlineTimer?)>((false, nil, nil))
    return await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, ImagoError>, Never>) in
            let finish: @Sendable (Result<T, ImagoError>) -> Void = { result in
                let tasks = state.withLock { state -> (Task<Void, Never>?, DeadlineTimer?)? in
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
            let timer = limited ? DeadlineTimer(seconds: seconds) { finish(.failure(.timedOut(url: url, seconds: seconds))) } : nil
            let early = state.withLock { state -> Bool in
                state.work = work
                state.timer = timer
                return state.done
            }
            timer?.start()
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

/// A one-shot dispatch timer: cancelling it frees it at once, where a cancelled
/// `Task.sleep` lingers until its time.
private final class DeadlineTimer: @unchecked Sendable {
    // Dispatch sources are safe to resume and cancel from any thread; the class only
    // carries one across the tasks that do.
    private let source: DispatchSourceTimer

    init(seconds: Double, fired: @escaping @Sendable () -> Void) {
        source = DispatchSource.makeTimerSource(queue: .global())
        source.schedule(deadline: .now() + seconds)
        source.setEventHandler(handler: fired)
    }

    func start() { source.resume() }

    func cancel() { source.cancel() }
}
