import Foundation

/// An image decoded at its key's size from the original data of its image key.
struct DecodingStage: ImageStage {
    let context: StageContext
    let stage: StageHandle<DecodedKey>
    let stageKey: DecodedKey

    private var configuration: ImageLoaderConfiguration { context.configuration }

    func buildUpstream(work: ImageWork, atHand: AtHand, waited: Double, in graph: inout StageGraph) {
        let priority = graph.record(stage)?.core.priority ?? work.request.priority
        let original = OriginalDataStage.stage(
            for: stageKey.original, request: work.request, priority: priority, atHand: atHand, in: &graph, context: context)
        graph.subscribe(.decoded(stage), to: original) { [self] event in
            if case .partialData(let data) = event {
                context.publisher.publish(.previewWork { [self] in decodePreview(data, work: work) }, of: stage)
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
        let options = configuration.decodingOptions(targetSize: work.key.targetSize, timeout: run.loadingTimeout)
        let result = Result { () throws(ImagoError) in
            guard let data = original.bytes.load() else {
                let path = work.originals?.location(of: .original(work.request.imageKey))
                throw .fileError(path: path ?? work.request.url.absoluteString, reason: "the stored image could not be read back", errno: nil)
            }
            // The loads waiting are out of time already: their own deadline says so,
            // not a decode stopped before it began.
            guard run.loadingTimeout > 0 else { throw .timedOut(url: work.request.url.absoluteString, seconds: work.loadingTimeout) }
            let image = try configuration.decoders.decode(data, options: options)
            // Bytes cut short are partial even where the decoder found all the pixels
            // (a file cut just before its end marker).
            return original.isTruncated && !image.isPartial ? image.markedPartial : image
        }.mapError { $0.naming(work.request.url) }
        let partial = (try? result.get())?.isPartial ?? false
        // A decode out of time says nothing of the bytes: they stay where they are.
        if partial || result.isFailure, original.source != .local, !result.ranOutOfTime {
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
            if work.remembers, !original.isTruncated, case .failure(let error) = result {
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
        context.previewDecodes.withLock { $0 += 1 }
        let options = configuration.decodingOptions(targetSize: work.key.targetSize, timeout: work.loadingTimeout)
        guard let image = try? configuration.decoders.decode(data, options: options) else { return }
        let preview = ImageResponse(
            image: image.isPartial ? image : image.markedPartial, url: work.request.url, source: .network, metrics: ImageResponse.Metrics())
        context.publisher.publish(.preview(.preview(preview)), of: stage)
    }
}

extension Result {
    fileprivate var isFailure: Bool {
        if case .failure = self { true } else { false }
    }
}

extension Result<DecodedImage, ImagoError> {
    /// A failure for want of time, not for the bytes.
    fileprivate var ranOutOfTime: Bool {
        switch self {
        case .failure(.decodingTimedOut), .failure(.timedOut): true
        default: false
        }
    }

    /// A failure for the image's size or frame count, not for its bytes.
    fileprivate var exceedsALimit: Bool {
        switch self {
        case .failure(.imageTooLarge), .failure(.tooManyFrames): true
        default: false
        }
    }
}
