import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes of one image key as the first stage delivers them.
struct OriginalData: Sendable {
    let data: Data
    /// Where they came from: the network, the disk tier, or a `file:`/`data:` URL.
    let source: ImageSource
    /// Queueing and transfer times, bytes and attempts.
    let metrics: ImageMetrics
}

/// The first stage: the original bytes of an image key, from the disk tier while
/// fresh, revalidated there when stale (a 304 reuses the stored bytes), fetched
/// otherwise, retried per the retry policy, and served stale from disk when the
/// network fails and that is allowed. One transfer and one disk read serve every
/// size and processing of the key in flight.
extension Pipeline {
    /// Queues the transfer; called with the lock held.
    func startOriginalStage(_ stage: Stage<OriginalData>, request: ImageRequest) {
        let enqueuedAt = ContinuousClock.now
        let disk = configuration.diskCachePolicy.storesOriginals ? diskCache(for: request) : nil
        enqueue(stage, in: .transfers) { [self] in
            let (timeout, priority) = lock.withLock { (loadingTimeout, stage.priority) }
            let queued = ContinuousClock.now - enqueuedAt
            let task = Task.detached(priority: priority.taskPriority) { [self] in
                let result = await withDeadline(seconds: timeout, url: request.url.absoluteString) { [self] () async throws(ImagoError) in
                    try await originalData(request, disk: disk, stage: stage, queued: queued)
                }
                finish(stage, with: result)
            }
            lock.withLock {
                if stage.isClosed { task.cancel() } else if stage.queue != nil { stage.task = task }
            }
        }
    }

    private func originalData(
        _ request: ImageRequest, disk: DiskCache?, stage: Stage<OriginalData>, queued: Duration
    ) async throws(ImagoError) -> OriginalData {
        let clock = ContinuousClock()
        let start = clock.now
        func done(_ data: Data, _ source: ImageSource, attempts: Int) -> OriginalData {
            var metrics = ImageMetrics()
            metrics.queued = queued.seconds
            metrics.transfer = (clock.now - start).seconds
            metrics.bytes = data.count
            metrics.attempts = attempts
            return OriginalData(data: data, source: source, metrics: metrics)
        }
        guard let disk else {
            let (response, attempts) = try await fetch(request, stage: stage)
            return done(response.data, response.statusCode == nil ? .local : .network, attempts: attempts)
        }
        let key = ImageCacheKey.originalDiskKey(request.imageKey)
        let stored = disk.record(forKey: key).flatMap { record in
            HTTPCacheMetadata(encoded: record.metadata).map { (record.data, $0) }
        }
        var validators: [String: String] = [:]
        if let (data, metadata) = stored {
            switch metadata.freshness(at: Date()) {
            case .fresh:
                return done(data, .disk, attempts: 0)
            case .stale(let revalidatable):
                if revalidatable { validators = metadata.conditionalHeaders }
            }
        }
        let response: DataResponse, attempts: Int
        do {
            (response, attempts) = try await fetch(request, stage: stage, extraHeaders: validators)
        } catch {
            if case .cancelled = error { throw error }
            if let (data, metadata) = stored, let allowance = configuration.staleIfErrorAllowance,
               metadata.servesStale(afterError: Date(), allowance: allowance) {
                return done(data, .disk, attempts: 0)
            }
            throw error
        }
        let now = Date()
        if response.statusCode == 304, let (data, metadata) = stored {
            let updated = metadata.updated(with: response.headers, statusCode: 304, at: now)
            if updated.isStorable {
                disk.store(data, metadata: updated.encoded(), forKey: key)
            } else {
                disk.removeRecord(forKey: key)
            }
            return done(data, .disk, attempts: attempts)
        }
        if let status = response.statusCode,
           let metadata = HTTPCacheMetadata(url: request.url, statusCode: status, headers: response.headers, storedAt: now) {
            disk.store(response.data, metadata: metadata.encoded(), forKey: key)
        } else if stored != nil {
            // The server now forbids storing (no-store): forget what was kept.
            disk.removeRecord(forKey: key)
        }
        return done(response.data, .network, attempts: attempts)
    }

    /// Fetches the bytes, retrying per the policy; a non-2xx status is an error,
    /// except a 304 answering a conditional request (`extraHeaders` carries the
    /// validators then).
    private func fetch(
        _ request: ImageRequest, stage: Stage<OriginalData>, extraHeaders: [String: String] = [:]
    ) async throws(ImagoError) -> (DataResponse, Int) {
        var urlRequest = request.urlRequest
        for (name, value) in extraHeaders { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in configuration.headers where urlRequest.value(forHTTPHeaderField: name) == nil {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        // The formats this build decodes, so a negotiating server never picks one it cannot.
        if urlRequest.value(forHTTPHeaderField: "Accept") == nil {
            urlRequest.setValue(ImageFormat.acceptHeader, forHTTPHeaderField: "Accept")
        }
        if let modifier = configuration.requestModifier { urlRequest = modifier(urlRequest) }
        var attempt = 0
        while true {
            attempt += 1
            let error: ImagoError
            var retryAfter: String?
            do throws(ImagoError) {
                let response = try await configuration.dataLoader.loadData(for: urlRequest) { [weak self] received, expected in
                    self?.report(ImageTask.Progress(received: received, expected: expected), to: stage)
                }
                if let status = response.statusCode, !(200..<300).contains(status), !(status == 304 && !extraHeaders.isEmpty) {
                    retryAfter = response.headers["retry-after"]
                    throw .httpStatus(status, url: request.url.absoluteString)
                }
                return (response, attempt)
            } catch let failure {
                error = failure
            }
            guard let delay = configuration.retryPolicy.delay(afterAttempt: attempt, error: error, retryAfter: retryAfter) else {
                throw error
            }
            do { try await Task.sleep(for: .seconds(delay)) } catch { throw .cancelled }
        }
    }
}

extension Duration {
    /// The duration in seconds, as metrics report it.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension ImageRequest.Priority {
    /// The Swift task priority a transfer at this priority runs at.
    var taskPriority: TaskPriority {
        switch self {
        case .veryLow, .low: .background
        case .normal: .medium
        case .high, .veryHigh: .high
        }
    }
}
