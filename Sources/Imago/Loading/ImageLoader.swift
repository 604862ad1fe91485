import Foundation

/// Loads images: the public face of Imago's pipeline.
///
/// A request is answered from the memory cache at once when it can be. Otherwise it
/// joins the pipeline's stages: the original data of its image key (one transfer
/// and one disk read for every size and processing of that key in flight), the
/// image decoded at its size, then processed. Each stage is shared by every request
/// that needs it, runs at the highest of their priorities, and stops when the last
/// of them is cancelled. At most `concurrentLoads` transfers run at a time, highest
/// priority first, and at most `Configuration.concurrentDecodes` decodes, off the
/// caller's thread; each transfer is bounded as a whole (disk, network, retries) by
/// `loadingTimeout`.
///
/// Safe from any thread. The target/action calls modelled on AsyncImageView live in
/// `ImageTargetLoader`, on top of this type's public API.
///
/// ```swift
/// let url = URL(string: "https://example.com/cat.jpg")!
/// let response = try await ImageLoader.shared.image(for: ImageRequest(url: url, targetSize: .thumbnail(256)))
/// print(response)          // "jpeg 256×171, 1 frame, from network"
///
/// // A task to cancel or hurry along, its completion called on any thread:
/// let task = ImageLoader.shared.task(with: ImageRequest(url: url)) { result in print(result) }
/// task.priority = .high
///
/// // A loader of one's own: its own memory cache, a disk tier in a folder of its own.
/// let disk = DiskCache(directory: URL(fileURLWithPath: "/var/cache/thumbnails"))
/// let loader = ImageLoader(configuration: .init(diskCache: disk), cache: ImageCache())
/// ```
public final class ImageLoader: Sendable {
    /// Settings fixed when a loader is made.
    public typealias Configuration = ImageLoaderConfiguration
    /// The files of recent network loads, answering repeats of a URL.
    public typealias RecentOriginals = RecentOriginalFiles
    /// Failed loads, answering repeats of a URL at once.
    public typealias RecentFailures = RecentLoadFailures

    /// The loader most apps use: the shared memory cache and the shared disk cache
    /// in the platform's cache directory.
    public static let shared = ImageLoader(configuration: Configuration(diskCache: .shared))

    /// The configuration it was made with.
    public let configuration: Configuration

    let pipeline: Pipeline
    private let networkConstrained = Locked(false)

    /// Makes a loader whose memory tier is the configuration's `memoryTier`:
    /// `ImageCache.shared` by default (see `Configuration.init` for why the memory
    /// tier is shared and the disk tier is not).
    ///
    /// ```swift
    /// let appLoader = ImageLoader()                            // shared memory, no disk
    /// let jobLoader = ImageLoader(configuration: .server())    // disk, small memory, 8 at once
    /// ```
    public convenience init(configuration: Configuration = Configuration()) {
        self.init(configuration: configuration, cache: configuration.memoryTier.makeCache())
    }

    /// Makes a loader storing images in `cache` (nil for no caching at all, memory
    /// or disk).
    public init(configuration: Configuration = Configuration(), cache: (any ImageCaching)?) {
        self.configuration = configuration
        pipeline = Pipeline(configuration: configuration, cache: cache)
    }

    // MARK: - Settings

    /// The memory cache loads use; nil turns caching off altogether, as
    /// AsyncImageLoader's `cache = nil` does: no memory tier, and neither the disk
    /// and shared tiers nor the memories of recent originals and failures are read
    /// or written. A new value applies to the requests made after it is set.
    public var cache: (any ImageCaching)? {
        get { pipeline.cache }
        set { pipeline.cache = newValue }
    }

    /// How many transfers run at once: `Configuration.concurrentLoads` at first (2
    /// by default, as in AsyncImageView). Raising it starts queued transfers at once.
    public var concurrentLoads: Int {
        get { pipeline.limit(of: .transfers) }
        set { pipeline.setLimit(newValue, of: .transfers) }
    }

    /// The most seconds one load may take, from the call that starts it to its image
    /// (60 by default, as AsyncImageView's `loadingTimeout`); `.infinity` for no
    /// limit. The wait for a free slot, the disk look-up, the transfer with its
    /// retries and the decode share it: past it the load fails with `timedOut`, and
    /// work nobody else waits for stops (a decode with `decodingTimedOut`, checked
    /// as it goes). Loads joining one transfer each keep their own deadline; the
    /// shared work runs until the latest. A change applies to loads started after it.
    public var loadingTimeout: Double {
        get { pipeline.loadingTimeout }
        set { pipeline.loadingTimeout = newValue.isNaN ? 60 : max(0.001, newValue) }
    }

    /// How many transfers are waiting for a free slot.
    public var queuedCount: Int { pipeline.queuedTransfers }

    // MARK: - Loading

    /// Starts loading `request` and returns its task at once.
    ///
    /// A memory-cache hit completes the task before this returns. The request's
    /// alternative URLs are tried in turn after a failure, and its constrained URL
    /// first while `isNetworkConstrained`, all within this one task: the response's
    /// `url` says which answered.
    @discardableResult
    public func task(with request: ImageRequest) -> ImageTask {
        makeTask(request, completion: nil)
    }

    /// Starts loading `request`, calling `completion` once with the outcome, on any
    /// thread: before this returns for a memory-cache hit or an invalid URL, with
    /// `ImagoError.cancelled` when the task is cancelled.
    @discardableResult
    public func task(
        with request: ImageRequest, completion: @escaping @Sendable (Result<ImageResponse, ImagoError>) -> Void
    ) -> ImageTask {
        makeTask(request, completion: completion)
    }

    /// Loads `request`. Throws `ImagoError`, or `CancellationError` when the calling
    /// task is cancelled (which cancels the load).
    ///
    /// The request's alternative URLs are tried in turn after a failure, and its
    /// constrained URL first while `isNetworkConstrained`; the response's `url` says
    /// which answered, and the last failure is thrown when none did.
    public func image(for request: ImageRequest) async throws -> ImageResponse {
        try await task(with: request).response
    }

    /// Whether the network is constrained (Low Data Mode, a metered link), as the app
    /// learns it from the system: requests with a `constrainedURL` load it first
    /// while this is true. False at first.
    public var isNetworkConstrained: Bool {
        get { networkConstrained.withLock { $0 } }
        set { networkConstrained.withLock { $0 = newValue } }
    }

    /// Runs `load` for each URL of `request` in turn until one succeeds; a
    /// cancellation ends the tries at once.
    func firstSuccess<Value>(of request: ImageRequest, _ load: (ImageRequest) async throws -> Value) async throws -> Value {
        let candidates = request.candidates(networkIsConstrained: isNetworkConstrained)
        var lastError: (any Error)?
        for candidate in candidates {
            do {
                return try await load(candidate)
            } catch is CancellationError {
                throw CancellationError()
            } catch ImagoError.cancelled {
                throw CancellationError()
            } catch {
                lastError = error
                if Task.isCancelled { throw CancellationError() }
            }
        }
        throw lastError ?? ImagoError.invalidURL(request.url.absoluteString)
    }

    /// Loads the image at `url`.
    public func image(for url: URL) async throws -> ImageResponse {
        try await image(for: ImageRequest(url: url))
    }

    /// The image for `request` if the memory cache has it; `cachedResponse(for:)`
    /// looks on disk too.
    public func cachedImage(for request: ImageRequest) -> DecodedImage? {
        cache?.image(forKey: request.cacheKey)
    }

    /// The image for `request` from the memory cache, else from the disk tier, never
    /// from the network: what an app shows offline, or a tool finds of an earlier run.
    /// Nil when neither tier has it.
    ///
    /// The disk tier answers with the stored variant of the request's size and
    /// processing when it keeps one, else with its stored original, decoded at that
    /// size and processed (off the caller's thread); the image then goes into the
    /// memory cache. It answers whatever the image's HTTP freshness: this asks what
    /// is kept, where `image(for:)` asks the server when the headers say to.
    public func cachedResponse(for request: ImageRequest) async -> ImageResponse? {
        if let image = cachedImage(for: request) {
            return ImageResponse(image: image, url: request.url, source: .memory, metrics: ImageResponse.Metrics())
        }
        let pipeline = pipeline
        let found = await DispatchQueue.global(qos: .userInitiated).value { pipeline.storedImage(for: request) }
        guard let (image, metrics) = found else { return nil }
        cache?.setImage(image, forKey: request.cacheKey)
        return ImageResponse(image: image, url: request.url, source: .disk, metrics: metrics)
    }

    /// Waits until the work loads leave running in the background has ended, or
    /// `seconds` have passed: revalidations of stale images that
    /// `stale-while-revalidate` let a load answer meanwhile, whose answers the disk
    /// tier keeps for the next load. A command-line tool calls it before it exits
    /// (then `DiskCache.flush()`), so that what it learned is not lost with the
    /// process; an app need not. Returns whether all of it ended.
    @discardableResult
    package func waitForBackgroundWork(timeout seconds: Double) async -> Bool {
        await pipeline.backgroundWorkEnded(within: seconds)
    }

    /// Cancels `tasks` together: all leave their stages under one lock, so none of
    /// them can start in a slot that another's cancellation freed. Each completes
    /// with `ImagoError.cancelled` unless it had finished.
    public func cancel(_ tasks: [ImageTask]) {
        // A request with alternative URLs is cancelled through the load of the URL
        // tried now, and ends with it.
        pipeline.cancel(tasks.map(\.loading) + tasks.filter { $0.loading !== $0 })
    }

    private func makeTask(
        _ request: ImageRequest, completion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?
    ) -> ImageTask {
        let candidates = request.candidates(networkIsConstrained: isNetworkConstrained)
        guard candidates.count > 1 else { return startTask(candidates[0], completion: completion) }
        // One task for the whole request, following the task of the URL tried now;
        // each URL's task is a load of its own (its own cache key, its own events).
        let task = ImageTask(request: request, pipeline: pipeline, onCompletion: completion)
        loadFirst(of: candidates[...], for: task)
        return task
    }

    /// Loads the first of `candidates` for `task`, and after a failure the rest in
    /// turn; `task` ends with the first image, a cancellation, or the last failure.
    private func loadFirst(of candidates: ArraySlice<ImageRequest>, for task: ImageTask) {
        guard let candidate = candidates.first else { return }
        let rest = candidates.dropFirst()
        let attempt = startTask(candidate) { [weak self] result in
            if case .failure(let error) = result, error != .cancelled, !rest.isEmpty, let self, !task.isFinished {
                self.loadFirst(of: rest, for: task)
            } else {
                task.complete(result)
            }
        }
        if !task.follow(attempt, step: candidates.startIndex) { attempt.cancel() }
    }

    /// A task already ended with `response`, an image the caller found at hand (in
    /// the memory cache): what `task(with:)` would have returned for the hit, its
    /// events told as a load's, without looking again. A second look could miss an
    /// image evicted in between and start a transfer nobody waits for.
    package func answeredTask(for request: ImageRequest, with response: ImageResponse) -> ImageTask {
        let task = observed(request, completion: nil) { ImageTask(request: request, pipeline: pipeline, onCompletion: $0) }
        task.complete(.success(response))
        return task
    }

    /// The task loading the one URL of `request`.
    private func startTask(
        _ request: ImageRequest, completion: (@Sendable (Result<ImageResponse, ImagoError>) -> Void)?
    ) -> ImageTask {
        let task = observed(request, completion: completion) { ImageTask(request: request, pipeline: pipeline, onCompletion: $0) }
        guard request.hasURL, configuration.dataLoader.canLoad(request.url) else {
            task.complete(.failure(.invalidURL(request.url.absoluteString)))
            return task
        }
        let cache = cache
        if !pipeline.completeFromMemory(task, cache: cache) { pipeline.submit(task, cache: cache) }
        return task
    }
}
