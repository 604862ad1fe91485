import Foundation

/// A store of HTTP responses by string key, which `HTTPCache` keeps originals and
/// variants in: the disk tier (`DiskCache`), or a store shared by a fleet.
///
/// Reads are made only from the pipeline's transfer and decoding slots, never on the
/// main thread, so a tier may take a network round trip to answer one (its slot waits
/// meanwhile). Writes may return before the record lands (fire and forget): a read
/// right after one may miss it, and a write that fails loses nothing but the record.
/// A tier keeps metadata as the bytes it is given and never reads them.
protocol HTTPCacheTier: Sendable {
    /// The metadata of the record under `key` and the size of its body, without the
    /// body: the metadata alone decides whether the body is used.
    func recordHead(forKey key: String) -> (metadata: Data, bodyCount: Int)?
    /// The body and metadata of the record under `key`.
    func recordContents(forKey key: String) -> (data: Data, metadata: Data)?
    /// Keeps `data` with `metadata` under `key`, replacing what was there.
    /// `bodyChecksum`, the CRC-32 of `data` when it is known, spares the tier
    /// reading `data` again to checksum it.
    func store(_ data: Data, metadata: Data, forKey key: String, bodyChecksum: UInt32?)
    /// Removes the record under `key`.
    func removeRecord(forKey key: String)
    /// Where the record under `key` is kept, for error messages.
    func location(ofKey key: String) -> String
}

extension HTTPCacheTier {
    /// Keeps `data` with `metadata` under `key`, its checksum made by the tier.
    func store(_ data: Data, metadata: Data, forKey key: String) {
        store(data, metadata: metadata, forKey: key, bodyChecksum: nil)
    }
}

extension DiskCache: HTTPCacheTier {
    func recordContents(forKey key: String) -> (data: Data, metadata: Data)? {
        record(forKey: key).map { ($0.data, $0.metadata) }
    }

    func location(ofKey key: String) -> String {
        fileURL(forKey: key).path
    }
}

/// HTTP caching of originals, and of the variants made from them, over one tier:
/// what a load may use as it is, what it asks the server to confirm, and what it
/// keeps of the answer. The rules (RFC 9111 freshness as `DiskCache.FreshnessPolicy`
/// adjusts it, RFC 5861's stale-while-revalidate and stale-if-error) are applied here
/// alone; the stages ask and act on the answers.
struct HTTPCache: Sendable {
    let tier: any HTTPCacheTier
    let freshnessPolicy: DiskCache.FreshnessPolicy
    /// How long past its freshness a stored response may stand in after a network
    /// failure, unless it says otherwise; nil for never.
    let staleIfErrorAllowance: Double?

    /// A response in the tier, its body read only where it is used.
    struct Stored: Sendable {
        let bytes: OriginalBytes
        let metadata: HTTPCacheMetadata
    }

    /// What the tier holds for a key, and what to do with it.
    enum Lookup: Sendable {
        /// Fresh: used as it is.
        case fresh(Data, HTTPCacheMetadata)
        /// Stale within its stale-while-revalidate window: used as it is, and
        /// revalidated in the background with `validators`.
        case staleWhileRevalidating(Data, HTTPCacheMetadata, validators: [String: String])
        /// Stale: the server is asked, with `validators` when it can confirm the
        /// stored response (a 304 reuses it then); kept meanwhile in case the server
        /// cannot be reached (stale-if-error).
        case revalidate(Stored, validators: [String: String])
        /// Nothing usable is kept.
        case miss
    }

    /// Looks up the original under `key` at `now`.
    func lookUp(_ key: String, at now: Date) -> Lookup {
        guard let head = tier.recordHead(forKey: key), let metadata = HTTPCacheMetadata(encoded: head.metadata) else {
            return .miss
        }
        let stored = Stored(bytes: .stored(tier, key: key, metadata: head.metadata, count: head.bodyCount), metadata: metadata)
        var validators: [String: String] = [:]
        if case .stale(revalidatable: true) = metadata.freshness(at: now) { validators = metadata.conditionalHeaders }
        let fresh = freshnessPolicy.isFresh(metadata, at: now)
        guard fresh || metadata.servesWhileRevalidating(at: now) else { return .revalidate(stored, validators: validators) }
        // Gone or damaged since its head was read: fetched as if never stored.
        guard let data = stored.bytes.load() else { return .miss }
        return fresh ? .fresh(data, metadata) : .staleWhileRevalidating(data, metadata, validators: validators)
    }

    /// Keeps what the server answered for `url` under `key`: a 304 freshens the
    /// stored response, whose bytes are the image then; a storable response is
    /// stored; one the server now forbids storing (no-store) removes what was kept.
    /// Returns the image's bytes, where they came from, and their freshness.
    func update(
        with response: DataResponse, for url: URL, stored: Stored?, key: String, at now: Date
    ) -> (bytes: OriginalBytes, source: ImageResponse.Source, metadata: HTTPCacheMetadata?) {
        if response.statusCode == 304, let stored {
            let updated = stored.metadata.updated(with: response.headers, statusCode: 304, at: now)
            // The stored bytes are read here only to write the record again or
            // before it goes; otherwise by the stage that uses them, if one does.
            guard !updated.isStorable || rewritesAfterRevalidation(updated, stored: stored.metadata),
                  let data = stored.bytes.load() else {
                return (stored.bytes, .revalidated, updated)
            }
            if updated.isStorable {
                tier.store(data, metadata: updated.encoded(), forKey: key)
            } else {
                tier.removeRecord(forKey: key)
            }
            return (.loaded(data), .revalidated, updated)
        }
        var metadata = response.statusCode.flatMap {
            HTTPCacheMetadata(url: url, statusCode: $0, headers: response.headers, storedAt: now)
        }
        if !response.redirects.isEmpty {
            // Kept under the URL asked for only as long as every redirect on the way
            // may be reused too.
            metadata = HTTPCacheMetadata.reuseLifetime(through: response.redirects, at: now).flatMap { metadata?.capped(toLifetime: $0) }
        }
        if let metadata {
            tier.store(response.data, metadata: metadata.encoded(), forKey: key)
        } else if stored != nil {
            tier.removeRecord(forKey: key)
        }
        return (.loaded(response.data), .network, metadata)
    }

    /// After the server could not give the image kept under `key`: the stored body,
    /// when stale-if-error lets it stand in (and `servingStale`); the record goes
    /// when the server said the image is gone.
    func afterError(_ error: ImagoError, stored: Stored, key: String, at now: Date, servingStale: Bool = true) -> Data? {
        if servingStale, error.allowsStaleResponse, let allowance = staleIfErrorAllowance,
           stored.metadata.servesStale(afterError: now, allowance: allowance), let data = stored.bytes.load() {
            return data
        }
        if error.meansResourceGone { tier.removeRecord(forKey: key) }
        return nil
    }

    /// Whether a record the server confirmed with a 304 is written again with its
    /// `updated` metadata. Not when nothing a later load reads would change (see
    /// `HTTPCacheMetadata.confirms(_:)`): an image served `no-cache` is confirmed at
    /// every load, and writing its original (the whole photo) and its variants back
    /// each time would cost more than the revalidation. Under a trust period the time
    /// of the confirmation counts, so the record is always written then.
    private func rewritesAfterRevalidation(_ updated: HTTPCacheMetadata, stored: HTTPCacheMetadata) -> Bool {
        freshnessPolicy != .httpHeaders || !updated.confirms(stored)
    }

    // MARK: - Variants

    /// A sized or processed variant as the tier keeps it.
    enum VariantLookup: Sendable {
        /// Fresh with its original: used as it is.
        case fresh(Data, HTTPCacheMetadata)
        /// Stale with validators: used as it is if the server confirms the original
        /// it was made from (`confirms`).
        case stale(Data, HTTPCacheMetadata)
        case miss
    }

    /// Looks up the variant under `key` at `now`. A variant expires with its
    /// original: while that is fresh the variant answers; once stale, the original
    /// is revalidated, and the variant answers again if the server confirmed it, or
    /// is made and kept again from what the server sent.
    func lookUpVariant(_ key: String, at now: Date) -> VariantLookup {
        guard let record = tier.recordContents(forKey: key), let metadata = HTTPCacheMetadata(encoded: record.metadata) else {
            return .miss
        }
        if freshnessPolicy.isFresh(metadata, at: now) { return .fresh(record.data, metadata) }
        return metadata.hasValidators ? .stale(record.data, metadata) : .miss
    }

    /// Whether `original`, the metadata of an original the server has just confirmed
    /// (a 304), confirms a stale variant kept with `variant`: made under the same
    /// validators, it is still the image asked for.
    func confirms(_ original: HTTPCacheMetadata, variant: HTTPCacheMetadata) -> Bool {
        original.etag == variant.etag && original.lastModified == variant.lastModified
    }

    /// Keeps a confirmed variant with its original's `updated` metadata, only when
    /// the 304 changed something a later load reads.
    func freshenVariant(_ data: Data, stored: HTTPCacheMetadata, updated: HTTPCacheMetadata, key: String) {
        if rewritesAfterRevalidation(updated, stored: stored) {
            tier.store(data, metadata: updated.encoded(), forKey: key)
        }
    }

    /// Keeps a variant with the HTTP freshness of its original, unless the server
    /// forbade storing it; `encode` makes its bytes only then (whose CRC-32 is
    /// `bodyChecksum` when known).
    func storeVariant(metadata: HTTPCacheMetadata, key: String, bodyChecksum: UInt32? = nil, encode: () -> Data) {
        guard metadata.isStorable else { return }
        tier.store(encode(), metadata: metadata.encoded(), forKey: key, bodyChecksum: bodyChecksum)
    }

    /// Removes what is kept under `key`: a record that no longer decodes.
    func remove(_ key: String) {
        tier.removeRecord(forKey: key)
    }
}

extension ImagoError {
    /// Whether a stored response may stand in after this failure: when the server
    /// could not be reached or answered with a passing fault (500, 502, 503, 504), as
    /// RFC 5861's stale-if-error has it; never after an answer that speaks of the
    /// resource itself (a 404, a 403, a 410).
    var allowsStaleResponse: Bool {
        switch self {
        case .network, .timedOut: true
        case .httpStatus(let status, _): [500, 502, 503, 504].contains(status)
        default: false
        }
    }

    /// Whether the server said the image is gone or no longer ours to see (a deleted
    /// image, a revoked signed URL): what was kept of it goes too.
    var meansResourceGone: Bool {
        guard case .httpStatus(let status, _) = self else { return false }
        return [403, 404, 410].contains(status)
    }
}
