import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Settings fixed when a loader is made (`ImageLoader.Configuration`): what the
/// pipeline works with.
public struct ImageLoaderConfiguration: Sendable {
    /// Fetches the bytes, and decides which URLs can be loaded at all
    /// (`DataLoading.canLoad(_:)`): by default the platform's HTTP client for
    /// `http` and `https`, the file system for `file:`, the URL itself for `data:`.
    public var dataLoader: any DataLoading
    /// Decoders.
    public var decoders: ImageDecoders.Registry
    /// When and how often failed transfers are tried again.
    public var retryPolicy: RetryPolicy
    /// The largest image decoded (pixels; an animation's canvas counts once).
    public var maximumPixelCount: Int
    /// The most bytes one decode may hold (`DecodingOptions.memoryBudget`); nil (the
    /// default) for the decoders' own figure, 64 MiB for a thumbnail. A page of
    /// thumbnails decodes several files at once, each within it.
    public var decodeMemoryBudget: Int?
    /// Headers added to every request that has none of the name (authorization,
    /// say); the HTTP loader's own `HTTPLoaderConfiguration.httpAdditionalHeaders`
    /// go beneath these.
    public var headers: [String: String]
    /// Changes each URL request just before it is sent; called too when a stored
    /// response's `Vary` names fields, to see what the request would send in them.
    public var requestModifier: (@Sendable (URLRequest) -> URLRequest)?
    /// Awaited before each transfer attempt (a retry included), after
    /// `requestModifier`: fetch or refresh a token, sign the URL. Throwing ends the
    /// load with that error, without a transfer (SDWebImage's request modifier
    /// returning nil, Nuke's async `willLoad`). Not called for bytes at hand
    /// (`DataLoading.isLocal(_:)`), nor for what a cache answers.
    public var asyncRequestModifier: (@Sendable (URLRequest) async throws(ImagoError) -> URLRequest)?
    /// The disk tier for the images the data loader fetches (not those it has at hand, `DataLoading.isLocal(_:)`); nil for none. `ImageLoader.shared` uses
    /// `DiskCache.shared`; other loaders have none unless given one, so that a
    /// loader made for a test or a job never shares files by surprise.
    public var diskCache: DiskCache?
    /// The cache shared by a fleet of machines (Redis or Redis Cluster), between
    /// the disk tier and the network, for http(s) images; nil for none. It keeps
    /// what the disk tier keeps (``ImageLoaderConfiguration/storagePolicy``), under the same freshness.
    public var sharedCache: SharedCache?
    /// What the disk and shared tiers keep: by default (`.both`) the originals, and
    /// the sized or processed images of requests that ask for a size or processing.
    public var storagePolicy: StoragePolicy
    /// When an image stored in the disk or shared tier is used without asking the
    /// server: by HTTP's rules (the default), or for a set time whatever the headers
    /// say.
    public var freshnessPolicy: FreshnessPolicy
    /// The former name of `storagePolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "storagePolicy")
    public var diskCachePolicy: StoragePolicy {
        get { storagePolicy }
        set { storagePolicy = newValue }
    }
    /// The former name of `freshnessPolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "freshnessPolicy")
    public var diskFreshnessPolicy: FreshnessPolicy {
        get { freshnessPolicy }
        set { freshnessPolicy = newValue }
    }
    /// How long past its freshness a stored image may still be served when the
    /// network fails (unless the server forbade it); nil never to.
    public var staleIfErrorAllowance: Double?
    /// How many decodes and processings run at once; by default one per core.
    public var concurrentDecodes: Int
    /// Whether, on Linux, decodes and processings started while the user interacts
    /// (`ImageLoader.noteInteraction()`: a GTK `ImageGrid` says so as it scrolls) run
    /// at the `background` quality of service, nice 10 there, below the main thread,
    /// so frames keep coming while thumbnails decode on every core; true by default.
    /// The rest of the time they run at `userInitiated`, as fast as the cores allow.
    /// On Apple platforms decodes always run at `userInitiated`, below the main
    /// thread's quality of service, and this is ignored.
    public var decodingYieldsToInteraction: Bool
    /// How many transfers run at once when the loader starts; 2 by default, as in
    /// AsyncImageView, for an app's few images on screen at a time.
    /// `ImageLoader.concurrentLoads` changes it while the loader runs.
    public var concurrentLoads: Int
    /// The memory tier of a loader made with `ImageLoader(configuration:)`:
    /// `ImageCache.shared` by default. A loader given a cache of its own
    /// (`ImageLoader(configuration:cache:)`) ignores this.
    public var memoryTier: MemoryTier
    /// The files of recent network loads, kept so that a repeat of a URL costs a
    /// decode, not a transfer; nil to keep none. Used only by a loader with a
    /// memory cache.
    public var recentOriginals: RecentOriginalFiles?
    /// Failures a repeat would meet again (a 4xx, bytes that do not decode),
    /// remembered so that repeats fail at once without a request; nil to remember
    /// none. Used only by a loader with a memory cache.
    public var recentFailures: RecentLoadFailures?
    /// Bodies of transfers cut short, kept so that a later load of the URL asks
    /// only for the rest; nil to keep none (a load's own retries resume all the
    /// same).
    public var partialBodies: PartialBodies?

    /// The defaults, made for apps: `ImageCache.shared` in memory, no disk tier,
    /// two transfers at a time.
    ///
    /// The memory tier is shared and the disk tier is not, on purpose. Memory is
    /// the process's own and gone at exit: one shared budget keeps several
    /// loaders from each filling their own, and an image loaded through one is
    /// shown by another at once. Files outlive the process in the user's cache
    /// directory: a loader made for a test or a job writes none unless it is
    /// given a `DiskCache` (`ImageLoader.shared` has `DiskCache.shared`). For a
    /// server or a tool, start from `server(diskCache:concurrentLoads:dataLoader:)`.
    public init(
        dataLoader: any DataLoading = DefaultDataLoader(),
        decoders: ImageDecoders.Registry = .shared,
        retryPolicy: RetryPolicy = RetryPolicy(),
        maximumPixelCount: Int = DecodingOptions.defaultMaximumPixelCount,
        headers: [String: String] = [:],
        requestModifier: (@Sendable (URLRequest) -> URLRequest)? = nil,
        diskCache: DiskCache? = nil,
        storagePolicy: StoragePolicy = .both,
        freshnessPolicy: FreshnessPolicy = .httpHeaders,
        staleIfErrorAllowance: Double? = 7 * 86400,
        concurrentDecodes: Int = ProcessInfo.processInfo.activeProcessorCount,
        concurrentLoads: Int = 2,
        memoryTier: MemoryTier = .shared,
        recentOriginals: RecentOriginalFiles? = RecentOriginalFiles(),
        recentFailures: RecentLoadFailures? = RecentLoadFailures(),
        partialBodies: PartialBodies? = PartialBodies()
    ) {
        self.dataLoader = dataLoader
        self.decoders = decoders
        self.retryPolicy = retryPolicy
        self.maximumPixelCount = maximumPixelCount
        self.headers = headers
        self.requestModifier = requestModifier
        asyncRequestModifier = nil
        self.diskCache = diskCache
        self.storagePolicy = storagePolicy
        self.freshnessPolicy = freshnessPolicy
        self.staleIfErrorAllowance = staleIfErrorAllowance
        self.concurrentDecodes = max(1, concurrentDecodes)
        decodingYieldsToInteraction = true
        self.concurrentLoads = max(1, concurrentLoads)
        self.memoryTier = memoryTier
        self.recentOriginals = recentOriginals
        self.recentFailures = recentFailures
        self.partialBodies = partialBodies
    }

    /// For servers and command-line tools, which load long lists of URLs once
    /// each rather than a screenful again and again: the disk tier on, a small
    /// memory tier of the loader's own (`MemoryTier.small`), and
    /// `concurrentLoads` transfers at once (8 by default), each host allowing
    /// as many connections.
    ///
    /// ```swift
    /// let loader = ImageLoader(configuration: .server())
    /// for await item in loader.images(for: requests) { … }
    /// ```
    ///
    /// - Parameters:
    ///   - diskCache: The disk tier; `DiskCache.shared` (in the user's cache
    ///     directory) by default, nil for none.
    ///   - concurrentLoads: Transfers at once, at least 1.
    ///   - dataLoader: What fetches the bytes; nil for a `DefaultDataLoader`
    ///     allowing `concurrentLoads` connections to a host (at least 6).
    public static func server(
        diskCache: DiskCache? = .shared, concurrentLoads: Int = 8, dataLoader: (any DataLoading)? = nil
    ) -> ImageLoaderConfiguration {
        let loads = max(1, concurrentLoads)
        return ImageLoaderConfiguration(
            dataLoader: dataLoader ?? DefaultDataLoader(configuration: .init(httpMaximumConnectionsPerHost: max(6, loads))),
            diskCache: diskCache, concurrentLoads: loads, memoryTier: .small)
    }

    /// Which memory tier `ImageLoader(configuration:)` gives a loader.
    public enum MemoryTier: Sendable, Hashable {
        /// `ImageCache.shared`, with every loader of the process that uses it:
        /// what apps want, one budget for every view.
        case shared
        /// A cache of the loader's own with these limits (bytes of pixels, and
        /// images), where one image may take half the budget. It does not purge
        /// on memory pressure: too small to be worth watching for it, and the
        /// kernel's pressure triggers cost a short run tens of milliseconds.
        case own(costLimit: Int, countLimit: Int)
        /// Nothing cached, in memory or on disk.
        case disabled

        /// The tier of `Configuration.server`: 32 MB and 256 images. A URL
        /// repeated soon is answered from memory, one repeated much later from
        /// disk, and a long list costs no more memory than a short one; a
        /// full-size photo still fits. Few images, because with thousands of
        /// small ones each entry's bookkeeping would cost more than its pixels.
        package static let small = MemoryTier.own(costLimit: 32 << 20, countLimit: 256)

        /// The cache this tier stands for.
        func makeCache() -> (any ImageCaching)? {
            switch self {
            case .shared: ImageCache.shared
            case .own(let costLimit, let countLimit):
                ImageCache(costLimit: costLimit, countLimit: countLimit, entryCostLimit: costLimit / 2, memoryPressure: nil)
            case .disabled: nil
            }
        }
    }
}
