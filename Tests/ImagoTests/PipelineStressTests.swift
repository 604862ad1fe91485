import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Many threads at once against one pipeline: loads of a few URLs at several sizes
/// and processings, cancelled and re-prioritised at random while transfers and
/// decodes finish. Every task must end, exactly once. Run under `make sanitize`, the
/// thread sanitizer sees every access to the stages' state that the lock should
/// guard.
@Suite struct PipelineStressTests {
    @Test func threadsLoadingCancellingAndReprioritisingAtOnce() async throws {
        // Transfers that answer after a random moment, so answers race with the
        // threads' cancellations.
        let photo = pngData(90, width: 8, height: 8)
        let jittery = ControlledLoader(script: .init(pause: .zero ... .microseconds(300)) { _ in photo })
        let loader = ImageLoader(configuration: .init(dataLoader: jittery, concurrentDecodes: 2), cache: ImageCache())
        loader.concurrentLoads = 3
        let threads = 6, operations = 400
        let tasks = Locked<[ImageTask]>([])
        let done = DispatchGroup()
        for _ in 0..<threads {
            done.enter()
            Thread {
                var mine: [ImageTask] = []
                for _ in 0..<operations {
                    let url = URL(string: "http://127.0.0.1:9/\(Int.random(in: 0..<12)).png")!
                    let size: TargetSize? = [nil, .thumbnail(2), .thumbnail(4)].randomElement()!
                    let processors: [any ImageProcessing] = Bool.random() ? [] : [ImageProcessors.Circle()]
                    let priority = ImageRequest.Priority.allCases.randomElement()!
                    let task = loader.task(with: ImageRequest(url: url, targetSize: size, processors: processors, priority: priority))
                    mine.append(task)
                    switch Int.random(in: 0..<10) {
                    case 0..<3: mine.randomElement()?.cancel()
                    case 3..<5: mine.randomElement()?.priority = ImageRequest.Priority.allCases.randomElement()!
                    case 5: loader.cache?.removeAll()
                    default: break
                    }
                }
                tasks.withLock { $0 += mine }
                done.leave()
            }.start()
        }
        await withCheckedContinuation { continuation in done.notify(queue: .global()) { continuation.resume() } }
        let all = tasks.withLock { $0 }
        let outcomes = await withTimeLimit(120) {
            var succeeded = 0, cancelled = 0, failed: [String] = []
            for task in all {
                switch await task.value {
                case .success: succeeded += 1
                case .failure(.cancelled): cancelled += 1
                case .failure(let error): failed.append("\(error)")
                }
            }
            return (succeeded, cancelled, failed)
        }
        let (succeeded, cancelled, failed) = try #require(outcomes, "some tasks never ended")
        #expect(failed.isEmpty)
        #expect(succeeded + cancelled == threads * operations)
        #expect(succeeded > 0)
        #expect(loader.queuedCount == 0)
    }
}
