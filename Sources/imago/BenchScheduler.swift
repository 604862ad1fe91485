import Foundation
import Imago
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The loader's own cost, with the network taken out: how long queueing a request
/// takes with 1,000 and with 100,000 already queued, and how long cancelling them all
/// takes. The transfers never finish (or finish at once), so only the scheduler is
/// measured.
enum SchedulerBenchmark {
    /// A transfer that waits until it is cancelled.
    private struct Forever: DataLoading {
        func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            throw .cancelled
        }
    }

    /// A transfer that answers at once with a one-pixel PNG.
    private struct Instant: DataLoading {
        static let pixel = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")!
        func loadData(for request: URLRequest, progress: @escaping @Sendable (Int64, Int64?) -> Void) async throws(ImagoError) -> DataResponse {
            DataResponse(data: Self.pixel, url: request.url!, statusCode: 200)
        }
    }

    struct Figures {
        let count: Int
        /// Nanoseconds to queue one request, averaged over `count`.
        let queueNanoseconds: Double
        /// Seconds to cancel all `count` queued requests at once.
        let cancelSeconds: Double
        /// Nanoseconds per request through the whole cycle (queue, run, decode a
        /// one-pixel PNG, complete) with 8 loads at a time.
        let cycleNanoseconds: Double
    }

    static func measure(count: Int) async -> Figures {
        let urls = (0..<count).map { URL(string: "http://127.0.0.1:9/\($0).png")! }

        let waiting = ImageLoader(configuration: .init(dataLoader: Forever()), cache: nil)
        waiting.concurrentLoads = 1
        let blocker = waiting.task(with: ImageRequest(url: URL(string: "http://127.0.0.1:9/blocker")!))
        var start = ContinuousClock.now
        let tasks = urls.map { waiting.task(with: ImageRequest(url: $0)) }
        let queue = seconds(ContinuousClock.now - start)
        start = ContinuousClock.now
        waiting.cancel(tasks + [blocker])
        let cancel = seconds(ContinuousClock.now - start)

        let running = ImageLoader(configuration: .init(dataLoader: Instant()), cache: nil)
        running.concurrentLoads = 8
        start = ContinuousClock.now
        let cycle = urls.map { running.task(with: ImageRequest(url: $0)) }
        for task in cycle { _ = await task.value }
        let total = seconds(ContinuousClock.now - start)

        return Figures(
            count: count, queueNanoseconds: queue / Double(count) * 1e9, cancelSeconds: cancel,
            cycleNanoseconds: total / Double(count) * 1e9)
    }
}
