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
            enqueue(stage, in: .decoding) { [self] in readVariant(stage, work: work, from: disk) }
        } else {
            subscribeUpstream(stage, work: work)
        }
    }

    /// A processed variant from disk; a miss, or one that no longer decodes (dropped
    /// then), goes on to make the image.
    private func readVariant(_ stage: Stage<ImageResponse>, work: ImageWork, from disk: DiskCache) {
        let start = ContinuousClock.now
        if let record = disk.record(forKey: work.key.variantDiskKey) {
            // A variant expires with its original: while that is fresh the variant
            // answers; once stale, the original is revalidated (a bodiless 304 when
            // it is kept too) and the variant made and kept again.
            let metadata = HTTPCacheMetadata(encoded: record.metadata)
            if case .fresh? = metadata?.freshness(at: Date()) {
                if let image = decodeVariant(record.data) {
                    var metrics = ImageMetrics()
                    metrics.decode = (ContinuousClock.now - start).seconds
                    var response = ImageResponse(image: image, url: work.request.url, source: .disk, metrics: metrics)
                    response.httpMetadata = metadata
                    finish(stage, with: .success(response)) { work.cache?.setImage(image, forKey: work.key) }
                    return
                }
                disk.removeRecord(forKey: work.key.variantDiskKey)
            }
        }
        let live = lock.withLock { () -> Bool in
            guard endRun(of: stage) else { return false }
            subscribeUpstream(stage, work: work)
            return true
        }
        if live { pump() }
    }

    /// Subscribes `stage` to what it builds on; called with the lock held.
    private func subscribeUpstream(_ stage: Stage<ImageResponse>, work: ImageWork) {
        let key = work.key
        guard !key.processing.isEmpty else {
            let original = originalStage(for: work.request, priority: stage.priority)
            subscribe(stage, to: original) { [self] event in
                if case .partialData(let data) = event {
                    schedulePreview(of: stage) { [self] in decodePreview(data, for: stage, work: work) }
                    return
                }
                received(event, by: stage) { [self] original in decode(original, for: stage, work: work) }
            }
            return
        }
        if let decoded = work.cache?.image(forKey: key.decodedKey) {
            let response = ImageResponse(image: decoded, url: work.request.url, source: .memory, metrics: ImageMetrics())
            enqueue(stage, in: .decoding) { [self] in process(response, for: stage, work: work) }
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
            received(event, by: stage) { [self] response in process(response, for: stage, work: work) }
        }
    }

    /// Handles an event of the stage `stage` builds on: progress is passed on, a
    /// failure ends `stage`, a value queues `stage`'s own work.
    private func received<Value>(
        _ event: StageEvent<Value>, by stage: Stage<ImageResponse>, then work: @escaping @Sendable (Value) -> Void
    ) {
        switch event {
        case .progress(let progress):
            report(progress, to: stage)
        case .partialData, .preview:
            break
        case .finished(.failure(let error)):
            finish(stage, with: .failure(error))
        case .finished(.success(let value)):
            lock.withLock {
                guard !stage.isClosed else { return }
                stage.upstream = nil
                enqueue(stage, in: .decoding) { work(value) }
            }
            pump()
        }
    }

    /// A stored variant's image: the compact lossless form, or PNG or JPEG as earlier
    /// versions kept them; nil when it does not decode.
    private func decodeVariant(_ data: Data) -> DecodedImage? {
        if VariantCodec.isVariant(data) {
            return VariantCodec.decode(data, maximumPixelCount: configuration.maximumPixelCount)
        }
        return try? configuration.decoders.decode(data, options: DecodingOptions(maximumPixelCount: configuration.maximumPixelCount))
    }

    private func decode(_ original: OriginalData, for stage: Stage<ImageResponse>, work: ImageWork) {
        let start = ContinuousClock.now
        let options = DecodingOptions(targetSize: work.key.targetSize, maximumPixelCount: configuration.maximumPixelCount)
        let result = Result { () throws(ImagoError) in
            let image = try configuration.decoders.decode(original.data, options: options)
            // Bytes cut short are partial even where the decoder found all the pixels
            // (a file cut just before its end marker).
            return original.isTruncated && !image.isPartial ? image.markedPartial : image
        }
        let partial = (try? result.get())?.isPartial ?? false
        if partial || result.isFailure, original.source != .local {
            // Bytes that do not decode (a captive portal's page, an image over the
            // pixel limit), or only in part (a body cut short whose length matched),
            // are not kept to be served again: the next load asks the server, unless
            // the bytes came whole and are no image, which asking again would not mend.
            work.originals?.removeRecord(forKey: ImageCacheKey.originalDiskKey(work.request.imageKey))
            configuration.recentOriginals?.removeData(forKey: work.request.imageKey)
            if work.cache != nil, !original.isTruncated, case .failure(let error) = result {
                configuration.recentFailures?.record(error, forKey: work.request.imageKey)
            }
        }
        var metrics = original.metrics
        metrics.decode = (ContinuousClock.now - start).seconds
        complete(stage, work: work, with: result.map {
            var response = ImageResponse(image: $0, url: work.request.url, source: original.source, metrics: metrics)
            response.httpMetadata = original.httpMetadata
            return response
        })
    }

    private func process(_ input: ImageResponse, for stage: Stage<ImageResponse>, work: ImageWork) {
        let start = ContinuousClock.now
        let image = input.image.processed(by: work.request.processors)
        var metrics = input.metrics
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
        let options = DecodingOptions(targetSize: work.key.targetSize, maximumPixelCount: configuration.maximumPixelCount)
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
