import Foundation

extension Pipeline {
    /// The image for `request` made from what the disk tier keeps, whatever its
    /// freshness: the stored variant of its size and processing, else the stored
    /// original decoded and processed; nil when there is neither, or it does not
    /// decode whole. Reads and decodes on the calling thread.
    func storedImage(for request: ImageRequest) -> (DecodedImage, ImageResponse.Metrics)? {
        let (tiers, timeout) = storage(for: request)
        // The local tier only: this runs on the caller's thread, which may be the main one.
        guard let tier = tiers?.tiers.first(where: { !$0.answersOverNetwork }) else { return nil }
        let key = request.cacheKey
        let policy = configuration.storagePolicy
        let start = ContinuousClock.now
        var metrics = ImageResponse.Metrics()
        if policy.storesProcessed, !key.isOriginal, let record = tier.contents(for: .variant(key)),
           let image = configuration.decodeVariant(record.data) {
            metrics.decode = (ContinuousClock.now - start).seconds
            return (image, metrics)
        }
        guard policy.storesOriginals, let record = tier.contents(for: .original(request.imageKey)) else {
            return nil
        }
        let options = configuration.decodingOptions(targetSize: key.targetSize, timeout: timeout)
        guard let image = try? configuration.decoders.decode(record.data, options: options), !image.isPartial else { return nil }
        let decoded = ContinuousClock.now
        metrics.decode = (decoded - start).seconds
        let processed = image.processed(by: request.processors)
        metrics.processing = (ContinuousClock.now - decoded).seconds
        return (processed, metrics)
    }
}
