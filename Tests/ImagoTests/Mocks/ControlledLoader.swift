import Foundation
@testable import Imago
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data loader the test drives: each request waits until the test answers it, so
/// queueing, coalescing and cancellation can be observed exactly. Tests wait for
/// what it sees (`until`), never by polling or sleeping.
final class ControlledLoader: DataLoading {
    /// What the loader has seen so far.
    struct Seen: Sendable {
        /// URLs requested, in order.
        var started: [String] = []
        /// URLs whose transfer was cancelled, in order.
        var cancelled: [String] = []
    }

    private struct Pending {
        let url: String
        let continuation: CheckedContinuation<Result<DataResponse, ImagoError>, Never>
    }

    private struct Watcher {
        let condition: @Sendable (Seen) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var seen = Seen()
        var pending: [Int: Pending] = [:]
        var automatic: [String: Result<DataResponse, ImagoError>] = [:]
        var watchers: [Int: Watcher] = [:]
        var next = 0
    }

    private let state = Locked(State())

    /// URLs requested so far, in order.
    var started: [String] { state.withLock { $0.seen.started } }
    /// URLs whose transfer was cancelled.
    var cancelled: [String] { state.withLock { $0.seen.cancelled } }
    /// Requests waiting for an answer.
    var waiting: Int { state.withLock { $0.pending.count } }

    /// Waits until what the loader has seen satisfies `condition`; false if it did
    /// not within `seconds`. The default is long because only a failure waits it out,
    /// and under the thread sanitizer on two loaded cores 10 s was seen to run out.
    func until(seconds: Double = 60, _ condition: @escaping @Sendable (Seen) -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { state -> Int? in
                if condition(state.seen) { return nil }
                state.next += 1
                state.watchers[state.next] = Watcher(condition: condition, continuation: continuation)
                return state.next
            }
            guard let id else { return continuation.resume(returning: true) }
            Task {
                try? await Task.sleep(for: .seconds(seconds))
                state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation.resume(returning: false)
            }
        }
    }

    /// Answers every future request for `url` at once.
    func answer(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        state.withLock { $0.automatic[url.absoluteString] = result }
    }

    /// Answers the waiting requests for `url`.
    func release(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        let ready = state.withLock { state -> [Pending] in
            let matching = state.pending.filter { $0.value.url == url.absoluteString }
            for key in matching.keys { state.pending[key] = nil }
            return Array(matching.values)
        }
        for pending in ready { pending.continuation.resume(returning: result) }
    }

    func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
        let url = request.url!.absoluteString
        let (id, automatic) = change { state -> (Int, Result<DataResponse, ImagoError>?) in
            state.seen.started.append(url)
            state.next += 1
            return (state.next, state.automatic[url])
        }
        if let automatic { return try automatic.get() }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelledAlready = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.pending[id] = Pending(url: url, continuation: continuation)
                    return false
                }
                if cancelledAlready { continuation.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            let pending = change { state -> Pending? in
                state.seen.cancelled.append(url)
                return state.pending.removeValue(forKey: id)
            }
            pending?.continuation.resume(returning: .failure(.cancelled))
        }
        return try result.get()
    }

    /// Changes the state, then wakes the watchers whose condition now holds.
    private func change<T>(_ body: (inout State) -> T) -> T {
        let (value, woken) = state.withLock { state -> (T, [Watcher]) in
            let value = body(&state)
            let satisfied = state.watchers.filter { $0.value.condition(state.seen) }
            for id in satisfied.keys { state.watchers[id] = nil }
            return (value, Array(satisfied.values))
        }
        for watcher in woken { watcher.continuation.resume(returning: true) }
        return value
    }
}

/// A small PNG whose one colour tells which image it is.
func pngData(_ shade: UInt8, width: Int = 2, height: Int = 2) -> Data {
    let pixels = (0..<width * height * 4).map { $0 % 4 == 3 ? 255 : shade }
    return try! PNGEncoder().encode(Bitmap(width: width, height: height, pixels: pixels))
}

/// A successful answer with a PNG of `shade`.
func ok(_ url: URL, _ shade: UInt8 = 100, status: Int = 200, headers: [String: String] = [:]) -> Result<DataResponse, ImagoError> {
    .success(DataResponse(data: pngData(shade), url: url, statusCode: status, headers: headers))
}

/// A target for target-bound loads.
final class TargetView {}
