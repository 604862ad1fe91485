import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// A load looks in the memory tier and the memories of recent loads before it takes
/// the pipeline's lock. When the one load of the same image finishes in between,
/// storing its image or its failure after the look-up, the late load must still not
/// ask the server again. Here the look-up is held still until the first load has
/// finished, as a thread preempted at that point would be on a busy machine; the
/// thousand-request and repeated-list tests meet the same moment by chance, under
/// load, against the same real server.
@Suite struct LookUpRaceTests {
    let server = TestServer()

    init() throws {
        try server.start()
    }

    /// A memory tier whose look-up of one key, once armed for a thread (or for any
    /// thread but one), answers what it found there only after `settled` says the
    /// first load has finished. Other look-ups pass.
    final class StalledLookUp: ImageCaching {
        let inner = ImageCache()
        /// The key, and the thread whose look-up of it stalls (`onIt`), or the one
        /// thread whose look-ups of it pass.
        let armed = Locked<(key: ImageCacheKey, thread: UInt, onIt: Bool)?>(nil)
        let stalls = Locked(0)
        /// Signalled as a look-up stalls.
        let stalled = DispatchSemaphore(value: 0)
        /// Stalled look-ups that had found nothing.
        let missed = Locked(0)
        let settled = Locked<(@Sendable () -> Bool)?>(nil)

        func image(forKey key: ImageCacheKey) -> DecodedImage? {
            let found = inner.image(forKey: key)
            guard armed.withLock({ armed in
                guard let stall = armed, stall.key == key, (stall.thread == Self.thisThread) == stall.onIt else { return false }
                armed = nil
                return true
            }) else { return found }
            stalls.withLock { $0 += 1 }
            if found == nil { missed.withLock { $0 += 1 } }
            stalled.signal()
            let deadline = Date().addingTimeInterval(20)
            while !(settled.withLock { $0 }?() ?? true), Date() < deadline { usleep(1_000) }
            return found
        }

        /// The calling thread, as a number (`pthread_t` is a pointer on Apple platforms).
        static var thisThread: UInt {
            #if canImport(Darwin)
            UInt(bitPattern: pthread_self())
            #else
            UInt(pthread_self())
            #endif
        }

        func setImage(_ image: DecodedImage, forKey key: ImageCacheKey) { inner.setImage(image, forKey: key) }
        func removeImage(forKey key: ImageCacheKey) { inner.removeImage(forKey: key) }
        func removeAll() { inner.removeAll() }
    }

    /// Starts a load of `request` once the first is running, with the look-up of `key`
    /// held until the first has finished and left the pipeline.
    func lateLoad(
        _ request: ImageRequest, stalling key: ImageCacheKey, loader: ImageLoader, cache: StalledLookUp
    ) async -> Result<ImageResponse, ImagoError>? {
        let pipeline = loader.pipeline
        cache.settled.withLock { $0 = { pipeline.stagesInFlight == 0 } }
        // On a thread of its own: a stalled look-up must not hold one of the few
        // threads of the concurrency pool, which the first load's transfer needs.
        let task = await withCheckedContinuation { (continuation: CheckedContinuation<ImageTask, Never>) in
            Thread.detachNewThread {
                cache.armed.withLock { $0 = (key, StalledLookUp.thisThread, true) }
                continuation.resume(returning: loader.task(with: request))
            }
        }
        return await withTimeLimit(30) { await task.value }
    }

    @Test func aLoadWhoseLookUpMissedJustBeforeTheImageWasStoredTakesItFromMemory() async throws {
        defer { server.stop() }
        server.route("/slow.png") { _ in .trickle(pngData(90, width: 8, height: 8), bytesPerChunk: 32, interval: 0.02) }
        let cache = StalledLookUp()
        let loader = ImageLoader(configuration: .init(recentOriginals: nil), cache: cache)
        let request = ImageRequest(url: server.url("/slow.png"))
        let first = loader.task(with: request)
        await waitUntil { server.count(for: "/slow.png") == 1 }
        let late = await lateLoad(request, stalling: request.cacheKey, loader: loader, cache: cache)
        #expect(try await first.response.image.bitmap[0, 0].r == 90)
        #expect(cache.stalls.withLock { $0 } == 1)
        #expect((try? late?.get())?.source == .memory)
        #expect(server.count(for: "/slow.png") == 1)
    }

    @Test func aLoadWhoseLookUpMissedJustBeforeAFailureWasRememberedMeetsIt() async throws {
        defer { server.stop() }
        server.route("/page.png") { _ in .trickle(Data("<html>not an image</html>".utf8), bytesPerChunk: 4, interval: 0.02) }
        let cache = StalledLookUp()
        let loader = ImageLoader(configuration: .init(recentOriginals: nil), cache: cache)
        // A processed image looks for the decoded one it builds on in the memory tier
        // after it has asked the memory of failures: the last look-up before the lock.
        let request = ImageRequest(url: server.url("/page.png"), targetSize: .thumbnail(4), processors: [ImageProcessors.Circle()])
        let first = loader.task(with: request)
        await waitUntil { server.count(for: "/page.png") == 1 }
        let late = await lateLoad(request, stalling: request.cacheKey.decodedKey, loader: loader, cache: cache)
        let error = await first.value.failure
        #expect(error != nil)
        #expect(cache.stalls.withLock { $0 } == 1)
        #expect(late?.failure == error)
        #expect(server.count(for: "/page.png") == 1)
    }

    /// The same moment for a stage rather than a load: a processed image's stage, once
    /// no stored variant answered it, looks for the decoded image it builds on in the
    /// memory tier before the lock, on a pipeline thread. When the one decode of that
    /// image finishes in between, the stage must build on it rather than decode again
    /// (from the disk tier, which keeps originals alongside variants).
    @Test func aStageWhoseLookUpMissedJustBeforeTheImageItBuildsOnWasStoredTakesItFromMemory() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("imago-look-up-\(UUID())")
        defer {
            server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let cache = StalledLookUp()
        // The server answers the first load once the stage's look-up has stalled, so
        // that look-up misses however long the stage takes to come to it on a busy
        // machine (a slow answer alone was not always slow enough).
        server.route("/slow.png") { _ in
            _ = cache.stalled.wait(timeout: .now() + 20)
            return .ok(pngData(90, width: 8, height: 8), headers: ["Cache-Control": "max-age=3600"])
        }
        // Two decoding slots: the stalled stage holds one, the first load's decode
        // takes the other.
        let loader = ImageLoader(
            configuration: .init(diskCache: DiskCache(directory: directory), storagePolicy: .both, concurrentDecodes: 2, recentOriginals: nil),
            cache: cache)
        let plain = ImageRequest(url: server.url("/slow.png"), targetSize: .thumbnail(4))
        let processed = ImageRequest(url: server.url("/slow.png"), targetSize: .thumbnail(4), processors: [ImageProcessors.Circle()])
        let first = loader.task(with: plain)
        await waitUntil { server.count(for: "/slow.png") == 1 }
        cache.settled.withLock { $0 = { first.isFinished } }
        // The load's own look-ups, on this thread, pass; the stage's, after its
        // variant missed, stalls.
        cache.armed.withLock { $0 = (plain.cacheKey, StalledLookUp.thisThread, false) }
        let late = loader.task(with: processed)
        #expect(try await first.response.image.bitmap[0, 0].r == 90)
        let response = await withTimeLimit(30) { await late.value }
        #expect(cache.stalls.withLock { $0 } == 1 && cache.missed.withLock { $0 } == 1)
        #expect((try? response?.get())?.source == .memory)
        #expect(server.count(for: "/slow.png") == 1)
    }
}
