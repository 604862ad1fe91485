import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// The stages of a load: one original per image key, shared by every size and
/// processing of it; each stage coalesced, stopped by its last subscriber, and run
/// at its most urgent subscriber's priority.
@Suite struct PipelineTests {
    let network = ControlledLoader()
    let loader: ImageLoader
    /// An 8×8 image, so that sizes differ.
    static let photo = pngData(60, width: 8, height: 8)

    init() {
        loader = ImageLoader(configuration: .init(dataLoader: network, retryPolicy: .none), cache: ImageCache())
    }

    static func url(_ n: Int) -> URL { ImageLoaderTests.url(n) }

    static func answer(_ url: URL, headers: [String: String] = [:]) -> Result<DataResponse, ImagoError> {
        .success(DataResponse(data: photo, url: url, statusCode: 200, headers: headers))
    }

    @Test func aThumbnailAndTheFullImageOfOneURLShareOneTransfer() async throws {
        let url = Self.url(1)
        let full = loader.task(with: ImageRequest(url: url))
        let thumbnail = loader.task(with: ImageRequest(url: url, targetSize: .thumbnail(4)))
        let circle = loader.task(with: ImageRequest(url: url, targetSize: .thumbnail(4), processors: [ImageProcessors.Circle()]))
        await waitUntil { network.seen.started.count == 1 }
        network.release(url, with: Self.answer(url))
        #expect(try await full.response.image.width == 8)
        #expect(try await thumbnail.response.image.width == 4)
        #expect(try await circle.response.image.width == 4)
        #expect(network.started == [url.absoluteString])
        // Each result is in the memory cache under its own key.
        for task in [full, thumbnail, circle] { #expect(loader.cachedImage(for: task.request) != nil) }
    }

    @Test func threeSizesOfAnOriginalOnDiskReadItOnce() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-stages-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        let disk = DiskCache(directory: directory)
        func makeLoader() -> ImageLoader {
            ImageLoader(configuration: .init(dataLoader: network, diskCache: disk, storagePolicy: .originals), cache: ImageCache())
        }
        let url = Self.url(2)
        network.answer(url, with: Self.answer(url, headers: ["Cache-Control": "max-age=3600"]))
        _ = try await makeLoader().image(for: url)
        await disk.flush()

        // A restarted app: the memory cache is empty, the original fresh on disk. A
        // held slot keeps the stage queued until all three sizes have joined it.
        let loader = makeLoader()
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: Self.url(99)))
        await waitUntil { network.seen.started.count == 2 }
        let before = disk.statistics.hits + disk.statistics.misses
        let tasks = [nil, 2, 4].map { size in
            loader.task(with: ImageRequest(url: url, targetSize: size.map { .thumbnail($0) }))
        }
        network.release(Self.url(99), with: ok(Self.url(99)))
        _ = try await blocker.response
        let responses = try await [tasks[0].response, tasks[1].response, tasks[2].response]
        #expect(responses.map(\.image.width) == [8, 2, 4])
        #expect(responses.allSatisfy { $0.source == .disk })
        #expect(disk.statistics.hits + disk.statistics.misses - before == 1)
        #expect(network.started.count == 2)
    }

    @Test func aFragmentIsNeverMistakenForASize() async throws {
        let plain = URL(string: "http://127.0.0.1:9/a.png")!
        let fragment = URL(string: "http://127.0.0.1:9/a.png#fit-4x4")!
        network.answer(plain, with: Self.answer(plain))
        network.answer(fragment, with: Self.answer(fragment))
        let thumbnail = try await loader.image(for: ImageRequest(url: plain, targetSize: .thumbnail(4)))
        #expect(thumbnail.image.width == 4)
        let full = try await loader.image(for: ImageRequest(url: fragment))
        #expect(full.image.width == 8 && full.source == .network)

        // No choice of parts makes two keys, or two disk names, the same.
        let keys = [
            ImageCacheKey(imageKey: "a", processing: ["b|c"]),
            ImageCacheKey(imageKey: "a", processing: ["b", "c"]),
            ImageCacheKey(imageKey: "a#fit-4x4"),
            ImageCacheKey(imageKey: "a", targetSize: .thumbnail(4)),
            ImageCacheKey(imageKey: "a", processing: ["fit-4x4"]),
            ImageCacheKey(imageKey: "1:a", processing: []),
            ImageCacheKey(imageKey: "", processing: ["a"]),
        ]
        #expect(Set(keys).count == keys.count)
        let variants = Set(keys.map(\.variantRecordName))
        let originals = Set(keys.map { ImageCacheKey.originalRecordName($0.imageKey) })
        #expect(variants.count == keys.count)
        #expect(originals.count == Set(keys.map(\.imageKey)).count)
        #expect(variants.isDisjoint(with: originals))
    }

    @Test func cancellingOneOfTwoSubscribersKeepsTheStageRunningTheLastStopsIt() async throws {
        // Two sizes: two image stages on one original stage.
        let kept = Self.url(3)
        let leaving = loader.task(with: ImageRequest(url: kept))
        let staying = loader.task(with: ImageRequest(url: kept, targetSize: .thumbnail(2)))
        await waitUntil { network.seen.started.count == 1 }
        leaving.cancel()
        guard case .failure(.cancelled)? = leaving.result else { Issue.record("not cancelled: \(String(describing: leaving.result))"); return }
        network.release(kept, with: Self.answer(kept))
        #expect(try await staying.response.image.width == 2)
        #expect(network.cancelled.isEmpty)

        let stopped = Self.url(4)
        let first = loader.task(with: ImageRequest(url: stopped))
        let second = loader.task(with: ImageRequest(url: stopped, targetSize: .thumbnail(2)))
        await waitUntil { network.seen.started.count == 2 }
        first.cancel()
        second.cancel()
        await waitUntil { network.seen.cancelled == [stopped.absoluteString] }
        // The freed slot serves the next load.
        loader.concurrentLoads = 1
        let next = loader.task(with: ImageRequest(url: Self.url(5)))
        await waitUntil { network.seen.started.count == 3 }
        network.release(Self.url(5), with: Self.answer(Self.url(5)))
        _ = try await next.response
    }

    @Test func priorityFlowsDownToTheTransfer() async throws {
        loader.concurrentLoads = 1
        let blocker = loader.task(with: ImageRequest(url: Self.url(0)))
        await waitUntil { network.seen.started.count == 1 }
        let normal = loader.task(with: ImageRequest(url: Self.url(1)))
        let thumbnail = loader.task(with: ImageRequest(url: Self.url(2), targetSize: .thumbnail(2), priority: .low))
        let circle = loader.task(with: ImageRequest(
            url: Self.url(2), targetSize: .thumbnail(2), processors: [ImageProcessors.Circle()], priority: .veryLow))
        // The processed image's stage, then the decoded one, then the transfer.
        circle.priority = .veryHigh
        for n in 1...2 { network.answer(Self.url(n), with: Self.answer(Self.url(n))) }
        network.release(Self.url(0), with: ok(Self.url(0)))
        for task in [blocker, normal, thumbnail, circle] { _ = try await task.response }
        #expect(network.started == [0, 2, 1].map { Self.url($0).absoluteString })
    }

    @Test func processingStartsFromTheDecodedImageInMemory() async throws {
        let url = Self.url(6)
        network.answer(url, with: Self.answer(url))
        _ = try await loader.image(for: ImageRequest(url: url, targetSize: .thumbnail(4)))
        let circle = try await loader.image(for: ImageRequest(url: url, targetSize: .thumbnail(4), processors: [ImageProcessors.Circle()]))
        #expect(circle.image.width == 4 && circle.source == .memory)
        #expect(network.started == [url.absoluteString])
    }

    @Test func asyncCallsThrowCancellationErrorWhenCancelled() async throws {
        let url = Self.url(7)
        let call = Task { try await loader.image(for: url) }
        await waitUntil { network.seen.started.count == 1 }
        call.cancel()
        await #expect(throws: CancellationError.self) { try await call.value }
        await waitUntil { network.seen.cancelled == [url.absoluteString] }

        // A Swift task awaiting an image task's response stops waiting at once when
        // it is cancelled, and the image task is cancelled with it.
        let other = Self.url(8)
        let task = loader.task(with: ImageRequest(url: other))
        let waiter = Task { try await task.response }
        await waitUntil { network.seen.started.count == 2 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        await waitUntil { network.seen.cancelled.count == 2 }
        guard case .failure(.cancelled)? = task.result else { Issue.record("\(String(describing: task.result))"); return }

        // Cancelling the image task itself does the same to its awaiters.
        let third = loader.task(with: ImageRequest(url: Self.url(9)))
        let awaiting = Task { try await third.response }
        await waitUntil { network.seen.started.count == 3 }
        third.cancel()
        await #expect(throws: CancellationError.self) { try await awaiting.value }
    }

    @Test func aReleasedPrefetcherStopsItsLoads() async throws {
        var prefetcher: ImagePrefetcher? = ImagePrefetcher(loader: loader)
        prefetcher?.startPrefetching(with: [Self.url(1), Self.url(2)])
        await waitUntil { network.seen.started.count == 2 }
        prefetcher = nil
        await waitUntil { Set(network.seen.cancelled) == [Self.url(1).absoluteString, Self.url(2).absoluteString] }
    }
}
