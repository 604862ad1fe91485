import Foundation

/// What every stage works with: the configuration, the one HTTP cache, and where it
/// publishes its news. A stage sees no more of the pipeline than this.
///
/// Two references, so that a stage, copied into every closure of its work, costs
/// two reference counts and no more: what is fixed for the pipeline's life sits in
/// `StageSettings`, made once with it.
struct StageContext: Sendable {
    let settings: StageSettings
    /// The pipeline, which applies a stage's news under its lock.
    let publisher: any StagePublishing

    var configuration: ImageLoaderConfiguration { settings.configuration }
    /// The one HTTP cache over the configuration's disk and shared tiers; nil with
    /// neither.
    var tiers: HTTPCache? { settings.tiers }
    var previewDecodes: Locked<Int> { settings.previewDecodes }
    var revalidations: BackgroundRevalidations { settings.revalidations }

    /// What the other components hold for `request`, looked up before the graph
    /// lock is taken, so that the lock is never held while theirs is: the HTTP cache
    /// its bytes go through (none for what the data loader has at hand, nor with
    /// caching off), what the memories of recent loads answer its original with, and
    /// the image under `builtOn` in the memory tier. Nothing is remembered without a
    /// memory tier.
    func atHand(for request: ImageRequest, cache: (any ImageCaching)?, builtOn: ImageCacheKey?) -> AtHand {
        guard let cache else { return AtHand() }
        var found = AtHand()
        found.tiers = httpCache(for: request, cache: cache)
        found.recentOriginal = recentAnswer(for: request)
        if let builtOn, request.cachePolicy.reads.contains(.memory) { found.builtOn = cache.image(forKey: builtOn) }
        return found
    }

    /// The HTTP cache for `request` when its loads use `cache`: images the data
    /// loader fetches only (what it has at hand is not copied), and none with caching
    /// off or neither tier; only the tiers the request's cache policy lets it read or
    /// write.
    func httpCache(for request: ImageRequest, cache: (any ImageCaching)?) -> HTTPCache? {
        guard cache != nil, !configuration.dataLoader.isLocal(request.url) else { return nil }
        return tiers?.restricted(to: request.cachePolicy)
    }

    /// A failure a repeat would meet again, or the bytes of a recent network load,
    /// for `request`'s image key: what answers it without a transfer.
    private func recentAnswer(for request: ImageRequest) -> Result<OriginalData, ImagoError>? {
        let key = request.imageKey
        let policy = request.cachePolicy
        if !policy.retriesFailed, let failure = configuration.recentFailures?.failure(forKey: key), !failure.mayPass(for: request) {
            return .failure(failure)
        }
        guard policy.reads.contains(.recentOriginals), let entry = configuration.recentOriginals?.entry(forKey: key),
              entry.metadata?.isSelected(by: configuration.requestFields(for: request)) ?? true
        else { return nil }
        var metrics = ImageResponse.Metrics()
        metrics.bytes = entry.data.count
        return .success(OriginalData(bytes: .loaded(entry.data), source: .recent, metrics: metrics, httpMetadata: entry.metadata))
    }
}

/// What a pipeline's stages share for its whole life.
final class StageSettings: Sendable {
    let configuration: ImageLoaderConfiguration
    /// The one HTTP cache over the configuration's disk and shared tiers; nil with
    /// neither.
    let tiers: HTTPCache?
    /// Preview decodes started, over the pipeline's life: tests hold it against the
    /// scans a file has.
    let previewDecodes = Locked(0)
    /// Stale originals being revalidated in the background.
    let revalidations = BackgroundRevalidations()

    init(configuration: ImageLoaderConfiguration) {
        self.configuration = configuration
        let tiers: [any HTTPCacheTier] = [configuration.diskCache as (any HTTPCacheTier)?, configuration.sharedCache].compactMap { $0 }
        self.tiers = tiers.isEmpty ? nil : HTTPCache(
            tiers: tiers, freshnessPolicy: configuration.freshnessPolicy, staleIfErrorAllowance: configuration.staleIfErrorAllowance)
    }
}

/// What other components held for a request when its stages were looked for (see
/// `StageContext.atHand`).
struct AtHand: Sendable {
    /// The HTTP cache the request's bytes go through.
    var tiers: HTTPCache?
    /// A remembered failure, or the bytes of a recent load, of its image key.
    var recentOriginal: Result<OriginalData, ImagoError>?
    /// The image a processing stage builds on, from the memory tier.
    var builtOn: DecodedImage?
}

/// The revalidations of stale originals running in the background, served stale
/// meanwhile: one each, however many loads read them, by disk key.
final class BackgroundRevalidations: Sendable {
    private let running = Locked<[String: Task<Void, Never>]>([:])

    /// Starts `work` for `key` unless a revalidation of it runs already; it leaves
    /// the table when it ends.
    func start(_ key: String, _ work: @escaping @Sendable () async -> Void) {
        running.withLock { running in
            guard running[key] == nil else { return }
            // Made under the lock, so the task cannot end (and leave the table)
            // before it is in it.
            running[key] = Task.detached(priority: .background) { [self] in
                await work()
                self.running.withLock { _ = $0.removeValue(forKey: key) }
            }
        }
    }

    /// Waits until the revalidations running now have ended, or `seconds` have
    /// passed; true when they all ended.
    func ended(within seconds: Double) async -> Bool {
        let tasks = running.withLock { Array($0.values) }
        guard !tasks.isEmpty else { return true }
        let result = await withDeadline(seconds: seconds, url: "background revalidations") { () async throws(ImagoError) in
            for task in tasks { await task.value }
        }
        return (try? result.get()) != nil
    }
}
