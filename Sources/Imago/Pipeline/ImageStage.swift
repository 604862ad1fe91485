import Foundation

/// What an image stage works from; fixed when it starts.
struct ImageWork: Sendable {
    let key: ImageCacheKey
    let request: ImageRequest
    /// The memory tier images are kept in; nil when the request's policy keeps
    /// none there.
    let cache: (any ImageCaching)?
    /// The memory tier images may be read from, under the request's policy.
    let memoryReads: (any ImageCaching)?
    /// Whether the loader caches at all, so remembers failures.
    let remembers: Bool
    /// Where processed variants are read and kept; nil when they are not.
    let variants: HTTPCache?
    /// Where the original bytes are kept; nil when they are not.
    let originals: HTTPCache?
    /// The variant found stale in a tier, with its metadata: used as it is if the
    /// server confirms the original it was made from.
    var staleVariant: (data: Data, metadata: HTTPCacheMetadata)?
    /// A stored original that no longer decoded was dropped and this load asks
    /// the network for it again: once, never in a loop.
    var refetched = false

    /// The work of the stage of `key` started from `request`, with the memory tier
    /// loads use now.
    init(key: ImageCacheKey, request: ImageRequest, cache: (any ImageCaching)?, pipeline: Pipeline) {
        let policy = pipeline.configuration.storagePolicy
        let httpCache = pipeline.httpCache(for: request, cache: cache)
        self.key = key
        self.request = request
        self.cache = request.cachePolicy.writes.contains(.memory) ? cache : nil
        memoryReads = request.cachePolicy.reads.contains(.memory) ? cache : nil
        remembers = cache != nil
        variants = policy.storesProcessed && !key.isOriginal ? httpCache : nil
        originals = policy.storesOriginals ? httpCache : nil
    }
}

/// The later stages: an image decoded at its key's size from the original data
/// (`DecodingStage`), then processed (`ProcessingStage`). Both run in the decoding
/// queue. When the disk tier keeps processed variants, a stored one is read back
/// first; what the two share is here.
protocol ImageStage: Sendable {
    associatedtype Key: ImageStageKind
    var pipeline: Pipeline { get }
    var stage: StageHandle<Key> { get }

    init(pipeline: Pipeline, stage: StageHandle<Key>, stageKey: Key)

    /// Subscribes the stage to what it builds on, or queues its work when that is at
    /// hand. `waited` is the time the stage has already spent in the decoding queue.
    func buildUpstream(work: ImageWork, waited: Double, in graph: inout StageGraph)
}

/// The key of a later stage: it names the image it is made from.
protocol ImageStageKind: StageKind where Value == ImageResponse {
    var key: ImageCacheKey { get }
}

extension DecodedKey: ImageStageKind {}
extension ProcessedKey: ImageStageKind {}

extension ImageStage {
    private var configuration: ImageLoaderConfiguration { pipeline.configuration }

    /// The stage of `key`, made and started from `request` if none is in flight.
    static func stage(
        for key: Key, request: ImageRequest, priority: ImageRequest.Priority, in graph: inout StageGraph,
        pipeline: Pipeline
    ) -> StageHandle<Key> {
        let (stage, created) = graph.stage(for: key, priority: priority)
        if created {
            Self(pipeline: pipeline, stage: stage, stageKey: key)
                .start(work: ImageWork(key: key.key, request: request, cache: graph.cache, pipeline: pipeline), in: &graph)
        }
        return stage
    }

    /// Starts the stage: a stored variant is looked for first when the tiers keep
    /// them.
    func start(work: ImageWork, in graph: inout StageGraph) {
        guard let variants = work.variants else { return buildUpstream(work: work, waited: 0, in: &graph) }
        let queuedAt = ContinuousClock.now
        guard variants.asksOverNetwork else {
            return graph.enqueue(Key.erase(stage), in: .decoding) { [self] run in readVariant(work: work, queuedAt: queuedAt, run: run) }
        }
        // A look-up in the shared tier waits on Redis, not the CPU: it takes a
        // transfer slot, so that as many run at once as transfers do, and a thread
        // that may block (work of the transfer queue runs on the thread that frees
        // its slot, which a transfer only lends to start a task of its own); what it
        // finds is decoded in the decoding queue, so that the waits for replies
        // overlap the decodes instead of holding their threads.
        graph.enqueue(Key.erase(stage), in: .transfers) { [self] run in
            BlockingWork.run { readVariant(work: work, queuedAt: queuedAt, run: run) }
        }
    }

    /// A processed variant from the tiers (from the shared tier, it is kept on disk
    /// too); a miss, or one that no longer decodes (dropped then), goes on to make
    /// the image.
    private func readVariant(work: ImageWork, queuedAt: ContinuousClock.Instant, run: StageRun) {
        var work = work
        // A stale variant is revalidated through its original (a bodiless 304 when
        // that is kept too).
        switch work.variants?.lookUpVariant(.variant(work.key), at: Date()) ?? .miss {
        case .fresh(let data, let metadata, let source):
            guard run.queue == .transfers else {
                return answer(work: work, withStored: data, metadata: metadata, source: source, queuedAt: queuedAt, run: run)
            }
            pipeline.update { [work] graph in
                guard graph.endRun(of: Key.erase(stage), run) else { return }
                graph.enqueue(Key.erase(stage), in: .decoding) { [self] run in
                    answer(work: work, withStored: data, metadata: metadata, source: source, queuedAt: queuedAt, run: run)
                }
            }
            return
        case .stale(let data, let metadata):
            work.staleVariant = (data, metadata)
        case .miss:
            break
        }
        // The wait and the look-up count with the decoding slot's wait of the image
        // made instead.
        goUpstream(work: work, waited: (ContinuousClock.now - queuedAt).seconds, run: run)
    }

    /// Answers the stage with a stored variant; one that no longer decodes is
    /// dropped and the image made instead.
    private func answer(
        work: ImageWork, withStored data: Data, metadata: HTTPCacheMetadata, source: ImageResponse.Source,
        queuedAt: ContinuousClock.Instant, run: StageRun
    ) {
        let start = ContinuousClock.now
        guard let image = pipeline.decodeVariant(data) else {
            work.variants?.remove(.variant(work.key))
            return goUpstream(work: work, waited: (ContinuousClock.now - queuedAt).seconds, run: run)
        }
        var metrics = ImageResponse.Metrics()
        metrics.decodeQueued = (start - queuedAt).seconds
        metrics.decode = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: source, metrics: metrics)
        response.httpMetadata = metadata
        pipeline.finish(stage, run: run, with: .success(response)) { work.cache?.setImage(image, forKey: work.key) }
    }

    /// Gives back the stage's slot and subscribes it to what it builds on, unless it
    /// was abandoned meanwhile.
    func goUpstream(work: ImageWork, waited: Double, run: StageRun) {
        pipeline.update { graph in
            guard graph.endRun(of: Key.erase(stage), run) else { return }
            buildUpstream(work: work, waited: waited, in: &graph)
        }
    }

    /// Handles an event of the stage this one builds on: progress is passed on, a
    /// failure ends this stage, a value queues its own work, which is told how long
    /// it waited for its decoding slot.
    func received<Value>(_ event: StageEvent<Value>, then work: @escaping @Sendable (Value, Double, StageRun) -> Void) {
        switch event {
        case .progress(let progress):
            pipeline.report(progress, to: stage)
        case .retrying(let attempt, let error, let delay):
            pipeline.reportRetry(attempt: attempt, error: error, delay: delay, to: stage)
        case .partialData, .preview:
            break
        case .finished(.failure(let error)):
            pipeline.finish(stage, run: nil, with: .failure(error))
        case .finished(.success(let value)):
            let queuedAt = ContinuousClock.now
            pipeline.update { graph in
                guard graph.isLive(Key.erase(stage)) else { return }
                graph.enqueue(Key.erase(stage), in: .decoding) { run in work(value, (ContinuousClock.now - queuedAt).seconds, run) }
            }
        }
    }

    /// Answers the stage with its stale variant when `input` was made from an
    /// original the server has just confirmed unchanged (a 304) under the validators
    /// the variant was made with: the variant is still the image asked for, and
    /// reading it back costs a fraction of making it again. The record is written
    /// again only when the 304 changed something a later load reads. False when there
    /// is no such variant, or it no longer decodes (dropped then).
    func answerWithConfirmedVariant(
        work: ImageWork, source: ImageResponse.Source, metrics: ImageResponse.Metrics, metadata: HTTPCacheMetadata?, run: StageRun
    ) -> Bool {
        guard source == .revalidated, let variant = work.staleVariant, let metadata, let variants = work.variants,
              variants.confirms(metadata, variant: variant.metadata)
        else { return false }
        let start = ContinuousClock.now
        guard let image = pipeline.decodeVariant(variant.data) else {
            variants.remove(.variant(work.key))
            return false
        }
        var metrics = metrics
        metrics.decode = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: .revalidated, metrics: metrics)
        response.httpMetadata = metadata
        pipeline.finish(stage, run: run, with: .success(response)) {
            work.cache?.setImage(image, forKey: work.key)
            variants.freshenVariant(variant.data, stored: variant.metadata, updated: metadata, key: .variant(work.key), at: Date())
        }
        return true
    }

    /// Ends the stage; what a task asked for goes into the memory cache, and into the
    /// tiers when they keep processed variants. A partial image goes into neither:
    /// a later load, which may not allow partial images, must never take it for the
    /// whole one.
    func complete(work: ImageWork, run: StageRun?, with result: Result<ImageResponse, ImagoError>) {
        pipeline.finish(stage, run: run, with: result) {
            guard case .success(let response) = result, !response.image.isPartial else { return }
            work.cache?.setImage(response.image, forKey: work.key)
            // Kept in the compact lossless form, with the HTTP freshness of its
            // original; no animations (their frames would cost more than the original).
            guard let metadata = response.httpMetadata, !response.image.isAnimated else { return }
            work.variants?.storeVariant(metadata: metadata, key: .variant(work.key), at: Date()) { VariantCodec.encode(response.image) }
        }
    }
}
