import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The end of one HTTP transfer: set once, by whichever comes first (the client's
/// last word, a limit, the caller's cancellation), and handed to the awaiting
/// caller exactly once, whether it was set before the caller began to wait or after.
final class TransferOutcome: Sendable {
    typealias Outcome = Result<DataResponse, ImagoError>

    private struct State {
        var continuation: CheckedContinuation<Outcome, Never>?
        var outcome: Outcome?
    }

    private let state = Locked(State())

    /// Runs a transfer: `start` hands it to the client, and the caller is resumed by
    /// whichever comes first, its end or the caller's cancellation, which calls
    /// `stop`. Waiting for the client to acknowledge a cancel is not needed (on
    /// Linux URLSession takes a trip through its serial work queue for it, the curl
    /// loader's thread drops the transfer when it next wakes).
    func run(start: () -> Void, stop: @escaping @Sendable () -> Void) async throws(ImagoError) -> DataResponse {
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                install(continuation)
                start()
            }
        } onCancel: {
            if finish(.failure(.cancelled)) { stop() }
        }
        return try result.get()
    }

    private func install(_ continuation: CheckedContinuation<Outcome, Never>) {
        let ready = state.withLock { state -> Outcome? in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        if let ready { continuation.resume(returning: ready) }
    }

    /// Ends the transfer with `outcome` unless it already ended; true if this call did.
    @discardableResult
    func finish(_ outcome: Outcome) -> Bool {
        let (first, continuation) = state.withLock { state -> (Bool, CheckedContinuation<Outcome, Never>?) in
            guard state.outcome == nil else { return (false, nil) }
            state.outcome = outcome
            defer { state.continuation = nil }
            return (true, state.continuation)
        }
        continuation?.resume(returning: outcome)
        return first
    }

    var isFinished: Bool { state.withLock { $0.outcome != nil } }
}

/// The body of one HTTP transfer, as both loaders receive it: held to the size
/// limit, reported as it grows (with the bytes, when the load asked for them), and
/// judged at the end, short of its declared length, as truncated or failed.
///
/// A value the loader keeps where its client's callbacks reach it one at a time
/// (the curl loader's thread, URLSession's serial delegate queue).
struct TransferBody {
    let limit: Int
    let options: DataLoadingOptions
    private(set) var data = Data()
    /// The length the final response declared, when it is the length of what
    /// arrives: not for a response without a body, nor for a content-encoded one
    /// (both clients decompress, so the length of the compressed bytes says nothing).
    private(set) var expected: Int64?

    init(limit: Int, options: DataLoadingOptions) {
        self.limit = limit
        self.options = options
    }

    /// Starts the body of a final (non-redirect) response, dropping any earlier
    /// one: the first progress report, or nil when the declared length is over the
    /// limit and the transfer must stop (`tooLarge`).
    mutating func start(status: Int, method: String, declaredLength: Int64?, isEncoded: Bool) -> DataLoadingProgress? {
        // A 304, a 204 and the answer to a HEAD have no body, whatever length they
        // declare (a 304's is the stored resource's).
        let hasBody = status != 304 && status != 204 && method != "HEAD"
        let declared = hasBody ? declaredLength.flatMap { $0 >= 0 ? $0 : nil } : nil
        data = Data()
        expected = nil
        if let declared, declared > Int64(limit) { return nil }
        expected = isEncoded ? nil : declared
        // Avoids repeated regrowth for large bodies, trusting a server's claim only so far.
        if let expected { data.reserveCapacity(Int(min(expected, 8 << 20))) }
        return DataLoadingProgress(received: 0, expected: expected, chunk: options.reportsChunks ? Data() : nil)
    }

    /// Appends a piece: its progress report, or nil when the body just grew past the
    /// limit and the transfer must stop (`tooLarge`).
    mutating func append(_ bytes: UnsafeRawBufferPointer) -> DataLoadingProgress? {
        guard data.count + bytes.count <= limit else { return nil }
        data.append(contentsOf: bytes)
        return DataLoadingProgress(received: Int64(data.count), expected: expected, chunk: options.reportsChunks ? Data(bytes) : nil)
    }

    /// Appends a piece: its progress report, or nil when the body just grew past the
    /// limit and the transfer must stop (`tooLarge`).
    mutating func append(_ piece: Data) -> DataLoadingProgress? {
        guard data.count + piece.count <= limit else { return nil }
        data.append(piece)
        return DataLoadingProgress(received: Int64(data.count), expected: expected, chunk: options.reportsChunks ? piece : nil)
    }

    /// The failure of a body over the limit.
    func tooLarge(_ url: URL) -> ImagoError {
        .responseTooLarge(url: url.absoluteString, limit: limit)
    }

    /// Whether less arrived than the response declared.
    var isShort: Bool { expected.map { Int64(data.count) < $0 } ?? false }

    /// Whether a body the connection ended early (closed, lost, or a chunked body
    /// cut) is returned as truncated rather than failed: the load accepts that, the
    /// status is 2xx, something arrived, and not all that was declared.
    func endsTruncated(status: Int) -> Bool {
        options.acceptsTruncatedBody && (200..<300).contains(status) && !data.isEmpty
            && (expected.map { Int64(data.count) < $0 } ?? true)
    }

    /// The failure of a connection that ended before the body did, in bytes when
    /// the length is known.
    func endedEarly(lost: Bool) -> TransferFailure {
        .connectionEnded(lost: lost, received: Int64(data.count), expected: expected)
    }

    /// Lets go of the bytes: the caller has them, or needs none.
    mutating func release() {
        data = Data()
    }

    /// The response made of what arrived; the body is handed over, not kept.
    /// `endedEarly` is the failure of a truncated body, for a load that will not
    /// take one after all.
    mutating func response(
        url: URL, status: Int, headers: [String: String], redirects: [DataResponse.Redirect], endedEarly: ImagoError? = nil
    ) -> DataResponse {
        defer { data = Data() }
        var response = DataResponse(
            data: data, url: url, statusCode: status, headers: headers, redirects: redirects, isTruncated: endedEarly != nil)
        response.endedEarly = endedEarly
        return response
    }
}
