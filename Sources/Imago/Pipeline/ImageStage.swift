import Foundation

/// What an image stage works from; fixed when it starts.
struct ImageWork: Sendable {
    let key: ImageCacheKey
    let request: ImageRequest
    let cache: (any ImageCaching)?
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
        self.cache = cache
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

/// An image decoded at its key's size from the original data of its image key.
struct DecodingStage: ImageStage {
    let pipeline: Pipeline
    let stage: StageHandle<DecodedKey>
    let stageKey: DecodedKey

    private var configuration: ImageLoaderConfiguration { pipeline.configuration }

    func buildUpstream(work: ImageWork, waited: Double, in graph: inout StageGraph) {
        let priority = graph.record(stage)?.core.priority ?? work.request.priority
        let original = OriginalDataStage.stage(
            for: stageKey.original, request: work.request, priority: priority, in: &graph, pipeline: pipeline)
        graph.subscribe(.decoded(stage), to: original) { [self] event in
            if case .partialData(let data) = event {
                pipeline.schedulePreview(of: .decoded(stage)) { [self] in decodePreview(data, work: work) }
                return
            }
            received(event) { [self] original, wait, run in decode(original, work: work, waited: waited + wait, run: run) }
        }
    }

    private func decode(_ original: OriginalData, work: ImageWork, waited: Double, run: StageRun) {
        if answerWithConfirmedVariant(
            work: work, source: original.source, metrics: original.metrics, metadata: original.httpMetadata, run: run) {
            return
        }
        let start = ContinuousClock.now
        let options = pipeline.decodingOptions(targetSize: work.key.targetSize, timeout: run.loadingTimeout)
        let result = Result { () throws(ImagoError) in
            guard let data = original.bytes.load() else {
                let path = work.originals?.location(of: .original(work.request.imageKey))
                throw .fileError(path: path ?? work.request.url.absoluteString, reason: "the stored image could not be read back", errno: nil)
            }
            let image = try configuration.decoders.decode(data, options: options)
            // Bytes cut short are partial even where the decoder found all the pixels
            // (a file cut just before its end marker).
            return original.isTruncated && !image.isPartial ? image.markedPartial : image
        }.mapError { $0.naming(work.request.url) }
        let partial = (try? result.get())?.isPartial ?? false
        if partial || result.isFailure, original.source != .local {
            // Bytes that do not decode (a captive portal's page, an image over the
            // pixel limit), or only in part (a body cut short whose length matched),
            // are not kept to be served again: the next load asks the server, unless
            // the bytes came whole and are no image, which asking again would not mend.
            work.originals?.remove(.original(work.request.imageKey))
            configuration.recentOriginals?.removeData(forKey: work.request.imageKey)
            if original.source != .network, !work.refetched, !result.exceedsALimit {
                // Stored bytes that no longer decode (a decoder that changed, a file
                // damaged in a way its checksum cannot see) are not this load's
                // failure: it asks the server for the image, once. An image over a
                // limit would come back the same.
                var again = work
                again.refetched = true
                again.staleVariant = nil
                goUpstream(work: again, waited: waited, run: run)
                return
            }
            if work.cache != nil, !original.isTruncated, case .failure(let error) = result {
                configuration.recentFailures?.record(error, forKey: work.request.imageKey)
            }
        }
        var metrics = original.metrics
        metrics.decodeQueued = waited
        metrics.decode = (ContinuousClock.now - start).seconds
        complete(work: work, run: run, with: result.map {
            var response = ImageResponse(image: $0, url: work.request.url, source: original.source, metrics: metrics)
            response.httpMetadata = original.httpMetadata
            return response
        })
    }

    /// Decodes the bytes so far as a preview at the stage's size.
    private func decodePreview(_ data: Data, work: ImageWork) {
        pipeline.previewDecodes.withLock { $0 += 1 }
        let options = pipeline.decodingOptions(targetSize: work.key.targetSize, timeout: pipeline.loadingTimeout)
        guard let image = try? configuration.decoders.decode(data, options: options) else { return }
        let preview = ImageResponse(
            image: image.isPartial ? image : image.markedPartial, url: work.request.url, source: .network, metrics: ImageResponse.Metrics())
        pipeline.reportPreview(.preview(preview), to: stage)
    }
}

/// A decoded image processed: built on the decoded image of its key and size, taken
/// from the memory cache when it is there.
struct ProcessingStage: ImageStage {
    let pipeline: Pipeline
    let stage: StageHandle<ProcessedKey>
    let stageKey: ProcessedKey

    func buildUpstream(work: ImageWork, waited: Double, in graph: inout StageGraph) {
        let key = work.key
        if let decoded = work.cache?.image(forKey: key.decodedKey) {
            let response = ImageResponse(image: decoded, url: work.request.url, source: .memory, metrics: ImageResponse.Metrics())
            let queuedAt = ContinuousClock.now
            graph.enqueue(.processed(stage), in: .decoding) { [self] run in
                process(response, work: work, waited: waited + (ContinuousClock.now - queuedAt).seconds, run: run)
            }
            return
        }
        var plain = work.request
        plain.processors = []
        let priority = graph.record(stage)?.core.priority ?? work.request.priority
        let decoded = DecodingStage.stage(for: stageKey.decoded, request: plain, priority: priority, in: &graph, pipeline: pipeline)
        graph.subscribe(.processed(stage), to: decoded) { [self] event in
            if case .preview(let preview) = event {
                pipeline.schedulePreview(of: .processed(stage)) { [self] in processPreview(preview, work: work) }
                return
            }
            received(event) { [self] response, wait, run in process(response, work: work, waited: waited + wait, run: run) }
        }
    }

    private func process(_ input: ImageResponse, work: ImageWork, waited: Double, run: StageRun) {
        if answerWithConfirmedVariant(work: work, source: input.source, metrics: input.metrics, metadata: input.httpMetadata, run: run) {
            return
        }
        let start = ContinuousClock.now
        let image = input.image.processed(by: work.request.processors)
        var metrics = input.metrics
        metrics.decodeQueued += waited
        metrics.processing = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: input.source, metrics: metrics)
        response.httpMetadata = input.httpMetadata
        complete(work: work, run: run, with: .success(response))
    }

    /// Applies the stage's processors to a preview of the image it builds on.
    private func processPreview(_ input: ImageResponse, work: ImageWork) {
        let image = input.image.processed(by: work.request.processors)
        let preview = ImageResponse(image: image, url: work.request.url, source: input.source, metrics: ImageResponse.Metrics())
        pipeline.reportPreview(.preview(preview), to: stage)
    }
}

extension Pipeline {
    /// The image for `request` made from what the disk tier keeps, whatever its
    /// freshness: the stored variant of its size and processing, else the stored
    /// original decoded and processed; nil when there is neither, or it does not
    /// decode whole. Reads and decodes on the calling thread.
    func storedImage(for request: ImageRequest) -> (DecodedImage, ImageResponse.Metrics)? {
        let (cache, timeout) = graph.withLock { ($0.cache, $0.loadingTimeout) }
        // The local tier only: this runs on the caller's thread, which may be the main one.
        guard let tier = httpCache(for: request, cache: cache)?.tiers.first(where: { !$0.answersOverNetwork }) else { return nil }
        let key = request.cacheKey
        let policy = configuration.storagePolicy
        let start = ContinuousClock.now
        var metrics = ImageResponse.Metrics()
        if policy.storesProcessed, !key.isOriginal, let record = tier.contents(for: .variant(key)),
           let image = decodeVariant(record.data) {
            metrics.decode = (ContinuousClock.now - start).seconds
            return (image, metrics)
        }
        guard policy.storesOriginals, let record = tier.contents(for: .original(request.imageKey)) else {
            return nil
        }
        let options = decodingOptions(targetSize: key.targetSize, timeout: timeout)
        guard let image = try? configuration.decoders.decode(record.data, options: options), !image.isPartial else { return nil }
        let decoded = ContinuousClock.now
        metrics.decode = (decoded - start).seconds
        let processed = image.processed(by: request.processors)
        metrics.processing = (ContinuousClock.now - decoded).seconds
        return (processed, metrics)
    }

    /// A stored variant's image: the compact lossless form, or PNG or JPEG as earlier
    /// versions kept them; nil when it does not decode.
    func decodeVariant(_ data: Data) -> DecodedImage? {
        if VariantCodec.isVariant(data) {
            return VariantCodec.decode(data, maximumPixelCount: configuration.maximumPixelCount)
        }
        return try? configuration.decoders.decode(data, options: DecodingOptions(maximumPixelCount: configuration.maximumPixelCount))
    }

    /// The options a decode of an original runs with: the size wanted, the pixel
    /// limit, the memory budget, and the load's timeout as the decode's own (a file made to be slow to
    /// decode must not hold a core past the time its transfer was allowed).
    func decodingOptions(targetSize: TargetSize?, timeout: Double) -> DecodingOptions {
        var options = DecodingOptions(targetSize: targetSize, maximumPixelCount: configuration.maximumPixelCount)
        options.timeout = timeout
        options.memoryBudget = configuration.decodeMemoryBudget
        return options
    }
}

extension DecodedImage {
    /// The same image, said to be partial.
    fileprivate var markedPartial: DecodedImage {
        DecodedImage(frames: frames, loopCount: loopCount, format: format, orientation: orientation, isPartial: true)
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { true } else { false }
    }
}

extension Result<DecodedImage, ImagoError> {
    /// A failure for the image's size or frame count, not for its bytes.
    fileprivate var exceedsALimit: Bool {
        switch self {
        case .failure(.imageTooLarge), .failure(.tooManyFrames): true
        default: false
        }
    }
}
