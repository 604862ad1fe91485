import Foundation

extension Pipeline {
    /// The original bytes of `request`'s image key, through the original-data stage
    /// images use: the same tiers, the same transfer shared with every load of the
    /// key in flight (images included), the same priority queue. Nothing is decoded.
    /// Cancelling the calling task leaves the stage, which stops when nobody else
    /// waits; the load ends at the loader's timeout as an image load does.
    func originalData(for request: ImageRequest) async -> Result<OriginalData, ImagoError> {
        let id = ImageTask.ids.withLock { $0 += 1; return $0 }
        let context = context
        let atHand = context.atHand(for: request, cache: cache, builtOn: nil)
        events.emit(id, url: request.url, .started(priority: request.priority))
        let key = OriginalKey(request)
        /// The continuation, until it is resumed once; the stage, once attached.
        let state = Locked<(continuation: CheckedContinuation<Result<OriginalData, ImagoError>, Never>?, stage: StageHandle<OriginalKey>?, ended: Result<OriginalData, ImagoError>?)>((nil, nil, nil))
        let resume: @Sendable (Result<OriginalData, ImagoError>) -> Void = { result in
            let continuation = state.withLock { state -> CheckedContinuation<Result<OriginalData, ImagoError>, Never>? in
                guard state.ended == nil else { return nil }
                state.ended = result
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: result)
        }
        let leave: @Sendable (ImagoError) -> Void = { [self] error in
            guard let stage = state.withLock({ $0.stage }) else { return resume(.failure(error)) }
            var transfers: [Task<Void, Never>] = []
            changeGraph { graph in graph.detach(id, from: .original(stage), stopping: &transfers) }
            for transfer in transfers { transfer.cancel() }
            resume(.failure(error))
        }
        let timeout = loadingTimeout
        let load: @Sendable () async -> Result<OriginalData, ImagoError> = { [self] in
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let early = state.withLock { state -> Result<OriginalData, ImagoError>? in
                        if state.ended == nil { state.continuation = continuation }
                        return state.ended
                    }
                    if let early { return continuation.resume(returning: early) }
                    changeGraph { graph in
                        var subscriber = StageSubscriber(priority: request.priority, isTask: true)
                        subscriber.deadline = DeadlineClock.isFinite(timeout) ? .now + .seconds(timeout) : nil
                        let stage = OriginalDataStage.stage(
                            for: key, request: request, priority: request.priority, atHand: atHand, in: &graph, context: context)
                        state.withLock { $0.stage = stage }
                        graph.attach(subscriber, id: id, receive: { [events] event in
                            switch event {
                            case .finished(let result): resume(result)
                            case .progress(let progress): events.emit(id, url: request.url, .progress(progress))
                            case .retrying(let attempt, let error, let delay):
                                events.emit(id, url: request.url, .retrying(attempt: attempt, error: error, delay: delay))
                            case .partialData, .preview: break
                            }
                        }, to: stage)
                    }
                }
            } onCancel: {
                leave(.cancelled)
            }
        }
        let result: Result<OriginalData, ImagoError>
        if DeadlineClock.isFinite(timeout) {
            // The deadline cancels the load's task, whose handler leaves the stage with
            // `cancelled`: the caller hears of the time instead.
            result = await withDeadline(seconds: timeout, url: request.url.absoluteString) { () async throws(ImagoError) in
                try await load().get()
            }
        } else {
            result = await load()
        }
        events.emitOutcome(id, url: request.url, result.map { ($0.source, $0.metrics) })
        return result
    }

    /// Runs `body` on the graph, then starts what may run.
    private func changeGraph(_ body: (inout StageGraph) -> Void) {
        start(graph.withLock { graph in
            body(&graph)
            return graph.takeRunnable()
        })
    }
}
