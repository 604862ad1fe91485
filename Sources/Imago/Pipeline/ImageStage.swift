import Foundation

/// The later stages: an image decoded at its key's size from the original data
/// (`DecodingStage`), then processed (`ProcessingStage`). Both run in the decoding
/// queue. When the disk tier keeps processed variants, a stored one is read back
/// first; what the two share is here.
protocol ImageStage: Sendable {
    associatedtype Key: ImageStageKind
    var context: StageContext { get }
    var stage: StageHandle<Key> { get }
    var stageKey: Key { get }

    init(context: StageContext, stage: StageHandle<Key>, stageKey: Key)

    /// Subscribes the stage to what it builds on, or queues its work when that is at
    /// hand (`atHand`, looked up before the lock). `waited` is the time the stage has
    /// already spent in the decoding queue.
    func buildUpstream(work: ImageWork, atHand: AtHand, waited: Double, in graph: inout StageGraph)
}

/// The key of a later stage: it names the image it is made from.
protocol ImageStageKind: StageKind where Value == ImageResponse {
    var key: ImageCacheKey { get }
    /// The memory-tier key of the image the stage builds on, when it may be taken
    /// from there.
    var builtOnInMemory: ImageCacheKey? { get }
    /// Whether a stage of what this one builds on is in flight, to be joined.
    func upstreamInFlight(in graph: StageGraph) -> Bool
}

extension DecodedKey: ImageStageKind {
    var builtOnInMemory: ImageCacheKey? { nil }
    func upstreamInFlight(in graph: StageGraph) -> Bool { graph.originals.handle(for: original) != nil }
}

extension ProcessedKey: ImageStageKind {
    var builtOnInMemory: ImageCacheKey? { key.decodedKey }
    func upstreamInFlight(in graph: StageGraph) -> Bool { graph.decoded.handle(for: decoded) != nil }
}

extension ImageStage {
    private var configuration: ImageLoaderConfiguration { context.configuration }

    /// The stage of `key`, made and started from `request` if none is in flight.
    static func stage(
        for key: Key, request: ImageRequest, priority: ImageRequest.Priority, atHand: AtHand, in graph: inout StageGraph,
        context: StageContext
    ) -> StageHandle<Key> {
        let (stage, created) = graph.stage(for: key, priority: priority)
        if created {
            let work = ImageWork(
                key: key.key, request: request, cache: graph.cache, tiers: atHand.tiers, storagePolicy: context.configuration.storagePolicy,
                loadingTimeout: graph.loadingTimeout)
            Self(context: context, stage: stage, stageKey: key).start(work: work, atHand: atHand, in: &graph)
        }
        return stage
    }

    /// Starts the stage: a stored variant is looked for first when the tiers keep
    /// them.
    func start(work: ImageWork, atHand: AtHand, in graph: inout StageGraph) {
        guard let variants = work.variants else { return buildUpstream(work: work, atHand: atHand, waited: 0, in: &graph) }
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
        switch work.variants?.lookUpVariant(.variant(work.key), at: Date(), for: configuration.requestFields(for: work.request)) ?? .miss {
        case .fresh(let data, let metadata, let source):
            guard run.queue == .transfers else {
                return answer(work: work, withStored: data, metadata: metadata, source: source, queuedAt: queuedAt, run: run)
            }
            context.publisher.publish(.next(after: run) { [self, work] graph in
                graph.enqueue(Key.erase(stage), in: .decoding) { [self] run in
                    answer(work: work, withStored: data, metadata: metadata, source: source, queuedAt: queuedAt, run: run)
                }
            }, of: stage)
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
        guard let image = configuration.decodeVariant(data) else {
            work.variants?.remove(.variant(work.key))
            return goUpstream(work: work, waited: (ContinuousClock.now - queuedAt).seconds, run: run)
        }
        var metrics = ImageResponse.Metrics()
        metrics.decodeQueued = (start - queuedAt).seconds
        metrics.decode = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: source, metrics: metrics)
        response.httpMetadata = metadata
        context.publisher.publish(.finished(.success(response), after: run) { work.cache?.setImage(image, forKey: work.key) }, of: stage)
    }

    /// Gives back the stage's slot and subscribes it to what it builds on, unless it
    /// was abandoned meanwhile.
    ///
    /// What is at hand is looked up before the lock, as a load's is (see
    /// `Pipeline.submit`): a stage of what this one builds on that finished in
    /// between stored its image, bytes or failure after the look-up, and building on
    /// a new one would make them again. So when none is in flight to be joined and a
    /// stage finished since the look-up, the stage looks again, holding no slot.
    func goUpstream(work: ImageWork, waited: Double, run: StageRun) {
        var run: StageRun? = run
        var lookedAfter: Int?
        while true {
            let atHand = context.atHand(for: work.request, cache: work.cache, builtOn: stageKey.builtOnInMemory)
            let finishedSince = Locked<Int?>(nil)
            let live = context.publisher.publish(.next(after: run) { [self, lookedAfter] graph in
                guard graph.finishedStages == lookedAfter || stageKey.upstreamInFlight(in: graph) else {
                    finishedSince.withLock { $0 = graph.finishedStages }
                    return
                }
                buildUpstream(work: work, atHand: atHand, waited: waited, in: &graph)
            }, of: stage)
            guard live, let finished = finishedSince.withLock({ $0 }) else { return }
            lookedAfter = finished
            run = nil
        }
    }

    /// Handles an event of the stage this one builds on: progress is passed on, a
    /// failure ends this stage, a value queues its own work, which is told how long
    /// it waited for its decoding slot.
    func received<Value>(_ event: StageEvent<Value>, then work: @escaping @Sendable (Value, Double, StageRun) -> Void) {
        switch event {
        case .progress(let progress):
            context.publisher.publish(.progress(progress), of: stage)
        case .retrying(let attempt, let error, let delay):
            context.publisher.publish(.retrying(attempt: attempt, error: error, delay: delay), of: stage)
        case .partialData, .preview:
            break
        case .finished(.failure(let error)):
            context.publisher.publish(.finished(.failure(error), after: nil), of: stage)
        case .finished(.success(let value)):
            let queuedAt = ContinuousClock.now
            context.publisher.publish(.next(after: nil) { [stage] graph in
                graph.enqueue(Key.erase(stage), in: .decoding) { run in work(value, (ContinuousClock.now - queuedAt).seconds, run) }
            }, of: stage)
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
        guard let image = configuration.decodeVariant(variant.data) else {
            variants.remove(.variant(work.key))
            return false
        }
        var metrics = metrics
        metrics.decode = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: .revalidated, metrics: metrics)
        response.httpMetadata = metadata
        context.publisher.publish(.finished(.success(response), after: run) {
            work.cache?.setImage(image, forKey: work.key)
            variants.freshenVariant(variant.data, stored: variant.metadata, updated: metadata, key: .variant(work.key), at: Date())
        }, of: stage)
        return true
    }

    /// Ends the stage; what a task asked for goes into the memory cache, and into the
    /// tiers when they keep processed variants. A partial image goes into neither:
    /// a later load, which may not allow partial images, must never take it for the
    /// whole one.
    func complete(work: ImageWork, run: StageRun?, with result: Result<ImageResponse, ImagoError>) {
        context.publisher.publish(.finished(result, after: run) {
            guard case .success(let response) = result, !response.image.isPartial else { return }
            work.cache?.setImage(response.image, forKey: work.key)
            // Kept in the compact lossless form, with the HTTP freshness of its
            // original; no animations (their frames would cost more than the original).
            guard let metadata = response.httpMetadata, !response.image.isAnimated else { return }
            work.variants?.storeVariant(metadata: metadata, key: .variant(work.key), at: Date()) { VariantCodec.encode(response.image) }
        }, of: stage)
    }
}
