import Foundation
import Imago
import ImagoCommandLine
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
        func loadData(for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void) async throws(ImagoError) -> DataResponse {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            throw .cancelled
        }
    }

    /// A transfer that answers at once with a one-pixel PNG.
    private struct Instant: DataLoading {
        static let pixel = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")!
        func loadData(for request: URLRequest, options: DataLoadingOptions, progress: @escaping @Sendable (DataLoadingProgress) -> Void) async throws(ImagoError) -> DataResponse {
            DataResponse(data: Self.pixel, url: request.url!, statusCode: 200)
        }
    }

    struct Figures {
        let count: Int
        /// Nanoseconds to queue one more request with `count` already queued
        /// (averaged over 1,000 more).
        let queueNanoseconds: Double
        /// Seconds to cancel all queued requests (`count` and 1,000 more) at once.
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
        let tasks = urls.map { waiting.task(with: ImageRequest(url: $0)) }
        // The marginal cost: 1,000 more requests on top of `count` queued ones.
        let more = (0..<1_000).map { URL(string: "http://127.0.0.1:9/more/\($0).png")! }
        var start = ContinuousClock.now
        let extra = more.map { waiting.task(with: ImageRequest(url: $0)) }
        let queue = (ContinuousClock.now - start).seconds
        start = ContinuousClock.now
        waiting.cancel(tasks + extra + [blocker])
        let cancel = (ContinuousClock.now - start).seconds

        let running = ImageLoader(configuration: .init(dataLoader: Instant()), cache: nil)
        running.concurrentLoads = 8
        start = ContinuousClock.now
        let cycle = urls.map { running.task(with: ImageRequest(url: $0)) }
        for task in cycle { _ = try? await task.response }
        let total = (ContinuousClock.now - start).seconds

        return Figures(
            count: count, queueNanoseconds: queue / Double(more.count) * 1e9, cancelSeconds: cancel,
            cycleNanoseconds: total / Double(count) * 1e9)
    }
}

/// Prints the scheduler's figures for 1,000 and 100,000 queued requests.
func printSchedulerFigures(json: Bool) async {
    Progress.show("scheduler: 1,000 and 100,000 queued requests")
    let small = await SchedulerBenchmark.measure(count: 1_000)
    let large = await SchedulerBenchmark.measure(count: 100_000)
    Progress.clear()
    if json {
        struct Record: Encodable {
            let measure: String
            let queued: Int
            let queueNanoseconds: Double
            let cancelAllSeconds: Double
            let cycleNanoseconds: Double
        }
        for figures in [small, large] {
            Output.json(Record(
                measure: "scheduler", queued: figures.count, queueNanoseconds: figures.queueNanoseconds,
                cancelAllSeconds: figures.cancelSeconds, cycleNanoseconds: figures.cycleNanoseconds))
        }
        return
    }
    func micro(_ nanoseconds: Double) -> String { String(format: "%.2f µs", nanoseconds / 1000) }
    Output.line("""

        scheduler (no network; queueing behind one held slot, then cancelling everything at once)
        queue one more request    1,000 queued: \(micro(small.queueNanoseconds))   100,000 queued: \(micro(large.queueNanoseconds))   \
        ratio \(String(format: "%.2f", large.queueNanoseconds / small.queueNanoseconds))× (goal ≤ 1.2×)
        cancel all at once        1,000: \(String(format: "%.4f", small.cancelSeconds)) s   100,000: \(String(format: "%.3f", large.cancelSeconds)) s (goal well under 1 s)
        whole cycle per request   1,000: \(micro(small.cycleNanoseconds))   100,000: \(micro(large.cycleNanoseconds))   \
        (queue, run 8 at a time, decode a 1-pixel PNG, complete)
        """)
}
