import Foundation

/// Loads images ahead of need (the rows just below a scrolling list, say) at low
/// priority, so that they are in the memory cache when asked for, without delaying
/// what is on screen. Stopping cancels, and so does releasing the prefetcher; a
/// prefetch that an on-screen request joined keeps going for that request.
///
/// It reports how far it got as SDWebImage's and Kingfisher's prefetchers do: a
/// progress handler after each prefetch ends, a completion handler once everything
/// started has ended.
///
/// ```swift
/// let prefetcher = ImagePrefetcher(loader: loader)
/// prefetcher.progressHandler = { progress in
///     print("\(progress.finished) of \(progress.total), \(progress.failed) failed")
/// }
/// prefetcher.completionHandler = { progress in
///     print("done: \(progress.completed) images ready")
/// }
/// prefetcher.startPrefetching(with: urls)
/// ```
public final class ImagePrefetcher: Sendable {
    /// Where the prefetches stand that were started since the prefetcher was last
    /// idle (since it was made, or since the last completion).
    public struct Progress: Sendable, Hashable {
        /// Prefetches started: each request that was not already being prefetched.
        public var total = 0
        /// Ended with the image (memory-cache hits included).
        public var completed = 0
        /// Ended with an error.
        public var failed = 0
        /// Stopped by `stopPrefetching` (or by cancelling their load) before they ended.
        public var cancelled = 0

        /// Ended one way or another.
        public var finished: Int { completed + failed + cancelled }
        /// Whether every prefetch started has ended.
        public var isFinished: Bool { finished == total }

        /// Makes progress from its counts.
        package init(total: Int = 0, completed: Int = 0, failed: Int = 0, cancelled: Int = 0) {
            self.total = total
            self.completed = completed
            self.failed = failed
            self.cancelled = cancelled
        }
    }

    /// Where prefetched images are kept.
    public enum Destination: Sendable, Hashable {
        /// Decoded, in the memory tier (and the disk tier as any load keeps it):
        /// ready to show at once. The default.
        case memory
        /// The original bytes in the disk and shared tiers only, never decoded nor
        /// kept in memory: Kingfisher's and SDWebImage's disk-only prefetching, for
        /// images a later screen will want, at the cost of a file and no pixels.
        /// Needs a loader with a disk or shared tier.
        case disk
    }

    private struct Entry {
        var token: Int
        var task: ImageTask?
        var work: Task<Void, Never>?
        let request: ImageRequest
    }

    private struct State {
        var entries: [ImageCacheKey: Entry] = [:]
        var lastToken = 0
        var progress = Progress()
        var progressHandler: (@Sendable (Progress) -> Void)?
        var completionHandler: (@Sendable (Progress) -> Void)?
        var isPaused = false
        /// Prefetches counted but not started: asked for while paused, or stopped by
        /// a pause.
        var pending: [ImageCacheKey] = []
    }

    private let loader: ImageLoader
    private let priority: ImageRequest.Priority
    /// Where prefetched images are kept.
    public let destination: Destination
    private let state = Locked(State())
    /// Handlers run here, one at a time and in the order the prefetches ended: never
    /// under the prefetcher's lock, so a handler may start or stop prefetches.
    private let handlers = DispatchQueue(label: "Imago.ImagePrefetcher.handlers")

    /// Prefetches through `loader` at `priority` (low by default).
    public init(loader: ImageLoader = .shared, priority: ImageRequest.Priority = .low, destination: Destination = .memory) {
        self.loader = loader
        self.priority = priority
        self.destination = destination
    }

    /// Where the prefetches started since the prefetcher was last idle stand now.
    public var progress: Progress { state.withLock { $0.progress } }

    /// Whether prefetching is paused (`pause()`).
    public var isPaused: Bool { state.withLock { $0.isPaused } }

    /// Stops the prefetches in flight without forgetting them, and holds those asked
    /// for from now on, until `resume()`: while the user scrolls fast, or the app is
    /// in the background. Their counts are not touched: they are neither cancelled
    /// nor finished. A prefetch an on-screen request joined goes on for it.
    public func pause() {
        let stopped = state.withLock { state -> [ImageTask] in
            guard !state.isPaused else { return [] }
            state.isPaused = true
            var stopped: [ImageTask] = []
            for (key, entry) in state.entries where entry.task != nil || entry.work != nil {
                state.lastToken += 1
                state.entries[key] = Entry(token: state.lastToken, request: entry.request)
                state.pending.append(key)
                if let task = entry.task { stopped.append(task) }
                entry.work?.cancel()
            }
            return stopped
        }
        loader.cancel(stopped)
    }

    /// Starts again what `pause()` held.
    public func resume() {
        let resumed = state.withLock { state -> [(ImageRequest, ImageCacheKey, Int)] in
            guard state.isPaused else { return [] }
            state.isPaused = false
            defer { state.pending = [] }
            return state.pending.compactMap { key in state.entries[key].map { ($0.request, key, $0.token) } }
        }
        start(resumed)
    }

    deinit {
        stopPrefetching()
    }

    /// Called after each prefetch ends, with the counts so far; on a serial queue of
    /// the prefetcher's own, in order. Nil by default.
    public var progressHandler: (@Sendable (Progress) -> Void)? {
        get { state.withLock { $0.progressHandler } }
        set { state.withLock { $0.progressHandler = newValue } }
    }

    /// Called when every prefetch started has ended (after the last progress), with
    /// the final counts, which then start again from zero; on the same queue as
    /// `progressHandler`. Nil by default.
    public var completionHandler: (@Sendable (Progress) -> Void)? {
        get { state.withLock { $0.completionHandler } }
        set { state.withLock { $0.completionHandler = newValue } }
    }

    /// Starts loading `requests` that are not already being prefetched.
    public func startPrefetching(with requests: [ImageRequest]) {
        // All are counted before any starts, so that one ending at once (a memory
        // hit) cannot complete the round while the others are still to come.
        let started = state.withLock { state in
            requests.compactMap { request -> (ImageRequest, ImageCacheKey, Int)? in
                var request = request
                request.priority = priority
                let key = request.cacheKey
                guard state.entries[key] == nil else { return nil }
                state.lastToken += 1
                state.entries[key] = Entry(token: state.lastToken, request: request)
                state.progress.total += 1
                if state.isPaused {
                    state.pending.append(key)
                    return nil
                }
                return (request, key, state.lastToken)
            }
        }
        start(started)
    }

    private func start(_ started: [(ImageRequest, ImageCacheKey, Int)]) {
        for (request, key, token) in started {
            if destination == .disk {
                startKeepingData(request, key: key, token: token)
                continue
            }
            let task = loader.task(with: request) { [weak self] result in
                self?.ended(key, token: token, with: result.map { _ in () })
            }
            // Ended already (a memory hit), or stopped while being made: a finished
            // task ignores the cancel.
            let kept = state.withLock { state -> Bool in
                guard state.entries[key]?.token == token else { return false }
                state.entries[key]?.task = task
                return true
            }
            if !kept { loader.cancel([task]) }
        }
    }

    /// Fetches the original into the disk and shared tiers, without decoding it or
    /// keeping it in memory.
    private func startKeepingData(_ request: ImageRequest, key: ImageCacheKey, token: Int) {
        var request = request
        request.cachePolicy.writes.subtract([.memory, .recentOriginals])
        request.cachePolicy.reads.subtract([.memory, .recentOriginals])
        let work = Task { [weak self, loader, request] in
            let result: Result<Void, ImagoError>
            do {
                _ = try await loader.data(for: request)
                result = .success(())
            } catch let error as ImagoError {
                result = .failure(error)
            } catch {
                result = .failure(.cancelled)
            }
            self?.ended(key, token: token, with: result)
        }
        let kept = state.withLock { state -> Bool in
            guard state.entries[key]?.token == token else { return false }
            state.entries[key]?.work = work
            return true
        }
        if !kept { work.cancel() }
    }

    /// Starts loading the images at `urls`.
    package func startPrefetching(with urls: [URL]) {
        startPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops prefetching `requests`.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let stopped = state.withLock { state in
            requests.compactMap { request -> ImageTask? in
                let entry = state.entries.removeValue(forKey: request.cacheKey)
                entry?.work?.cancel()
                return entry?.task
            }
        }
        loader.cancel(stopped)
    }

    /// Stops prefetching the images at `urls`.
    package func stopPrefetching(with urls: [URL]) {
        stopPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let stopped = state.withLock { state in
            defer { state.entries = [:] }
            for entry in state.entries.values { entry.work?.cancel() }
            return state.entries.values.compactMap(\.task)
        }
        loader.cancel(stopped)
    }

    /// How many prefetches are running or queued.
    package var count: Int { state.withLock { $0.entries.count } }

    /// Counts a prefetch that ended, and tells the handlers.
    private func ended(_ key: ImageCacheKey, token: Int, with result: Result<Void, ImagoError>) {
        state.withLock { state in
            if let entry = state.entries[key] {
                // Stopped by a pause: it starts again on `resume()`, and counts then.
                guard entry.token == token else { return }
                state.entries[key] = nil
            }
            switch result {
            case .success: state.progress.completed += 1
            case .failure(.cancelled): state.progress.cancelled += 1
            case .failure: state.progress.failed += 1
            }
            let progress = state.progress
            let (onProgress, onCompletion) = (state.progressHandler, progress.isFinished ? state.completionHandler : nil)
            if progress.isFinished { state.progress = Progress() }
            // Queued under the lock, so the handlers hear the prefetches in the order
            // they were counted.
            if onProgress != nil || onCompletion != nil {
                handlers.async {
                    onProgress?(progress)
                    onCompletion?(progress)
                }
            }
        }
    }
}
