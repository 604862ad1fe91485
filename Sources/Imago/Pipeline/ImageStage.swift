import Foundation

/// The later stages: an image decoded at its key's size from the original data,
/// then processed. Both run in the decoding queue. A key with processing builds on
/// the decoded image of its key and size (taken from the memory cache when it is
/// there), a key without builds on the original data. When the disk tier keeps
/// processed variants, a stored one is read back first.
extension Pipeline {
    /// What an image stage works from; fixed when it starts.
    private struct ImageWork: Sendable {
        let key: ImageCacheKey
        let request: ImageRequest
        let cache: (any ImageCaching)?
        /// Where processed variants are read and kept; nil when they are not.
        let variants: DiskCache?
        /// Where the original bytes are kept; nil when they are not.
        let originals: DiskCache?
        /// The variant found stale on disk, with its metadata: used as it is if the
        /// server confirms the original it was made from.
        var staleVariant: (data: Data, metadata: HTTPCacheMetadata)?
        /// A stored original that no longer decoded was dropped and this load asks
        /// the network for it again: once, never in a loop.
        var refetched = false
    }

    /// Starts `stage` for `request`; called with the lock held.
    func startImageStage(_ stage: Stage<ImageResponse>, request: ImageRequest) {
        guard case .image(let id) = stage.key else { return }
        let key = id.key
        let keepsVariants = configuration.diskCachePolicy.storesProcessed && !key.isOriginal
        let disk = diskCache(for: request)
        let work = ImageWork(
            key: key, request: request, cache: cache, variants: keepsVariants ? disk : nil,
            originals: configuration.diskCachePolicy.storesOriginals ? disk : nil)
        if let disk = work.variants {
            let queuedAt = ContinuousClock.now
            enqueue(stage, in: .decoding) { [self] in readVariant(stage, work: work, from: disk, queuedAt: queuedAt) }
        } else {
            subscribeUpstream(stage, work: work, waited: 0)
        }
    }

    /// A processed variant from disk; a miss, or one that no longer decodes (dropped
    /// then), goes on to make the image.
    private func readVariant(_ stage: Stage<ImageResponse>, work: ImageWork, from disk: DiskCache, queuedAt: ContinuousClock.Instant) {
        let start = ContinuousClock.now
        var work = work
        if let record = disk.record(forKey: work.key.variantDiskKey), let metadata = HTTPCacheMetadata(encoded: record.metadata) {
            // A variant expires with its original: while that is fresh the variant
            // answers; once stale, the original is revalidated (a bodiless 304 when
            // it is kept too), and the variant answers again if the server confirmed
            // it, or is made and kept again from what the server sent.
            if configuration.diskFreshnessPolicy.isFresh(metadata, at: Date()) {
                if let image = decodeVariant(record.data) {
                    var metrics = ImageMetrics()
                    metrics.decodeQueued = (start - queuedAt).seconds
                    metrics.decode = (ContinuousClock.now - start).seconds
                    var response = ImageResponse(image: image, url: work.request.url, source: .disk, metrics: metrics)
                    response.httpMetadata = metadata
                    finish(stage, with: .success(response)) { work.cache?.setImage(image, forKey: work.key) }
                    return
                }
                disk.removeRecord(forKey: work.key.variantDiskKey)
            } else if metadata.hasValidators {
                work.staleVariant = (record.data, metadata)
            }
        }
        // The wait and the look-up count with the decoding slot's wait of the image
        // made instead.
        let waited = (ContinuousClock.now - queuedAt).seconds
        goUpstream(stage, work: work, waited: waited)
    }

    /// Gives back `stage`'s slot and subscribes it to what it builds on, unless it was
    /// abandoned meanwhile. `waited` is the time the stage has already spent in the
    /// decoding queue.
    private func goUpstream(_ stage: Stage<ImageResponse>, work: ImageWork, waited: Double) {
        let live = lock.withLock { () -> Bool in
            guard endRun(of: stage) else { return false }
            subscribeUpstream(stage, work: work, waited: waited)
            return true
        }
        if live { pump() }
    }

    /// Answers `stage` with its stale variant when `input` was made from an original
    /// the server has just confirmed unchanged (a 304) under the validators the
    /// variant was made with: the variant is still the image asked for, and reading
    /// it back costs a fraction of making it again. The record is written again only
    /// when the 304 changed something a later load reads. False when there is no such
    /// variant, or it no longer decodes (dropped then).
    private func answerWithConfirmedVariant(
        _ stage: Stage<ImageResponse>, work: ImageWork, source: ImageSource, metrics: ImageMetrics,
        metadata: HTTPCacheMetadata?
    ) -> Bool {
        guard source == .revalidated, let variant = work.staleVariant, let metadata, let disk = work.variants,
              metadata.etag == variant.metadata.etag, metadata.lastModified == variant.metadata.lastModified
        else { return false }
        let start = ContinuousClock.now
        guard let image = decodeVariant(variant.data) else {
            disk.removeRecord(forKey: work.key.variantDiskKey)
            return false
        }
        var metrics = metrics
        metrics.decode = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: .revalidated, metrics: metrics)
        response.httpMetadata = metadata
        finish(stage, with: .success(response)) { [self] in
            work.cache?.setImage(image, forKey: work.key)
            if rewritesAfterRevalidation(metadata, stored: variant.metadata) {
                disk.store(variant.data, metadata: metadata.encoded(), forKey: work.key.variantDiskKey)
            }
        }
        return true
    }

    /// Subscribes `stage` to what it builds on; called with the lock held. `waited`
    /// is the time the stage has already spent in the decoding queue.
    private func subscribeUpstream(_ stage: Stage<ImageResponse>, work: ImageWork, waited: Double) {
        let key = work.key
        guard !key.processing.isEmpty else {
            let original = originalStage(for: work.request, priority: stage.priority)
            subscribe(stage, to: original) { [self] event in
                if case .partialData(let data) = event {
                    schedulePreview(of: stage) { [self] in decodePreview(data, for: stage, work: work) }
                    return
                }
                received(event, by: stage) { [self] original, wait in decode(original, for: stage, work: work, waited: waited + wait) }
            }
            return
        }
        if let decoded = work.cache?.image(forKey: key.decodedKey) {
            let response = ImageResponse(image: decoded, url: work.request.url, source: .memory, metrics: ImageMetrics())
            let queuedAt = ContinuousClock.now
            enqueue(stage, in: .decoding) { [self] in
                process(response, for: stage, work: work, waited: waited + (ContinuousClock.now - queuedAt).seconds)
            }
            return
        }
        var plain = work.request
        plain.processors = []
        let id = StageID(key: key.decodedKey, for: plain)
        let decoded = imageStage(for: id, request: plain, priority: stage.priority)
        subscribe(stage, to: decoded) { [self] event in
            if case .preview(let preview) = event {
                schedulePreview(of: stage) { [self] in processPreview(preview, for: stage, work: work) }
                return
            }
            received(event, by: stage) { [self] response, wait in process(response, for: stage, work: work, waited: waited + wait) }
        }
    }

    /// Handles an event of the stage `stage` builds on: progress is passed on, a
    /// failure ends `stage`, a value queues `stage`'s own work, which is told how
    /// long it waited for its decoding slot.
    private func received<Value>(
        _ event: StageEvent<Value>, by stage: Stage<ImageResponse>, then work: @escaping @Sendable (Value, Double) -> Void
    ) {
        switch event {
        case .progress(let progress):
            report(progress, to: stage)
        case .partialData, .preview:
            break
        case .finished(.failure(let error)):
            finish(stage, with: .failure(error))
        case .finished(.success(let value)):
            let queuedAt = ContinuousClock.now
            lock.withLock {
                guard !stage.isClosed else { return }
                stage.upstream = nil
                enqueue(stage, in: .decoding) { work(value, (ContinuousClock.now - queuedAt).seconds) }
            }
            pump()
        }
    }

    /// The image for `request` made from what the disk tier keeps, whatever its
    /// freshness: the stored variant of its size and processing, else the stored
    /// original decoded and processed; nil when there is neither, or it does not
    /// decode whole. Reads and decodes on the calling thread.
    func storedImage(for request: ImageRequest) -> (DecodedImage, ImageMetrics)? {
        guard let disk = lock.withLock({ diskCache(for: request) }) else { return nil }
        let key = request.cacheKey
        let policy = configuration.diskCachePolicy
        let start = ContinuousClock.now
        var metrics = ImageMetrics()
        if policy.storesProcessed, !key.isOriginal, let record = disk.record(forKey: key.variantDiskKey),
           let image = decodeVariant(record.data) {
            metrics.decode = (ContinuousClock.now - start).seconds
            return (image, metrics)
        }
        guard policy.storesOriginals, let record = disk.record(forKey: ImageCacheKey.originalDiskKey(request.imageKey)) else {
            return nil
        }
        let options = decodingOptions(targetSize: key.targetSize)
        guard let image = try? configuration.decoders.decode(record.data, options: options), !image.isPartial else { return nil }
        let decoded = ContinuousClock.now
        metrics.decode = (decoded - start).seconds
        let processed = image.processed(by: request.processors)
        metrics.processing = (ContinuousClock.now - decoded).seconds
        return (processed, metrics)
    }

    /// A stored variant's image: the compact lossless form, or PNG or JPEG as earlier
    /// versions kept them; nil when it does not decode.
    private func decodeVariant(_ data: Data) -> DecodedImage? {
        if VariantCodec.isVariant(data) {
            return VariantCodec.decode(data, maximumPixelCount: configuration.maximumPixelCount)
        }
        return try? configuration.decoders.decode(data, options: DecodingOptions(maximumPixelCount: configuration.maximumPixelCount))
    }

    private func decode(_ original: OriginalData, for stage: Stage<ImageResponse>, work: ImageWork, waited: Double) {
        if answerWithConfirmedVariant(
            stage, work: work, source: original.source, metrics: original.metrics, metadata: original.httpMetadata) {
            return
        }
        let start = ContinuousClock.now
        let options = decodingOptions(targetSize: work.key.targetSize)
        let result = Result { () throws(ImagoError) in
            guard let data = original.bytes.load() else {
                let path = work.originals?.fileURL(forKey: ImageCacheKey.originalDiskKey(work.request.imageKey)).path
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
            work.originals?.removeRecord(forKey: ImageCacheKey.originalDiskKey(work.request.imageKey))
            configuration.recentOriginals?.removeData(forKey: work.request.imageKey)
            if original.source != .network, !work.refetched, !result.exceedsALimit {
                // Stored bytes that no longer decode (a decoder that changed, a file
                // damaged in a way its checksum cannot see) are not this load's
                // failure: it asks the server for the image, once. An image over a
                // limit would come back the same.
                var again = work
                again.refetched = true
                again.staleVariant = nil
                goUpstream(stage, work: again, waited: waited)
                return
            }
            if work.cache != nil, !original.isTruncated, case .failure(let error) = result {
                configuration.recentFailures?.record(error, forKey: work.request.imageKey)
            }
        }
        var metrics = original.metrics
        metrics.decodeQueued = waited
        metrics.decode = (ContinuousClock.now - start).seconds
        complete(stage, work: work, with: result.map {
            var response = ImageResponse(image: $0, url: work.request.url, source: original.source, metrics: metrics)
            response.httpMetadata = original.httpMetadata
            return response
        })
    }

    /// The options a decode of an original runs with: the size wanted, the pixel
    /// limit, and the load's timeout as the decode's own (a file made to be slow to
    /// decode must not hold a core past the time its transfer was allowed).
    private func decodingOptions(targetSize: TargetSize?) -> DecodingOptions {
        var options = DecodingOptions(targetSize: targetSize, maximumPixelCount: configuration.maximumPixelCount)
        options.timeout = lock.withLock { loadingTimeout }
        return options
    }

    private func process(_ input: ImageResponse, for stage: Stage<ImageResponse>, work: ImageWork, waited: Double) {
        if answerWithConfirmedVariant(stage, work: work, source: input.source, metrics: input.metrics, metadata: input.httpMetadata) {
            return
        }
        let start = ContinuousClock.now
        let image = input.image.processed(by: work.request.processors)
        var metrics = input.metrics
        metrics.decodeQueued += waited
        metrics.processing = (ContinuousClock.now - start).seconds
        var response = ImageResponse(image: image, url: work.request.url, source: input.source, metrics: metrics)
        response.httpMetadata = input.httpMetadata
        complete(stage, work: work, with: .success(response))
    }

    /// Ends an image stage; what a task asked for goes into the memory cache, and
    /// into the disk tier when it keeps processed variants. A partial image goes into
    /// neither: a later load, which may not allow partial images, must never take it
    /// for the whole one.
    private func complete(_ stage: Stage<ImageResponse>, work: ImageWork, with result: Result<ImageResponse, ImagoError>) {
        finish(stage, with: result) {
            guard case .success(let response) = result, !response.image.isPartial else { return }
            work.cache?.setImage(response.image, forKey: work.key)
            if let disk = work.variants, let metadata = response.httpMetadata {
                Self.storeVariant(response.image, metadata: metadata, key: work.key, in: disk)
            }
        }
    }

    /// Keeps a sized or processed image on disk in the compact lossless form, with
    /// the HTTP freshness of its original; nothing the server forbade storing, and
    /// no animations (their frames would cost more than the original), nothing partial.
    private static func storeVariant(_ image: DecodedImage, metadata: HTTPCacheMetadata, key: ImageCacheKey, in disk: DiskCache) {
        guard !image.isAnimated, !image.isPartial, metadata.isStorable else { return }
        disk.store(VariantCodec.encode(image), metadata: metadata.encoded(), forKey: key.variantDiskKey)
    }

    // MARK: - Previews

    /// Decodes the bytes so far as a preview at the stage's size.
    private func decodePreview(_ data: Data, for stage: Stage<ImageResponse>, work: ImageWork) {
        previewDecodes.add(1, ordering: .relaxed)
        let options = decodingOptions(targetSize: work.key.targetSize)
        guard let image = try? configuration.decoders.decode(data, options: options) else { return }
        let preview = ImageResponse(
            image: image.isPartial ? image : image.markedPartial, url: work.request.url, source: .network, metrics: ImageMetrics())
        reportPreview(.preview(preview), to: stage)
    }

    /// Applies the stage's processors to a preview of the image it builds on.
    private func processPreview(_ input: ImageResponse, for stage: Stage<ImageResponse>, work: ImageWork) {
        let image = input.image.processed(by: work.request.processors)
        let preview = ImageResponse(image: image, url: work.request.url, source: input.source, metrics: ImageMetrics())
        reportPreview(.preview(preview), to: stage)
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
