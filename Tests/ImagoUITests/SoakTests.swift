#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
@testable import ImagoUI
import _ImagoTestSupport

/// `make soak`: 20,000 loads through the library against the test server, with one
/// response in ten a fault, random cancellations, priority changes and targets that
/// go away, a memory tier and a disk tier under small limits. Not part of `make test`
/// (a minute or more); `IMAGO_SOAK=1` runs it.
@Suite(.serialized) struct SoakTests {
    /// The image of URL number `n`: its first pixel names it.
    static func image(_ n: Int) -> Data {
        let pixel: [UInt8] = [UInt8(n >> 8), UInt8(n & 0xFF), 99, 255]
        return try! ImageEncoders.PNG().encode(Bitmap(width: 8, height: 8, pixels: Array(repeatElement(pixel, count: 64).joined())))
    }

    /// The process's resident memory, in bytes, after handing freed heap back.
    static func residentBytes() -> Int {
        #if canImport(Glibc)
        // glibc's malloc_trim, which its module does not export: freed heap pages go
        // back to the system, so that resident memory shows what is still held.
        if let trim = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") {
            _ = unsafeBitCast(trim, to: (@convention(c) (Int) -> Int32).self)(0)
        }
        #endif
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    @Test(.enabled(if: Soak.enabled, "the soak runs with make soak (IMAGO_SOAK=1)"))
    func twentyThousandLoadsEndOnceEachAndLeaveNothingBehind() async throws {
        let server = TestServer()
        server.logsRequests = false
        try server.start()
        defer { server.stop() }
        let images = 2000
        for n in 0..<images {
            let response = Soak.answer(n, body: Self.image(n)).response
            server.route("/img/\(n)") { _ in response() }
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-soak-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(directory: directory, sizeLimit: 2 << 20)
        let memory = ImageCache(costLimit: 4 << 20, memoryPressure: nil)
        let loader = ImageLoader(
            configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 2, baseDelay: 0.01, maximumDelay: 0.02), diskCache: disk),
            cache: memory)
        loader.concurrentLoads = 8
        loader.loadingTimeout = 5
        let targets = ImageTargetLoader(loader: loader)

        /// How often one task's completion ran: held by its closure, so that the
        /// books of a long run cost nothing once it is checked.
        final class Ends: Sendable {
            let count = Atomic<Int>(0)
        }
        let wrong = Locked<[String]>([])
        let outcomes = Locked<[String: Int]>([:])
        @Sendable func ended(_ ends: Ends, url: Int, _ result: Result<ImageResponse, ImagoError>) {
            ends.count.add(1, ordering: .relaxed)
            let kind: String
            switch result {
            case .success(let response):
                let pixel = response.image.bitmap[0, 0]
                let shown = Int(pixel.r) << 8 | Int(pixel.g)
                if shown != url { wrong.withLock { $0.append("URL \(url) gave the image of \(shown)") } }
                kind = "success"
            case .failure(.cancelled): kind = "cancelled"
            case .failure: kind = "failure"
            }
            outcomes.withLock { $0[kind, default: 0] += 1 }
        }

        /// Runs `count` loads and waits for each to end; returns how many did not end,
        /// and how many completions ran other than once.
        func run(_ count: Int) async -> (unfinished: Int, notOnce: Int) {
            var tasks: [(ImageTask, Ends?)] = []
            for i in 0..<count {
                let n = Int.random(in: 0..<images)
                let url = server.url("/img/\(n)")
                let priority = ImageRequest.Priority.allCases.randomElement()!
                let request = ImageRequest(url: url, targetSize: Bool.random() ? nil : .thumbnail(4), priority: priority)
                if Int.random(in: 0..<10) == 0 {
                    // A target that goes away at once: its load is cancelled by the sweep.
                    let task = await MainActor.run { () -> ImageTask in
                        let view = NSObject()
                        return targets.loadImage(with: url, target: view, success: { _, _ in }, failure: { _, _ in })
                    }
                    tasks.append((task, nil))
                } else {
                    let ends = Ends()
                    let task = loader.task(with: request) { ended(ends, url: n, $0) }
                    tasks.append((task, ends))
                    switch Int.random(in: 0..<10) {
                    case 0: task.cancel()
                    case 1: task.priority = ImageRequest.Priority.allCases.randomElement()!
                    default: break
                    }
                }
                if i % 200 == 0 { try? await Task.sleep(for: .milliseconds(5)) }
            }
            // Wait for every load to end, however it ends.
            for (task, _) in tasks { _ = await task.value }
            let unfinished = tasks.filter { !$0.0.isFinished }.count
            let notOnce = tasks.filter { $0.1.map { $0.count.load(ordering: .relaxed) != 1 } ?? false }.count
            return (unfinished, notOnce)
        }

        // Warm up (the server's threads, the loader's queues and connections), then
        // clear the caches and take the baseline.
        _ = await run(5000)
        memory.removeAll()
        await disk.flush()
        outcomes.withLock { $0 = [:] }
        let baseline = Self.residentBytes()
        let start = ContinuousClock.now

        let (unfinished, notOnce) = await run(20_000)
        let seconds = (ContinuousClock.now - start).seconds
        await disk.flush()
        let peak = Self.residentBytes()

        // Every started load ended exactly once.
        #expect(unfinished == 0)
        #expect(notOnce == 0, "completions that ran other than once")
        #expect(wrong.withLock { $0 }.isEmpty, "\(wrong.withLock { $0.prefix(5) })")
        let (checked, bad) = Soak.verify(disk)
        #expect(bad.isEmpty, "damaged records: \(bad.prefix(5))")
        #expect(disk.statistics.totalSize <= 2 << 20)

        memory.removeAll()
        disk.removeAll()
        await disk.flush()
        try? await Task.sleep(for: .milliseconds(500))
        let after = Self.residentBytes()
        let summary = outcomes.withLock { $0 }
        print(String(
            format: "soak: 20,000 loads in %.1f s (%@), %d transfers to the server, %d records verified; resident memory %.1f MB before, %.1f MB at the end, %.1f MB after clearing the caches (%+.1f%%)",
            seconds, summary.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", "),
            (0..<images).reduce(0) { $0 + server.count(for: "/img/\($1)") }, checked, Double(baseline) / 1e6, Double(peak) / 1e6, Double(after) / 1e6,
            (Double(after) / Double(baseline) - 1) * 100))
        #expect(Double(after) <= Double(baseline) * 1.1, "memory did not come back within 10 % of its baseline")
    }
}
