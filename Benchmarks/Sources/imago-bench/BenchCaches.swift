import Foundation
@_spi(Internals) import Imago
import ImagoCommandLine

/// The caches' own figures: memory-tier look-ups and insertions with 1,000 and
/// 100,000 entries; a stored thumbnail read from the disk tier against making it from
/// the photo (the cold path, network aside); and the disk tier's size under a burst
/// of writes.
enum CacheBenchmark {
    struct MemoryFigures {
        let entries: Int
        let getNanoseconds: Double
        let setNanoseconds: Double
    }

    static func memory(entries: Int) -> MemoryFigures {
        let image = DecodedImage(bitmap: Bitmap(width: 1, height: 1, pixels: [1, 2, 3, 255]), format: .png)
        let cache = ImageCache(costLimit: Int.max / 2, countLimit: entries, memoryPressure: nil)
        let keys = (0..<entries).map { ImageCacheKey(imageKey: "https://example.com/images/\($0).jpg") }
        for key in keys { cache.setImage(image, forKey: key) }
        // A fixed pseudo-random order, so look-ups do not walk the keys in insertion
        // order (which flatters the hardware's prefetcher).
        var generator = SplitMix(state: 42)
        let order = (0..<200_000).map { _ in keys[Int(generator.next() % UInt64(entries))] }
        var start = ContinuousClock.now
        var hits = 0
        for key in order where cache.image(forKey: key) != nil { hits += 1 }
        let get = (ContinuousClock.now - start).seconds / Double(order.count)
        start = ContinuousClock.now
        for key in order { cache.setImage(image, forKey: key) }
        let set = (ContinuousClock.now - start).seconds / Double(order.count)
        precondition(hits == order.count, "the memory benchmark lost entries")
        return MemoryFigures(entries: entries, getNanoseconds: get * 1e9, setNanoseconds: set * 1e9)
    }

    struct DiskFigures {
        let photos: Int
        /// Seconds per photo: decoding the JPEG straight to a 256 px thumbnail.
        let coldSeconds: Double
        /// Seconds per photo: reading the stored thumbnail back from the disk tier
        /// (record read, checksum, decode of the small file).
        let storedSeconds: Double
        /// The most bytes the disk tier held in files during a burst, its limit, and
        /// the most bytes waiting in memory to be written.
        let burstPeak: Int
        let burstLimit: Int
        let burstPendingPeak: Int
    }

    static func disk(photos: [Data], scratch: URL) throws -> DiskFigures {
        let sample = Array(photos.prefix(60))
        let directory = scratch.appendingPathComponent("bench-disk-\(ProcessInfo.processInfo.processIdentifier)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(directory: directory, sizeLimit: 1 << 30)
        let thumbnail = DecodingOptions(targetSize: .thumbnail(benchThumbnailSize))
        guard let encoder = ImageEncoders.encoder(for: .jpeg, quality: 90) else { throw BenchError(message: "no JPEG encoder") }

        var start = ContinuousClock.now
        var thumbnails: [DecodedImage] = []
        for photo in sample { thumbnails.append(try ImageDecoders.Registry.shared.decode(photo, options: thumbnail)) }
        let cold = (ContinuousClock.now - start).seconds / Double(sample.count)

        for (index, image) in thumbnails.enumerated() {
            disk.store(try encoder.encode(image.bitmap), forKey: "thumbnail-\(index)")
        }
        disk.flush()
        // A new cache on the same directory reads from the files, not from memory.
        let reopened = DiskCache(directory: directory, sizeLimit: 1 << 30)
        start = ContinuousClock.now
        for index in thumbnails.indices {
            guard let record = reopened.record(forKey: "thumbnail-\(index)") else { throw BenchError(message: "a stored thumbnail was lost") }
            _ = try ImageDecoders.Registry.shared.decode(record.data)
        }
        let stored = (ContinuousClock.now - start).seconds / Double(thumbnails.count)

        // 500 writes of 50 KB into a 5 MB limit as fast as they come, the size on disk
        // sampled after every write.
        let burstDirectory = directory.appendingPathComponent("burst")
        let limit = 5 << 20
        let burst = DiskCache(directory: burstDirectory, sizeLimit: limit)
        var peak = 0, pendingPeak = 0
        let body = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        for index in 0..<500 {
            burst.store(body, forKey: "burst-\(index)")
            let statistics = burst.statistics
            peak = max(peak, statistics.totalSize)
            pendingPeak = max(pendingPeak, statistics.pendingSize)
        }
        burst.flush()
        peak = max(peak, burst.statistics.totalSize)
        return DiskFigures(photos: sample.count, coldSeconds: cold, storedSeconds: stored, burstPeak: peak, burstLimit: limit, burstPendingPeak: pendingPeak)
    }

    private struct JSONRecord: Encodable {
        let measure: String
        let values: [String: Double]
    }

    private static func printJSON(memory: [MemoryFigures]) {
        for figures in memory {
            Output.json(JSONRecord(measure: "memory cache", values: [
                "entries": Double(figures.entries), "getNanoseconds": figures.getNanoseconds, "setNanoseconds": figures.setNanoseconds]))
        }
    }

    /// Prints the memory tier's figures alone.
    static func printMemoryFigures(json: Bool) {
        Progress.show("caches: memory tier")
        let small = memory(entries: 1_000), large = memory(entries: 100_000)
        Progress.clear()
        if json { return printJSON(memory: [small, large]) }
        Output.line("""

            memory tier               get: \(Int(small.getNanoseconds)) ns with 1,000 entries, \(Int(large.getNanoseconds)) ns with 100,000   \
            set: \(Int(small.setNanoseconds)) ns, \(Int(large.setNanoseconds)) ns
            """)
    }

    static func printFigures(photos: [Data], json: Bool) throws {
        Progress.show("caches: memory tier, disk tier")
        let small = memory(entries: 1_000), large = memory(entries: 100_000)
        let disk = try disk(photos: photos, scratch: FileManager.default.temporaryDirectory)
        Progress.clear()
        if json {
            printJSON(memory: [small, large])
            Output.json(JSONRecord(measure: "disk cache", values: [
                "coldSeconds": disk.coldSeconds, "storedSeconds": disk.storedSeconds,
                "burstPeakBytes": Double(disk.burstPeak), "burstLimitBytes": Double(disk.burstLimit),
                "burstPendingPeakBytes": Double(disk.burstPendingPeak)]))
            return
        }
        Output.line("""

            caches
            memory tier               get: \(Int(small.getNanoseconds)) ns with 1,000 entries, \(Int(large.getNanoseconds)) ns with 100,000   \
            set: \(Int(small.setNanoseconds)) ns, \(Int(large.setNanoseconds)) ns
            disk tier, 256 px thumbnail  stored: \(String(format: "%.2f", disk.storedSeconds * 1000)) ms a photo   \
            cold (decode from the JPEG): \(String(format: "%.2f", disk.coldSeconds * 1000)) ms   \
            \(String(format: "%.1f", disk.coldSeconds / disk.storedSeconds))× faster (goal ≥ 5×)
            disk size under a burst   500 writes of 50 KB, limit \(disk.burstLimit >> 20) MB: at most \
            \(String(format: "%.2f", Double(disk.burstPeak) / 1_048_576)) MB in files \(disk.burstPeak <= disk.burstLimit ? "(held)" : "(EXCEEDED)"), \
            at most \(String(format: "%.2f", Double(disk.burstPendingPeak) / 1_048_576)) MB waiting in memory to be written
            """)
    }
}

/// A small deterministic generator (SplitMix64) for the benchmark's orders.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(state: UInt64) { self.state = state }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
