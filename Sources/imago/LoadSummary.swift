import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// What `fetch` and `sheet` say at the end, and the line a failure gets.

/// The summary record of `fetch --json` and the counts behind the human line.
struct LoadSummary: Encodable {
    let items: Int
    let failed: Int
    let bytes: Int
    let hits: [String: Int]
    let transfers: Int
    let retries: Int
    let seconds: Double
    /// The process's peak resident memory, in bytes: what a long list costs.
    let peakMemory: Int
    /// What the shared tier did, with `--redis`.
    let shared: SharedCounts?

    /// The shared tier's counters as the summary gives them.
    struct SharedCounts: Encodable {
        let hits: Int
        let misses: Int
        let stored: Int
        let rejected: Int
        let writesDropped: Int
        let failures: Int
        /// Loads that waited on another machine's lease and got its value.
        let leaseWaitsAnswered: Int
        /// Loads that waited on a lease until it expired or the wait ran out, and
        /// asked the origin themselves: with `leasesLost`, the fleet's only repeated
        /// origin requests.
        let leaseWaitsExpired: Int
        /// Leases that expired under a load of this process before it stored the
        /// value: another machine may have asked the origin for the same image.
        let leasesLost: Int

        init(_ counters: SharedCache.Counters) {
            hits = counters.hits
            misses = counters.misses
            stored = counters.stored
            rejected = counters.rejected
            writesDropped = counters.writesDropped
            failures = counters.failures
            leaseWaitsAnswered = counters.leaseWaitsAnswered
            leaseWaitsExpired = counters.leaseWaitsExpired
            leasesLost = counters.leasesLost
        }
    }

    init(items: Int, failed: Int, hits: [String: Int], counter: CountingLoader, seconds: Double, shared: SharedCache? = nil) {
        self.shared = shared.map { SharedCounts($0.counters) }
        self.items = items
        self.failed = failed
        self.hits = hits
        bytes = counter.bytes.withLock { $0 }
        transfers = counter.transfers.withLock { $0 }
        retries = counter.retries.withLock { $0 }
        self.seconds = (seconds * 1000).rounded() / 1000
        peakMemory = ownPeakRSSKilobytes() * 1024
    }

    /// "3 items, 1 failed, 1.2 MB in 4 transfers (1 retry), answered by: 2 network,
    /// 0.31 s".
    var text: String {
        let tiers = ["memory", "recent", "disk", "revalidated", "shared", "network", "local"].compactMap { tier in hits[tier].map { "\($0) \(tier)" } }
        let retried = retries == 0 ? "" : " (\(retries) \(retries == 1 ? "retry" : "retries"))"
        var text = """
            \(items) \(items == 1 ? "item" : "items"), \(failed) failed, \(formatBytes(Int64(bytes))) in \
            \(transfers) \(transfers == 1 ? "transfer" : "transfers")\(retried), \
            answered by: \(tiers.isEmpty ? "none" : tiers.joined(separator: ", ")), \(String(format: "%.2f", seconds)) s
            """
        if let shared {
            var parts = ["\(shared.hits) hits", "\(shared.misses) misses", "\(shared.stored) stored"]
            if shared.rejected > 0 { parts.append("\(shared.rejected) rejected") }
            if shared.writesDropped > 0 { parts.append("\(shared.writesDropped) writes dropped") }
            if shared.failures > 0 { parts.append("\(shared.failures) failed commands") }
            text += "\nshared cache: " + parts.joined(separator: ", ")
        }
        return text
    }
}

/// The line a failed URL or file gets on standard error: `URL (line N): reason`, the URL
/// once. Most errors start with their URL already (an HTTP status, a network
/// failure); one that quotes it (an invalid URL) is its own line.
func failureLine(url: String, line: Int?, error: String) -> String {
    let place = line.map { " (line \($0))" } ?? ""
    if error.contains("'\(url)'") { return error + place }
    let reason = error.hasPrefix(url + ": ") ? String(error.dropFirst(url.count + 2)) : error
    return "\(url)\(place): \(reason)"
}
