#if os(Linux)
import Foundation
import Glibc
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// Decoding and processing below the main thread's priority on Linux while the user
/// interacts: the nice value of the threads they run on.
@Suite struct DecodingPriorityTests {
    /// The calling thread's nice value.
    static func currentNice() -> Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(LinuxThreads.currentID))
    }

    /// The process's main thread's nice value, the one the pools count from.
    static var processNice: Int32 {
        getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
    }

    /// Notes the nice value of the thread it processes on.
    struct NiceRecorder: ImageProcessing {
        let seen: Locked<[Int32]>
        var identifier: String { "test.nice-recorder" }
        func process(_ bitmap: Bitmap) -> Bitmap {
            seen.withLock { $0.append(DecodingPriorityTests.currentNice()) }
            return bitmap
        }
    }

    private func processingNice(yielding: Bool = true) async throws -> [Int32] {
        let network = ControlledLoader()
        var configuration = ImageLoaderConfiguration(dataLoader: network, retryPolicy: .none)
        configuration.decodingYieldsToInteraction = yielding
        let loader = ImageLoader(configuration: configuration, cache: ImageCache())
        let seen = Locked<[Int32]>([])
        let url = PipelineTests.url(1)
        let task = loader.task(with: ImageRequest(url: url, processors: [NiceRecorder(seen: seen)]))
        await waitUntil { network.seen.started.count == 1 }
        network.release(url, with: PipelineTests.answer(url))
        _ = try await task.response
        return seen.withLock { $0 }
    }

    // One test, so that no other test of the suite ends the interaction in the
    // middle of it; the interaction is marked for an hour, so that a slow machine
    // never sees it end before the decode starts.
    @Test func processingRunsBelowTheMainThreadWhileTheUserInteracts() async throws {
        #expect(ImageLoaderConfiguration().decodingYieldsToInteraction)
        defer { UserInteraction.endNow() }
        UserInteraction.endNow()
        // `userInitiated`: the main thread's nice value, or -2 for a privileged process.
        let idle = try #require(try await processingNice().first)
        #expect(idle <= Self.processNice)
        UserInteraction.note(lasting: 3600)
        #expect(try await processingNice() == [max(idle, 10)])
        #expect(try await processingNice(yielding: false) == [idle])
    }
}
#endif
