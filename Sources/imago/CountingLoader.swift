import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The transfer counts `fetch` and `sheet` report: a data loader wrapped around the
// real one.

/// Counts real transfers under the loader, which coalescing and caching make fewer
/// than the items, and which of them were retries.
///
/// A transfer is a retry when the previous one of its URL failed in a way the retry
/// policy retries, and no item of that URL has completed since: the loader tries
/// again only within one load, and a load ends before its items complete.
final class CountingLoader: DataLoading {
    let inner: any DataLoading
    let policy: RetryPolicy
    let transfers = Locked(0)
    let retries = Locked(0)
    let bytes = Locked(0)
    /// URLs whose last transfer failed and may be tried again.
    private let retryable = Locked<Set<String>>([])

    init(_ inner: any DataLoading, policy: RetryPolicy) {
        self.inner = inner
        self.policy = policy
    }

    /// Passes `options` on, so `fetch --partial` gets a body cut short.
    func loadData(
        for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void
    ) async throws(ImagoError) -> DataResponse {
        transfers.withLock { $0 += 1 }
        let url = request.url?.absoluteString ?? ""
        if retryable.withLock({ $0.remove(url) != nil }) { retries.withLock { $0 += 1 } }
        do {
            let response = try await inner.loadData(for: request, options: options, progress: progress)
            bytes.withLock { $0 += response.data.count }
            // A body cut short comes back as a response (the loader asks for those, to
            // resume them), and is tried again as a failed transfer would be.
            if response.isTruncated
                || response.statusCode.map({ policy.isRetryable(.httpStatus($0, url: url)) }) == true {
                _ = retryable.withLock { $0.insert(url) }
            }
            return response
        } catch {
            if policy.isRetryable(error) { _ = retryable.withLock { $0.insert(url) } }
            throw error
        }
    }

    /// An item of `url` completed: its load has ended, so the next transfer of the URL
    /// starts a new load, not a retry.
    func loadEnded(_ url: URL) {
        _ = retryable.withLock { $0.remove(url.absoluteString) }
    }
}
