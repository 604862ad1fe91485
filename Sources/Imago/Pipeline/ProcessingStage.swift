import Foundation

/// A decoded image processed: built on the decoded image of its key and size, taken
/// from the memory cache when it is there.
struct ProcessingStage: ImageStage {
    let context: StageContext
    let stage: StageHandle<ProcessedKey>
    let stageKey: ProcessedKey

    func buildUpstream(work: ImageWork, atHand: AtHand, waited: Double, in graph: inout StageGraph) {
        if let decoded = atHand.builtOn {
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
        let decoded = DecodingStage.stage(
            for: stageKey.decoded, request: plain, priority: priority, atHand: atHand, in: &graph, context: context)
        graph.subscribe(.processed(stage), to: decoded) { [self] event in
            if case .preview(let preview) = event {
                context.publisher.publish(.previewWork { [self] in processPreview(preview, work: work) }, of: stage)
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
        context.publisher.publish(.preview(.preview(preview)), of: stage)
    }
}
