import Foundation

/// What the disk tier keeps of loaded images.
public enum DiskCachePolicy: String, Sendable, Hashable, Codable {
    /// The bytes as the server sent them, with their HTTP freshness: any size or
    /// processing can be made from them again, and they revalidate cheaply.
    case originals
    /// The sized and processed result, encoded (PNG with alpha, else JPEG): the
    /// fastest hit for a thumbnail, but the original is fetched for anything else.
    case processed
    /// Both.
    case both

    var storesOriginals: Bool { self != .processed }
    var storesProcessed: Bool { self != .originals }
}

/// The disk tier in a load: memory → disk → network, with HTTP freshness deciding
/// whether stored bytes are used as they are, revalidated, or served stale when the
/// network fails.
extension ImageLoader {
    /// A processed variant from disk, when the policy keeps them and the request has
    /// processing.
    func storedVariant(_ request: ImageRequest, job: Job) async throws(ImagoError) -> DecodedImage? {
        guard let disk = job.diskCache, configuration.diskCachePolicy.storesProcessed,
              request.targetSize != nil || !request.processors.isEmpty,
              let record = disk.record(forKey: job.key.variantDiskKey) else { return nil }
        let decoders = configuration.decoders
        let limit = configuration.maximumPixelCount
        do {
            return try await Self.offThePool { () throws(ImagoError) in
                try decoders.decode(record.data, options: DecodingOptions(maximumPixelCount: limit))
            }
        } catch {
            // A variant that no longer decodes is dropped and made again.
            disk.removeRecord(forKey: job.key.variantDiskKey)
            return nil
        }
    }

    /// The original bytes: fresh from disk, revalidated (a 304 reuses the stored
    /// bytes), fetched, or stale from disk when the network fails and that is allowed.
    func originalData(_ request: ImageRequest, job: Job) async throws(ImagoError) -> (Data, ImageSource, Int) {
        guard let disk = job.diskCache, configuration.diskCachePolicy.storesOriginals else {
            let (response, attempts) = try await fetch(request, job: job)
            return (response.data, response.statusCode == nil ? .local : .network, attempts)
        }
        let key = ImageCacheKey.originalDiskKey(request.imageKey)
        let stored = disk.record(forKey: key).flatMap { record in
            HTTPCacheMetadata(encoded: record.metadata).map { (record.data, $0) }
        }
        var validators: [String: String] = [:]
        if let (data, metadata) = stored {
            switch metadata.freshness(at: Date()) {
            case .fresh:
                return (data, .disk, 0)
            case .stale(let revalidatable):
                if revalidatable { validators = metadata.conditionalHeaders }
            }
        }
        let response: DataResponse, attempts: Int
        do {
            (response, attempts) = try await fetch(request, job: job, extraHeaders: validators)
        } catch {
            if case .cancelled = error { throw error }
            if let (data, metadata) = stored, let allowance = configuration.staleIfErrorAllowance,
               metadata.servesStale(afterError: Date(), allowance: allowance) {
                return (data, .disk, 0)
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
            return (data, .disk, attempts)
        }
        if let status = response.statusCode,
           let metadata = HTTPCacheMetadata(url: request.url, statusCode: status, headers: response.headers, storedAt: now) {
            disk.store(response.data, metadata: metadata.encoded(), forKey: key)
        } else if stored != nil {
            // The server now forbids storing (no-store): forget what was kept.
            disk.removeRecord(forKey: key)
        }
        return (response.data, .network, attempts)
    }

    /// Keeps the processed result on disk when the policy asks for it.
    func storeVariant(_ image: DecodedImage, request: ImageRequest, job: Job) {
        guard let disk = job.diskCache, configuration.diskCachePolicy.storesProcessed,
              request.targetSize != nil || !request.processors.isEmpty, !image.isAnimated else { return }
        let format: ImageFormat = image.bitmap.hasAlpha ? .png : .jpeg
        guard let encoder = ImageEncoders.encoder(for: format, quality: 90),
              let data = try? encoder.encode(image.bitmap) else { return }
        disk.store(data, metadata: Data(), forKey: job.key.variantDiskKey)
    }
}

extension DiskCache {
    /// The disk tier of `ImageLoader.shared`, in `DiskCache.defaultDirectory`.
    public static let shared = DiskCache()
}
