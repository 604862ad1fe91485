import Foundation
import Imago
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A data loader the test drives, for tests that must control timing exactly (the
/// same behaviour is tested against the real server elsewhere).
///
/// By default each request waits until the test answers it (`release(_:with:)`), so
/// queueing, coalescing and cancellation can be observed exactly; `answer(_:with:)`
/// answers a URL's future requests at once. Made with a `Script`, it answers every
/// request itself, after the pauses and progress reports the script gives. Tests
/// wait for what it has seen (`waitUntil { loader.seen... }`), never by sleeping.
public final class ControlledLoader: DataLoading {
    /// What the loader has seen so far.
    public struct Seen: Sendable {
        /// URLs requested, in order.
        public var started: [String] = []
        /// URLs whose transfer was cancelled, in order.
        public var cancelled: [String] = []
    }

    /// How the loader answers each request by itself.
    public struct Script: Sendable {
        /// The body for a request's URL.
        public var body: @Sendable (URL) -> Data
        /// Bytes reported received before the whole body is.
        public var progress: [Int]
        /// A pause before each report, a random length within this range.
        public var pause: ClosedRange<Duration>

        /// A script that reports `progress` and then the whole `body`, each after a
        /// pause within `pause`. A cancellation during a pause ends the load.
        public init(
            progress: [Int] = [], pause: ClosedRange<Duration> = .zero ... .zero,
            body: @escaping @Sendable (URL) -> Data
        ) {
            self.body = body
            self.progress = progress
            self.pause = pause
        }
    }

    private struct Pending {
        let url: String
        let continuation: CheckedContinuation<Result<DataResponse, ImagoError>, Never>
    }

    private struct State {
        var seen = Seen()
        var pending: [Int: Pending] = [:]
        var automatic: [String: Result<DataResponse, ImagoError>] = [:]
        var next = 0
    }

    private let state = LockedValue(State())
    private let script: Script?

    /// A loader whose requests wait for the test's answer, or, with `script`, are
    /// answered by it.
    public init(script: Script? = nil) {
        self.script = script
    }

    /// What the loader has seen so far.
    public var seen: Seen { state.withLock { $0.seen } }
    /// URLs requested so far, in order.
    public var started: [String] { seen.started }
    /// URLs whose transfer was cancelled.
    public var cancelled: [String] { seen.cancelled }
    /// Requests waiting for an answer.
    public var waiting: Int { state.withLock { $0.pending.count } }

    /// Answers every future request for `url` at once.
    public func answer(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        state.withLock { $0.automatic[url.absoluteString] = result }
    }

    /// Answers the waiting requests for `url`.
    public func release(_ url: URL, with result: Result<DataResponse, ImagoError>) {
        let ready = state.withLock { state -> [Pending] in
            let matching = state.pending.filter { $0.value.url == url.absoluteString }
            for key in matching.keys { state.pending[key] = nil }
            return Array(matching.values)
        }
        for pending in ready { pending.continuation.resume(returning: result) }
    }

    /// Notes the request, then answers it as the test or the script says.
    public func loadData(for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void) async throws(ImagoError) -> DataResponse {
        let url = request.url!
        let (id, automatic) = state.withLock { state -> (Int, Result<DataResponse, ImagoError>?) in
            state.seen.started.append(url.absoluteString)
            state.next += 1
            return (state.next, state.automatic[url.absoluteString])
        }
        if let automatic { return try automatic.get() }
        if let script { return try await play(script, for: url) { progress(DataLoadingProgress(received: $0, expected: $1)) } }
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let cancelledAlready = state.withLock { state -> Bool in
                    if Task.isCancelled { return true }
                    state.pending[id] = Pending(url: url.absoluteString, continuation: continuation)
                    return false
                }
                if cancelledAlready { continuation.resume(returning: .failure(.cancelled)) }
            }
        } onCancel: {
            let pending = state.withLock { state -> Pending? in
                state.seen.cancelled.append(url.absoluteString)
                return state.pending.removeValue(forKey: id)
            }
            pending?.continuation.resume(returning: .failure(.cancelled))
        }
        return try result.get()
    }

    private func play(
        _ script: Script, for url: URL, progress: @Sendable (Int64, Int64?) -> Void
    ) async throws(ImagoError) -> DataResponse {
        let body = script.body(url)
        for received in script.progress + [body.count] {
            let pause = Duration.nanoseconds(Int64.random(
                in: script.pause.lowerBound.nanoseconds...script.pause.upperBound.nanoseconds))
            if pause > .zero {
                do {
                    try await Task.sleep(for: pause)
                } catch {
                    state.withLock { $0.seen.cancelled.append(url.absoluteString) }
                    throw .cancelled
                }
            }
            progress(Int64(received), Int64(body.count))
        }
        return DataResponse(data: body, url: url, statusCode: 200)
    }
}

extension Duration {
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A small PNG whose one colour tells which image it is.
public func pngData(_ shade: UInt8, width: Int = 2, height: Int = 2) -> Data {
    let pixels = (0..<width * height * 4).map { $0 % 4 == 3 ? 255 : shade }
    return try! ImageEncoders.PNG().encode(Bitmap(width: width, height: height, pixels: pixels))
}

/// A successful answer with a PNG of `shade`.
public func ok(_ url: URL, _ shade: UInt8 = 100, status: Int = 200, headers: [String: String] = [:]) -> Result<DataResponse, ImagoError> {
    .success(DataResponse(data: pngData(shade), url: url, statusCode: status, headers: headers))
}

/// A target for target-bound loads.
public final class TargetView {
    /// A target with nothing in it: only its identity matters.
    public init() {}
}
