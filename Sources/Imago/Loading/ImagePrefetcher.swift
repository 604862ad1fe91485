import Foundation

/// Loads images ahead of need (the rows just below a scrolling list, say) at low
/// priority, so that they are in the memory cache when asked for, without delaying
/// what is on screen. Stopping cancels, and so does releasing the prefetcher; a
/// prefetch that an on-screen request joined keeps going for that request.
public final class ImagePrefetcher: Sendable {
    private let loader: ImageLoader
    private let priority: ImageRequest.Priority
    private let tasks = Locked<[ImageCacheKey: ImageTask]>([:])

    /// Prefetches through `loader` at `priority` (low by default).
    public init(loader: ImageLoader = .shared, priority: ImageRequest.Priority = .low) {
        self.loader = loader
        self.priority = priority
    }

    deinit {
        stopPrefetching()
    }

    /// Starts loading `requests` that are not already being prefetched.
    public func startPrefetching(with requests: [ImageRequest]) {
        for var request in requests {
            request.priority = priority
            let key = request.cacheKey
            guard tasks.withLock({ $0[key] == nil }) else { continue }
            let task = loader.task(with: request)
            guard !task.isFinished else { continue }
            tasks.withLock { $0[key] = task }
            Task { [weak self] in
                _ = await task.value
                self?.tasks.withLock { if $0[key] === task { $0[key] = nil } }
            }
        }
    }

    /// Starts loading the images at `urls`.
    public func startPrefetching(with urls: [URL]) {
        startPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops prefetching `requests`.
    public func stopPrefetching(with requests: [ImageRequest]) {
        let stopped = tasks.withLock { tasks in requests.compactMap { tasks.removeValue(forKey: $0.cacheKey) } }
        loader.cancel(stopped)
    }

    /// Stops prefetching the images at `urls`.
    public func stopPrefetching(with urls: [URL]) {
        stopPrefetching(with: urls.map { ImageRequest(url: $0) })
    }

    /// Stops every prefetch.
    public func stopPrefetching() {
        let stopped = tasks.withLock { tasks in
            defer { tasks = [:] }
            return Array(tasks.values)
        }
        loader.cancel(stopped)
    }

    /// How many prefetches are running or queued.
    public var count: Int { tasks.withLock { $0.count } }
}
