import Foundation
import Imago
import ImagoCommandLine

/// What `fetch --json --events` prints for each event of each load, from the
/// loader's own event stream (`ImageLoader.observeEvents`), among the loads'
/// records: in order for each load, whose `load` number tells them apart.
struct FetchEventRecord: Encodable {
    let event: String
    let url: String
    let load: Int
    var priority: Int?
    var source: String?
    var received: Int64?
    var expected: Int64?
    var attempt: Int?
    var delay: Double?
    var error: String?
    var bytes: Int?
    var seconds: Double?

    init(_ event: ImageLoadEvent) {
        url = event.url.absoluteString
        load = event.loadID
        switch event.kind {
        case .started(let priority):
            self.event = "started"
            self.priority = priority.rawValue
        case .cacheAnswered(let source):
            self.event = "cacheAnswered"
            self.source = source.rawValue
        case .progress(let progress):
            self.event = "progress"
            received = progress.received
            expected = progress.expected
        case .retrying(let attempt, let error, let delay):
            self.event = "retrying"
            self.attempt = attempt
            self.error = error.description
            self.delay = delay
        case .finished(let source, let metrics):
            self.event = "finished"
            self.source = source.rawValue
            bytes = metrics.bytes
            seconds = metrics.queued + metrics.transfer + metrics.decodeQueued + metrics.decode + metrics.processing
        case .failed(let error):
            self.event = "failed"
            self.error = error.description
        }
    }
}

/// Prints a loader's events as JSON records while a fetch runs.
final class FetchEventPrinter: Sendable {
    private let ended = Locked(0)
    private let observation: ImageLoadEventObservation

    init(_ loader: ImageLoader) {
        let ended = ended
        observation = loader.observeEvents { event in
            Output.json(FetchEventRecord(event))
            if event.isFinal { ended.withLock { $0 += 1 } }
        }
    }

    /// Waits until `loads` loads have printed their last event (events arrive on a
    /// queue of the loader's, a little after the loads' results), at most 10 s, then
    /// stops printing.
    func finish(loads: Int) async {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while ended.withLock({ $0 }) < loads, clock.now < deadline { try? await Task.sleep(for: .milliseconds(5)) }
        observation.cancel()
    }
}
