/// Runs `body`, failing with `timedOut` if it takes longer than `seconds`; the body
/// is cancelled then, so a stalled transfer stops. An infinite (or absurdly long)
/// limit means no deadline.
///
/// The body runs as a task of its own rather than in a task group, because leaving a
/// group waits for every child: a data loader that ignored cancellation would hold
/// the load past its deadline. Here the deadline answers on time regardless.
func withDeadline<T: Sendable>(
    seconds: Double, url: String, _ body: @escaping @Sendable () async throws(ImagoError) -> T
) async -> Result<T, ImagoError> {
    // Beyond a century the sleep's conversion to nanoseconds would overflow.
    let limited = seconds.isFinite && seconds < 3e9
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
                do { try await Task.sleep(for: .seconds(seconds)) } catch { return }
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
