import Foundation
@_spi(Internals) import Imago
import ImagoCommandLine

/// `imago cache stats|clear|prune|fill`: looks after a disk cache directory.
let cacheCommand = Command(
    name: "cache",
    synopsis: "stats|clear|prune|fill [--cache-dir DIR] [--size-limit BYTES] [--json] [fill: --count N --size BYTES [--start N]] | stats --redis URL[,URL...]",
    summary: """
        Look after the disk cache. stats: records and bytes held. clear: delete every \
        record. prune: delete damaged (every byte read against its checksum), foreign and \
        expired records and abandoned temporary files, then evict the least recently \
        used down to the size limit. \
        fill: write N records of pseudo-random bytes under the keys fill-START, \
        fill-START+1, ... and wait until they are on disk, to fill a cache for tests \
        and benchmarks (the body of fill-I is the same in every run). The default \
        directory is the platform's cache folder (\(DiskCache.defaultDirectory.path)). \
        stats --redis: the shared cache's keys and bytes under its namespace on every \
        server, and the hit rate of the last run that used it.
        """,
    options: [
        .value("--cache-dir", "DIR", "the cache directory (default: the platform's cache folder)"),
        .value("--size-limit", "BYTES", "the cache's size limit, with an optional K, M or G suffix (default 512M)"),
        .value("--count", "N", "fill: how many records"),
        .value("--size", "BYTES", "fill: bytes in each record's body, with an optional K, M or G suffix"),
        .value("--start", "N", "fill: the first key's number (default 0)"),
        .flag("--json", "print one JSON record"),
    ] + LoaderOptions.sharedTable,
    run: runCache)

private struct SharedReport: Encodable {
    let action: String
    let servers: [String]
    let namespace: String
    let keys: Int
    let bytes: Int
    var lastRunHits: Int?
    var lastRunMisses: Int?
    var lastRunHitRate: Double?
}

/// `cache stats --redis`: what the shared tier holds, scanned on every master.
private func reportShared(_ arguments: Arguments, action: String, json: Bool) -> Int32 {
    let shared: SharedCache
    do throws(UsageError) {
        guard action == "stats" else { throw UsageError(message: "--redis is for cache stats only") }
        guard let made = try LoaderOptions.sharedCache(arguments) else { return ExitStatus.usage }
        shared = made
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let statistics: SharedCache.Statistics
    do throws(ImagoError) {
        statistics = try shared.statistics()
    } catch {
        Output.error(error.description)
        return ExitStatus.someFailed
    }
    var report = SharedReport(
        action: action, servers: statistics.nodes, namespace: shared.configuration.namespace, keys: statistics.keys,
        bytes: statistics.bytes)
    if let run = statistics.lastRun {
        report.lastRunHits = run.hits
        report.lastRunMisses = run.misses
        report.lastRunHitRate = run.hits + run.misses == 0 ? 0 : (Double(run.hits) / Double(run.hits + run.misses) * 1000).rounded() / 1000
    }
    if json {
        Output.json(report)
    } else {
        var line = "redis \(statistics.nodes.joined(separator: ",")) (namespace \(report.namespace)): \(report.keys) keys, \(formatBytes(Int64(report.bytes)))"
        if let hits = report.lastRunHits, let misses = report.lastRunMisses, let rate = report.lastRunHitRate {
            line += ", last run: \(hits) hits, \(misses) misses (hit rate \(String(format: "%.1f", rate * 100)) %)"
        }
        Output.line(line)
    }
    return ExitStatus.success
}

private struct CacheReport: Encodable {
    let action: String
    let directory: String
    let records: Int
    let bytes: Int
    let sizeLimit: Int
    var removed: Int?
    var written: Int?
    var droppedWrites: Int?
    var seconds: Double?
}

/// A byte count: digits with an optional K, M or G (powers of 1024).
private func byteCount(_ name: String, in arguments: Arguments) throws(UsageError) -> Int? {
    guard let text = arguments.string(name) else { return nil }
    let shifts: [Character: Int] = ["K": 10, "k": 10, "M": 20, "m": 20, "G": 30, "g": 30]
    let shift = text.last.flatMap { shifts[$0] } ?? 0
    let digits = shift == 0 ? Substring(text) : text.dropLast()
    guard let number = Int(digits), number >= 0, number <= (Int.max >> shift) else {
        throw UsageError(message: "\(name) needs a number of bytes such as 4096, 64K or 512M, not '\(text)'")
    }
    return number << shift
}

/// The body of record `index`: SplitMix64 started from the index, so a reader can check
/// what it got without being told.
func fillBody(index: Int, size: Int) -> Data {
    var state = UInt64(truncatingIfNeeded: index)
    var data = Data(count: size)
    data.withUnsafeMutableBytes { bytes in
        var offset = 0
        while offset < bytes.count {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            for shift in 0..<8 where offset < bytes.count {
                bytes[offset] = UInt8(truncatingIfNeeded: z >> UInt64(shift * 8))
                offset += 1
            }
        }
    }
    return data
}

private func runCache(_ arguments: Arguments) async -> Int32 {
    let action: String
    let sizeLimit: Int
    var count = 0, size = 0, start = 0
    do throws(UsageError) {
        guard let first = arguments.positionals.first else {
            throw UsageError(message: "cache needs one action: stats, clear, prune or fill")
        }
        guard arguments.positionals.count == 1 else {
            throw UsageError(message: "cache takes one action, and '\(arguments.positionals[1])' came after \(first)")
        }
        guard ["stats", "clear", "prune", "fill"].contains(first) else {
            throw UsageError(message: "unknown cache action '\(first)' (stats, clear, prune or fill)")
        }
        action = first
        sizeLimit = try byteCount("--size-limit", in: arguments) ?? 512 << 20
        if action == "fill" {
            guard let number = try arguments.integer("--count", in: 0...10_000_000) else {
                throw UsageError(message: "fill needs --count N")
            }
            guard let bytes = try byteCount("--size", in: arguments) else { throw UsageError(message: "fill needs --size BYTES") }
            count = number
            size = bytes
            start = try arguments.integer("--start", in: 0...Int.max / 2) ?? 0
        } else if ["--count", "--size", "--start"].contains(where: { arguments.string($0) != nil }) {
            throw UsageError(message: "--count, --size and --start are for fill only")
        }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let json = arguments.flag("--json")
    if arguments.string("--redis") != nil {
        return reportShared(arguments, action: action, json: json)
    }
    let directory = arguments.string("--cache-dir").map { URL(fileURLWithPath: $0, isDirectory: true) } ?? DiskCache.defaultDirectory

    var isDirectory: ObjCBool = false
    let exists = FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory)
    if exists && !isDirectory.boolValue {
        Output.error("\(directory.path) is not a directory")
        return ExitStatus.someFailed
    }
    // Looking at or cleaning a cache that does not exist should not create one.
    if !exists && action != "fill" {
        report(CacheReport(action: action, directory: directory.path, records: 0, bytes: 0, sizeLimit: sizeLimit, removed: action == "stats" ? nil : 0), json: json)
        return ExitStatus.success
    }

    let cache = DiskCache(directory: directory, sizeLimit: sizeLimit)
    await cache.flush()
    let before = cache.statistics
    var result = CacheReport(action: action, directory: cache.directory.path, records: 0, bytes: 0, sizeLimit: sizeLimit)
    var status = ExitStatus.success
    switch action {
    case "clear":
        let began = Date()
        cache.removeAll()
        // A fresh look at the directory tells whether everything really went.
        cache.prune()
        await cache.flush()
        // Records other processes wrote meanwhile are theirs, not a failure to delete.
        let left = cache.recordCount(placedBefore: began)
        // Opening may already have evicted over the limit or dropped damaged files.
        result.removed = before.count + before.evictions + before.discarded - left
        if left > 0 {
            Output.error("\(left) records in \(directory.path) could not be deleted")
            status = ExitStatus.someFailed
        }
    case "prune":
        cache.prune(readingWholeRecords: true)
        await cache.flush()
        // Counted from opening on: the first scan already evicts over the limit.
        result.removed = cache.statistics.evictions + cache.statistics.discarded
    case "fill":
        let begin = ContinuousClock.now
        for index in start..<start + count {
            cache.store(fillBody(index: index, size: size), metadata: Data("fill-\(index)".utf8), forKey: "fill-\(index)")
            // The cache drops writes beyond 64 MiB waiting in memory; a fill faster than
            // the disk lets it catch up instead.
            if cache.statistics.pendingSize > 32 << 20 { await cache.flush() }
        }
        await cache.flush()
        let elapsed = (ContinuousClock.now - begin).seconds
        let dropped = cache.statistics.droppedWrites
        result.written = count - dropped
        result.droppedWrites = dropped
        result.seconds = (elapsed * 1000).rounded() / 1000
        if dropped > 0 {
            Output.error("\(dropped) of \(count) writes to \(directory.path) were dropped")
            status = ExitStatus.someFailed
        }
    default:
        break
    }
    let after = cache.statistics
    result = CacheReport(
        action: result.action, directory: result.directory, records: after.count, bytes: after.totalSize,
        sizeLimit: sizeLimit, removed: result.removed, written: result.written, droppedWrites: result.droppedWrites,
        seconds: result.seconds)
    report(result, json: json)
    return status
}

private func report(_ result: CacheReport, json: Bool) {
    if json { return Output.json(result) }
    var line = "\(result.directory): \(result.records) records, \(formatBytes(Int64(result.bytes))) of \(formatBytes(Int64(result.sizeLimit)))"
    if let removed = result.removed { line += ", \(removed) removed" }
    if let written = result.written, let seconds = result.seconds {
        let rate = seconds > 0 ? Double(written) / seconds : 0
        line += ", \(written) written in \(String(format: "%.3f", seconds)) s (\(Int(rate)) records/s)"
    }
    Output.line(line)
}
