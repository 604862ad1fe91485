import Foundation

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
