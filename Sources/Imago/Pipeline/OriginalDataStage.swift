import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes of one image key as the first stage delivers them.
struct OriginalData: Sendable {
    let bytes: OriginalBytes
    /// Where they came from: the network, the disk tier, or a `file:`/`data:` URL.
    let source: ImageResponse.Source
    /// Queueing and transfer times, bytes and attempts.
    let metrics: ImageResponse.Metrics
    /// The HTTP freshness of the bytes, when they came over HTTP (or from the disk
    /// tier, which keeps it): what the sized and processed variants made from them
    /// are kept with, so that they expire with their original.
    var httpMetadata: HTTPCacheMetadata?
    /// The transfer ended short of the body and these are the bytes that arrived
    /// (only for requests that allow partial images): never kept anywhere.
    var isTruncated = false
}

/// The first stage: the original bytes of an image key, from the disk tier while
/// fresh, revalidated there when stale (a 304 reuses the stored bytes), fetched
/// otherwise, retried per the retry policy, and served stale from disk when the
/// network fails and that is allowed. One transfer and one disk read serve every
/// size and processing of the key in flight.
struct OriginalDataStage: Sendable {
    let context: StageContext
    let stage: StageHandle<OriginalKey>
    let request: ImageRequest
    /// The loader's timeout when the stage started: the bound of a revalidation in
    /// the background, which no load waits for.
    let loadingTimeout: Double
    /// The `Retry-After` of the last failed attempt, in seconds: how long the failure
    /// is remembered for the repeats of the key.
    private let retryAfter = Locked<Double?>(nil)

    private var configuration: ImageLoaderConfiguration { context.configuration }

    /// The original-data stage of `key`, made and started from `request` if none is
    /// in flight.
    static func stage(
        for key: OriginalKey, request: ImageRequest, priority: ImageRequest.Priority, atHand: AtHand, in graph: inout StageGraph,
        context: StageContext
    ) -> StageHandle<OriginalKey> {
        let (stage, created) = graph.stage(for: key, priority: priority)
        if created {
            OriginalDataStage(context: context, stage: stage, request: request, loadingTimeout: graph.loadingTimeout)
                .start(atHand: atHand, in: &graph)
        }
        return stage
    }

    /// Queues the transfer, unless the memory of recent loads answered (`atHand`,
    /// looked up before the lock; nothing is remembered without a memory tier).
    private func start(atHand: AtHand, in graph: inout StageGraph) {
        let remembers = graph.cache != nil
        if remembers, let answer = atHand.recentOriginal {
            graph.answer(.original(stage))
            // Off the lock: the stage's first subscriber attaches after this returns.
            DispatchQueue.global(qos: .userInitiated).async { [self] in
                context.publisher.publish(.finished(answer, after: nil), of: stage)
            }
            return
        }
        let enqueuedAt = ContinuousClock.now
        let httpCache = configuration.storagePolicy.storesOriginals ? atHand.tiers : nil
        graph.enqueue(.original(stage), in: .transfers) { [self] run in
            let queued = ContinuousClock.now - enqueuedAt
            let task = Task.detached(priority: run.priority.taskPriority) { [self] in
                // No bound of its own: each load waiting ends at its own deadline, and
                // the transfer stops when the last one has left (a load joining later
                // keeps it going). A revalidation in the background, which no load
                // waits for, has a whole loading timeout.
                let result: Result<OriginalData, ImagoError>
                do throws(ImagoError) {
                    result = .success(
                        try await originalData(httpCache: httpCache, previews: run.previews, queued: queued, timeout: loadingTimeout))
                } catch {
                    result = .failure(error)
                }
                if remembers { remember(result) }
                context.publisher.publish(.finished(result, after: run), of: stage)
            }
            if !context.publisher.publish(.transferStarted(task), of: stage) { task.cancel() }
        }
    }

    /// Keeps the bytes of a whole network load, or a failure that would come again,
    /// for the repeats of the image key.
    private func remember(_ result: Result<OriginalData, ImagoError>) {
        switch result {
        case .success(let original) where original.source == .network && !original.isTruncated:
            // A failure asked again and mended is forgotten for every request.
            if request.cachePolicy.retriesFailed { configuration.recentFailures?.removeFailure(forKey: request.imageKey) }
            // A network load's bytes are in memory already; nothing is read back for them.
            if request.cachePolicy.writes.contains(.recentOriginals), case .loaded(let data) = original.bytes {
                configuration.recentOriginals?.store(data, metadata: original.httpMetadata, forKey: request.imageKey)
            }
        case .success:
            break
        case .failure(let error):
            configuration.recentFailures?.record(error, retryAfter: retryAfter.withLock { $0 }, forKey: request.imageKey)
        }
    }

    private func originalData(
        httpCache: HTTPCache?, previews: Bool, queued: Duration, timeout: Double
    ) async throws(ImagoError) -> OriginalData {
        let clock = ContinuousClock()
        let start = clock.now
        // `transferred`: the body that crossed the wire, when that is not `data` (none
        // for a 304, whose image is the stored bytes).
        func done(
            _ bytes: OriginalBytes, _ source: ImageResponse.Source, attempts: Int, _ metadata: HTTPCacheMetadata?, truncated: Bool = false,
            transferred: Int? = nil
        ) -> OriginalData {
            var metrics = ImageResponse.Metrics()
            metrics.queued = queued.seconds
            metrics.transfer = (clock.now - start).seconds
            metrics.bytes = transferred ?? bytes.count
            metrics.attempts = attempts
            return OriginalData(bytes: bytes, source: source, metrics: metrics, httpMetadata: metadata, isTruncated: truncated)
        }
        let onlyFromCache = request.cachePolicy.onlyFromCache
        guard let httpCache else {
            if onlyFromCache, !configuration.dataLoader.isLocal(request.url) { throw .notCached(url: request.url.absoluteString) }
            let (response, attempts) = try await fetch(previews: previews)
            if response.isTruncated { return done(.loaded(response.data), .network, attempts: attempts, nil, truncated: true) }
            let metadata = HTTPCacheMetadata(response, for: request.url, sending: configuration.requestFields(for: request), at: Date())
            let source: ImageResponse.Source = configuration.dataLoader.isLocal(request.url) ? .local : .network
            return done(.loaded(response.data), source, attempts: attempts, metadata)
        }
        let key = HTTPCacheKey.original(request.imageKey)
        let fields = configuration.requestFields(for: request)
        let pending: HTTPCache.Fetch
        switch await httpCache.lookUp(key, at: Date(), for: fields) {
        case .fresh(let data, let metadata, let source):
            return done(.loaded(data), source, attempts: 0, metadata)
        case .staleWhileRevalidating(let data, let metadata, let validators, let source):
            let stored = HTTPCache.Stored(bytes: .loaded(data), metadata: metadata, source: source)
            if onlyFromCache { return done(.loaded(data), source, attempts: 0, metadata) }
            revalidateInBackground(HTTPCache.Fetch(stored: stored, validators: validators), key: key, in: httpCache, timeout: timeout)
            return done(.loaded(data), source, attempts: 0, metadata)
        case .fetch(let fetch) where onlyFromCache:
            // Whatever its freshness: an offline load shows what is kept.
            httpCache.release(fetch)
            guard let stored = fetch.stored else { throw .notCached(url: request.url.absoluteString) }
            return done(stored.bytes, stored.source, attempts: 0, stored.metadata)
        case .fetch(let fetch):
            pending = fetch
        }
        let response: DataResponse, attempts: Int
        do {
            (response, attempts) = try await fetch(previews: previews, extraHeaders: pending.validators)
        } catch {
            if case .cancelled = error {
                httpCache.release(pending)
                throw error
            }
            if let stored = pending.stored, let data = httpCache.afterError(error, fetch: pending, key: key, at: Date()) {
                return done(.loaded(data), stored.source, attempts: 0, stored.metadata)
            }
            throw error
        }
        // A load that timed out or was cancelled while the answer came in keeps
        // nothing: its caller has already been told it failed.
        if Task.isCancelled {
            httpCache.release(pending)
            throw .cancelled
        }
        // What arrived of a body cut short is shown, never cached: the next load asks
        // again (for the rest only, when the server allows it: `PartialBodies`).
        if response.isTruncated {
            httpCache.release(pending)
            return done(.loaded(response.data), .network, attempts: attempts, nil, truncated: true)
        }
        let kept = httpCache.update(with: response, for: request.url, sending: fields, fetch: pending, key: key, at: Date())
        return done(kept.bytes, kept.source, attempts: attempts, kept.metadata, transferred: response.data.count)
    }

    /// Revalidates a stale original that `stale-while-revalidate` lets the load serve
    /// meanwhile, at background priority and within the loading timeout; what the
    /// server answers is kept for the next load. A failure changes nothing, unless
    /// the server said the image is gone.
    private func revalidateInBackground(_ fetch: HTTPCache.Fetch, key: HTTPCacheKey, in httpCache: HTTPCache, timeout: Double) {
        context.revalidations.start(key.name) { [self] in
            let result = await withDeadline(seconds: timeout, url: request.url.absoluteString) { [self] () async throws(ImagoError) in
                try await self.fetch(previews: false, extraHeaders: fetch.validators)
            }
            switch result {
            case .success((let response, _)) where !response.isTruncated:
                _ = httpCache.update(
                    with: response, for: request.url, sending: configuration.requestFields(for: request), fetch: fetch, key: key, at: Date())
            case .success: break
            case .failure(let error): _ = httpCache.afterError(error, fetch: fetch, key: key, at: Date(), servingStale: false)
            }
        }
    }

    /// Fetches the bytes, retrying per the policy; a non-2xx status is an error,
    /// except a 304 answering a conditional request (`extraHeaders` carries the
    /// validators then) about the response they came from: one naming another
    /// validator has not got the server's image, which is asked for again.
    ///
    /// A transfer cut short after a response that allows it is resumed, as Nuke
    /// does: the next attempt asks for the rest (`Range`, `If-Range`), and what
    /// arrived is kept for a later load (`PartialBodies`) when the retries run out.
    /// A later load starts from what is kept.
    ///
    /// `previews`, whether to pass on the bytes as they arrive, was settled when the
    /// transfer started: a request wanting previews that joins later gets them only
    /// if one already did. A revalidation in the background never does.
    private func fetch(previews: Bool, extraHeaders: [String: String] = [:]) async throws(ImagoError) -> (DataResponse, Int) {
        var validators = extraHeaders
        var conditionalRequest = try configuration.urlRequest(for: request, validators: validators)
        let url = request.url
        let wantsPartial = request.options.contains(.allowsPartialImages)
        let method = conditionalRequest.httpMethod?.uppercased() ?? "GET"
        // Only a plain GET over the network, which asks for no range of its own.
        let resumable = !configuration.dataLoader.isLocal(url) && method == "GET" && conditionalRequest.value(forHTTPHeaderField: "Range") == nil
        let kept = resumable ? configuration.partialBodies : nil
        let options = DataLoadingOptions(acceptsTruncatedBody: wantsPartial || resumable, reportsChunks: previews)
        // What the server chose by the request's fields (`Vary`) is continued only
        // for the same fields.
        let fields = configuration.requestFields(for: request)
        var resume = kept?.body(for: url).flatMap { $0.isSelected(by: fields) ? $0 : nil }
        var attempt = 0
        while true {
            attempt += 1
            let error: ImagoError
            var retryAfter: String?
            var urlRequest = conditionalRequest
            if let resume {
                for (name, value) in resume.requestHeaders { urlRequest.setValue(value, forHTTPHeaderField: name) }
            }
            // Outside the retries: what the modifier throws ends the load as it is.
            if let modify = configuration.asyncRequestModifier, !configuration.dataLoader.isLocal(url) {
                urlRequest = try await modify(urlRequest)
                if Task.isCancelled { throw .cancelled }
            }
            do throws(ImagoError) {
                let scanner = previews ? Locked(PreviewScanner()) : nil
                // Progress and previews count the kept bytes as received already.
                let offset = Int64(resume?.data.count ?? 0)
                if let resume, let scanner {
                    _ = scanner.withLock { $0.receive(DataLoadingProgress(received: offset, expected: resume.totalLength, chunk: resume.data)) }
                }
                var response = try await configuration.dataLoader.loadData(for: urlRequest, options: options) { [weak publisher = context.publisher, stage] progress in
                    let progress = offset == 0 ? progress : DataLoadingProgress(
                        received: offset + progress.received, expected: progress.expected.map { offset + $0 }, chunk: progress.chunk)
                    publisher?.publish(.progress(ImageTask.Progress(received: progress.received, expected: progress.expected)), of: stage)
                    if let snapshot = scanner?.withLock({ $0.receive(progress) }) {
                        publisher?.publish(.preview(.partialData(snapshot)), of: stage)
                    }
                }
                // A data loader of an app's own may not say; the request it was given shows.
                if HTTPHeaderFields.carryCredentials(urlRequest) {
                    response.requestCarriedCredentials = true
                }
                if let partial = resume {
                    switch partial.resumed(by: response) {
                    case .complete(let whole):
                        response = whole
                        resume = nil
                    case .cutAgain(let cut, let longer):
                        response = cut
                        response.endedEarly = TransferFailure.connectionEnded(
                            lost: false, received: Int64(longer.data.count), expected: longer.totalLength
                        ).error(url: url)
                        resume = longer
                    case .startOver:
                        // Asked again at once, for the whole: not a failed attempt.
                        kept?.removeBody(for: url)
                        resume = nil
                        attempt -= 1
                        continue
                    case .replaced:
                        // Another body: what was kept belongs to an older resource.
                        if response.statusCode.map({ (200..<300).contains($0) }) == true {
                            kept?.removeBody(for: url)
                            resume = nil
                        }
                    }
                }
                if response.isTruncated, resume == nil { resume = PartialBody(cut: response, sending: fields) }
                if response.isTruncated {
                    if wantsPartial {
                        // Shown as it is, and kept for the next load to finish.
                        if let resume { kept?.store(resume, for: url) } else { kept?.removeBody(for: url) }
                        return (response, attempt)
                    }
                    throw response.endedEarly ?? TransferFailure.connectionEnded(
                        lost: false, received: Int64(response.data.count), expected: nil).error(url: url)
                }
                if response.statusCode == 304, !validators.isEmpty,
                   !HTTPCacheMetadata.notModified(response.headers, answers: validators) {
                    // A 304 naming another validator than the kept response's: the
                    // server's image is not the one kept, and the 304 has not got it.
                    // Asked again at once without conditions: not a failed attempt.
                    validators = [:]
                    conditionalRequest = try configuration.urlRequest(for: request, validators: validators)
                    attempt -= 1
                    continue
                }
                // 204 and 205 say there is no body: the status is the reason, not a
                // failed decode of nothing.
                if let status = response.statusCode, !(200..<300).contains(status) || status == 204 || status == 205,
                   !(status == 304 && !validators.isEmpty) {
                    retryAfter = response.headers["retry-after"]
                    throw .httpStatus(status, url: url.absoluteString)
                }
                kept?.removeBody(for: url)
                return (response, attempt)
            } catch let failure {
                error = failure
            }
            guard let delay = configuration.retryPolicy.delay(afterAttempt: attempt, error: error, retryAfter: retryAfter) else {
                self.retryAfter.withLock { $0 = retryAfter.flatMap { RetryPolicy.retryAfterSeconds($0, now: Date()) } }
                // What arrived waits for a later load; a cancelled one too.
                if let resume { kept?.store(resume, for: url) }
                throw error
            }
            context.publisher.publish(.retrying(attempt: attempt, error: error, delay: delay), of: stage)
            // On the shared clock: a cancelled `Task.sleep` would keep its timer until its time.
            do { try await DeadlineClock.shared.sleep(delay) } catch {
                if let resume { kept?.store(resume, for: url) }
                throw .cancelled
            }
        }
    }
}
