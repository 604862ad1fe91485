import Foundation

/// Where one record is kept in an HTTP cache tier.
struct HTTPCacheKey: Sendable, Hashable {
    /// The record's name: an original's (`ImageCacheKey.originalRecordName`) or a
    /// variant's (`ImageCacheKey.variantRecordName`).
    let name: String
    /// The image key of the image the record is of: a tier shared by a fleet keeps an
    /// image's records, and its lease, together (one Redis Cluster slot).
    let imageKey: String

    /// The record of the original bytes of `imageKey`'s image.
    static func original(_ imageKey: String) -> HTTPCacheKey {
        HTTPCacheKey(name: ImageCacheKey.originalRecordName(imageKey), imageKey: imageKey)
    }

    /// The record of the sized or processed variant named by `key`.
    static func variant(_ key: ImageCacheKey) -> HTTPCacheKey {
        HTTPCacheKey(name: key.variantRecordName, imageKey: key.imageKey)
    }
}

/// A store of HTTP responses that `HTTPCache` keeps originals and variants in: the
/// disk tier (`DiskCache`), or a tier a fleet of processes shares (`SharedCache`).
///
/// Reads are made only from the pipeline's transfer and decoding slots, never on the
/// main thread, so a tier may take a network round trip to answer one (its slot waits
/// meanwhile). Writes may return before the record lands (fire and forget): a read
/// right after one may miss it, and a write that fails loses nothing but the record.
/// A tier keeps metadata as the bytes it is given and never reads them.
protocol HTTPCacheTier: Sendable {
    /// What a load says its bytes came from when this tier answered.
    var source: ImageResponse.Source { get }
    /// Whether the tier answers over the network (Redis): its reads wait on replies,
    /// so they are made on threads that may block (`BlockingWork`), never on the
    /// concurrency pool's or a decode's.
    var answersOverNetwork: Bool { get }
    /// Whether other users' loads read what the tier keeps (the fleet's Redis): a
    /// shared cache in RFC 9111's sense, which must not keep a `private` response.
    var isShared: Bool { get }
    /// The record under `key`, its body read only when used where the tier can read
    /// it apart from its metadata: the metadata alone decides whether the body is used.
    func record(for key: HTTPCacheKey) -> HTTPCache.TierRecord?
    /// The body and metadata of the record under `key`, with the CRC-32 of the body
    /// when the tier knows it without another pass.
    func contents(for key: HTTPCacheKey) -> (data: Data, metadata: Data, bodyChecksum: UInt32?)?
    /// Keeps `data` with `metadata` under `key`, replacing what was there, and gives
    /// `lease` back once it is kept. `bodyChecksum`, the CRC-32 of `data` when it is
    /// known, spares the tier a pass over it. `lifetime` is how long the record may
    /// serve a load (0: not at all), for a tier that expires records itself; a tier
    /// that judges freshness when it reads may ignore it.
    func store(
        _ data: Data, metadata: Data, for key: HTTPCacheKey, bodyChecksum: UInt32?, lifetime: Double, releasing lease: HTTPCache.Lease?)
    /// Removes the record under `key`.
    func removeRecord(for key: HTTPCacheKey)
    /// Where the record under `key` is kept, for error messages.
    func location(of key: HTTPCacheKey) -> String
    /// Called when no tier holds a usable record under `key`, before the network is
    /// asked for it. A tier other processes share lets one of them ask: this one takes
    /// the lease for it, or waits while another holds it and returns what that one
    /// stored. A tier of one process has no turn to wait for.
    func turnToFetch(_ key: HTTPCacheKey) async -> HTTPCache.Turn
    /// Gives `lease` back without storing a record: whoever waits asks the origin now.
    func release(_ lease: HTTPCache.Lease)
}

extension HTTPCacheTier {
    var answersOverNetwork: Bool { false }
    var isShared: Bool { false }
    func turnToFetch(_ key: HTTPCacheKey) async -> HTTPCache.Turn { .fetch(nil) }
    func release(_ lease: HTTPCache.Lease) {}

    /// Whether the tier may keep, or answer with, a response of `metadata`: a shared
    /// tier not a `private` one, whoever put it there.
    func mayKeep(_ metadata: HTTPCacheMetadata) -> Bool { !isShared || metadata.sharedCachesMayStore }
}

extension DiskCache: HTTPCacheTier {
    var source: ImageResponse.Source { .disk }

    func record(for key: HTTPCacheKey) -> HTTPCache.TierRecord? {
        recordHead(forKey: key.name).map {
            HTTPCache.TierRecord(
                metadata: $0.metadata, body: .stored(self, key: key, metadata: $0.metadata, count: $0.bodyCount), bodyChecksum: nil)
        }
    }

    func contents(for key: HTTPCacheKey) -> (data: Data, metadata: Data, bodyChecksum: UInt32?)? {
        record(forKey: key.name).map { ($0.data, $0.metadata, nil) }
    }

    func store(
        _ data: Data, metadata: Data, for key: HTTPCacheKey, bodyChecksum: UInt32?, lifetime: Double, releasing lease: HTTPCache.Lease?
    ) {
        store(data, metadata: metadata, forKey: key.name, bodyChecksum: bodyChecksum)
    }

    func removeRecord(for key: HTTPCacheKey) {
        removeRecord(forKey: key.name)
    }

    func location(of key: HTTPCacheKey) -> String {
        fileURL(forKey: key.name).path
    }
}

/// HTTP caching of originals, and of the variants made from them, over tiers nearest
/// first (the disk, then a tier the fleet shares): what a load may use as it is, what
/// it asks the server to confirm, and what it keeps of the answer. The rules (RFC 9111
/// freshness as `FreshnessPolicy` adjusts it, RFC 5861's
/// stale-while-revalidate and stale-if-error) are applied here alone; the stages ask
/// and act on the answers. The first tier holding a record of a key that may answer
/// the request (its `Vary` selects it) decides; a record a farther tier answers with
/// is copied into the nearer ones. A shared tier judges
/// its records as a shared cache does (`HTTPCacheMetadata.judged(asShared:)`); the
/// metadata handed to a load is judged as the machine's own caches judge it.
struct HTTPCache: Sendable {
    let tiers: [any HTTPCacheTier]
    let freshnessPolicy: FreshnessPolicy
    /// How long past its freshness a stored response may stand in after a network
    /// failure, unless it says otherwise; nil for never.
    let staleIfErrorAllowance: Double?

    /// A record as a tier holds it.
    struct TierRecord: Sendable {
        let metadata: Data
        let body: OriginalBytes
        /// The CRC-32 of the body, when the tier knows it: a copy into a nearer tier
        /// is then written without another pass over it.
        let bodyChecksum: UInt32?
    }

    /// A fleet's claim on asking the origin for one image: while one process holds
    /// it, the others wait for what it stores.
    struct Lease: Sendable {
        let key: String
        let token: String
    }

    /// What a tier shared with other processes says when nothing holds a record.
    enum Turn: Sendable {
        /// Another process stored it meanwhile.
        case stored(TierRecord)
        /// Ask the origin, holding the lease if one was taken.
        case fetch(Lease?)
    }

    /// A response in a tier, its body read only where it is used.
    struct Stored: Sendable {
        let bytes: OriginalBytes
        let metadata: HTTPCacheMetadata
        /// The tier it is in, as a load names it.
        let source: ImageResponse.Source
    }

    /// What a load that goes to the network takes with it: the stale response kept
    /// meanwhile, the validators that may confirm it, and the leases it holds.
    struct Fetch: Sendable {
        /// A stale response kept in case the server cannot be reached (stale-if-error),
        /// or confirms it (a 304).
        var stored: Stored?
        var validators: [String: String] = [:]
        /// The leases taken, by the index of their tier.
        var leases: [Int: Lease] = [:]
    }

    /// What the tiers hold for a key, and what to do with it.
    enum Lookup: Sendable {
        /// Fresh: used as it is.
        case fresh(Data, HTTPCacheMetadata, source: ImageResponse.Source)
        /// Stale within its stale-while-revalidate window: used as it is, and
        /// revalidated in the background with `validators`.
        case staleWhileRevalidating(Data, HTTPCacheMetadata, validators: [String: String], source: ImageResponse.Source)
        /// Nothing usable as it is: the server is asked, with the fetch's validators
        /// when it can confirm a stale response (a 304 reuses it then).
        case fetch(Fetch)
    }

    /// Whether a tier answers over the network (Redis), so that a look-up waits on it
    /// rather than on the CPU.
    var asksOverNetwork: Bool { tiers.contains { $0.answersOverNetwork } }

    /// Looks up the original under `key` at `now` for a request sending `fields`.
    /// When no tier holds it, a tier shared with other processes may make this load
    /// wait for another's fetch.
    func lookUp(_ key: HTTPCacheKey, at now: Date, for fields: RequestFields) async -> Lookup {
        for index in tiers.indices {
            let tier = tiers[index]
            let found = tier.answersOverNetwork ? await BlockingWork.value { tier.record(for: key) } : tier.record(for: key)
            guard let record = found, let metadata = metadata(record.metadata, from: tier, for: fields) else { continue }
            if let answer = answer(key, with: record, metadata, from: index, at: now) { return answer }
        }
        var fetch = Fetch()
        for index in tiers.indices {
            switch await tiers[index].turnToFetch(key) {
            case .stored(let record):
                if let metadata = metadata(record.metadata, from: tiers[index], for: fields), freshnessPolicy.isFresh(metadata, at: now),
                   let data = record.body.load() {
                    release(fetch)
                    copy(data, metadata: record.metadata, bodyChecksum: record.bodyChecksum, as: key, freshness: metadata, into: index, at: now)
                    return .fresh(data, metadata.judged(asShared: false), source: tiers[index].source)
                }
            case .fetch(let lease):
                fetch.leases[index] = lease
            }
        }
        return .fetch(fetch)
    }

    /// The metadata a record of `tier` was kept with, judged as the tier judges
    /// (a shared one by `s-maxage`); nil when it does not decode, when a shared tier
    /// holds a response it may not keep (put there by another client, or before
    /// shared tiers refused it), which must not answer another user, or when the
    /// server chose it by fields the request sends otherwise (`Vary`): that record
    /// is another request's, neither used nor revalidated.
    private func metadata(_ encoded: Data, from tier: any HTTPCacheTier, for fields: RequestFields) -> HTTPCacheMetadata? {
        guard let metadata = HTTPCacheMetadata(encoded: encoded), tier.mayKeep(metadata), metadata.isSelected(by: fields) else {
            return nil
        }
        return metadata.judged(asShared: tier.isShared)
    }

    /// What the record under `key` in `tiers[index]` answers; nil when its body is
    /// gone or damaged since its head was read (the next tier is asked then).
    private func answer(
        _ key: HTTPCacheKey, with record: TierRecord, _ metadata: HTTPCacheMetadata, from index: Int, at now: Date
    ) -> Lookup? {
        let source = tiers[index].source
        var validators: [String: String] = [:]
        if case .stale(revalidatable: true) = metadata.freshness(at: now) { validators = metadata.conditionalHeaders }
        let fresh = freshnessPolicy.isFresh(metadata, at: now)
        guard fresh || metadata.servesWhileRevalidating(at: now) else {
            return .fetch(Fetch(stored: Stored(bytes: record.body, metadata: metadata, source: source), validators: validators))
        }
        guard let data = record.body.load() else { return nil }
        copy(data, metadata: record.metadata, bodyChecksum: record.bodyChecksum, as: key, freshness: metadata, into: index, at: now)
        return fresh
            ? .fresh(data, metadata.judged(asShared: false), source: source)
            : .staleWhileRevalidating(data, metadata.judged(asShared: false), validators: validators, source: source)
    }

    /// Copies a record a farther tier answered with into the tiers nearer than
    /// `index`, its `metadata` as the bytes it was kept with (`freshness` decoded).
    private func copy(
        _ data: Data, metadata: Data, bodyChecksum: UInt32?, as key: HTTPCacheKey, freshness: HTTPCacheMetadata, into index: Int, at now: Date
    ) {
        guard index > 0 else { return }
        for tier in tiers[..<index] where tier.mayKeep(freshness) {
            let lifetime = lifetime(of: freshness.judged(asShared: tier.isShared), at: now)
            tier.store(data, metadata: metadata, for: key, bodyChecksum: bodyChecksum, lifetime: lifetime, releasing: nil)
        }
    }

    /// Keeps `data` with `metadata` under `key` in every tier that may keep it (a
    /// shared one not when it is `private`), giving back the leases of `fetch`: one
    /// not stored under lets the processes waiting on it ask the origin themselves.
    private func store(_ data: Data, metadata: HTTPCacheMetadata, as key: HTTPCacheKey, releasing fetch: Fetch = Fetch(), at now: Date) {
        let encoded = metadata.encoded()
        for (index, tier) in tiers.enumerated() {
            guard tier.mayKeep(metadata) else {
                if let lease = fetch.leases[index] { tier.release(lease) }
                continue
            }
            let lifetime = lifetime(of: metadata.judged(asShared: tier.isShared), at: now)
            tier.store(data, metadata: encoded, for: key, bodyChecksum: nil, lifetime: lifetime, releasing: fetch.leases[index])
        }
    }

    /// Gives back the leases of a fetch whose answer is not kept: a response cut
    /// short, a load cancelled.
    func release(_ fetch: Fetch) {
        for (index, lease) in fetch.leases { tiers[index].release(lease) }
    }

    /// Removes what is kept under `key` from every tier: a record that no longer
    /// decodes, or of an image the server said is gone.
    func remove(_ key: HTTPCacheKey) {
        for tier in tiers { tier.removeRecord(for: key) }
    }

    /// Where the record under `key` is kept in the nearest tier, for error messages.
    func location(of key: HTTPCacheKey) -> String? {
        tiers.first?.location(of: key)
    }

    /// Keeps what the server answered for `url` under `key`: a 304 freshens the
    /// stored response, whose bytes are the image then; a storable response is
    /// stored; one the server now forbids storing (no-store) removes what was kept.
    /// Either is kept as the answer to a request sending `fields`. The fetch's leases
    /// are given back. Returns the image's bytes, where they came from, and their
    /// freshness.
    func update(
        with response: DataResponse, for url: URL, sending fields: RequestFields, fetch: Fetch, key: HTTPCacheKey, at now: Date
    ) -> (bytes: OriginalBytes, source: ImageResponse.Source, metadata: HTTPCacheMetadata?) {
        if response.statusCode == 304, let stored = fetch.stored {
            var updated = stored.metadata.updated(with: response.headers, statusCode: 304, at: now)
            updated.select(by: fields)
            // Confirmed to a request with credentials, it is that user's answer too.
            if response.requestCarriedCredentials { updated.requestCarriedCredentials = true }
            // The stored bytes are read here only to write the record again or
            // before it goes; otherwise by the stage that uses them, if one does.
            guard !updated.isStorable || rewritesAfterRevalidation(updated, stored: stored.metadata),
                  let data = stored.bytes.load() else {
                release(fetch)
                return (stored.bytes, .revalidated, updated.judged(asShared: false))
            }
            if updated.isStorable {
                store(data, metadata: updated, as: key, releasing: fetch, at: now)
            } else {
                release(fetch)
                remove(key)
            }
            return (.loaded(data), .revalidated, updated.judged(asShared: false))
        }
        var metadata = HTTPCacheMetadata(response, for: url, sending: fields, at: now)
        if !response.redirects.isEmpty {
            // Kept under the URL asked for only as long as every redirect on the way
            // may be reused too.
            metadata = HTTPCacheMetadata.reuseLifetime(through: response.redirects, at: now).flatMap { metadata?.capped(toLifetime: $0) }
        }
        if let metadata {
            store(response.data, metadata: metadata, as: key, releasing: fetch, at: now)
        } else {
            release(fetch)
            if fetch.stored != nil { remove(key) }
        }
        return (.loaded(response.data), .network, metadata)
    }

    /// After the server could not give the image kept under `key`: the stored body,
    /// when stale-if-error lets it stand in (and `servingStale`); the record goes
    /// when the server said the image is gone. The fetch's leases are given back.
    func afterError(_ error: ImagoError, fetch: Fetch, key: HTTPCacheKey, at now: Date, servingStale: Bool = true) -> Data? {
        release(fetch)
        guard let stored = fetch.stored else {
            if error.meansResourceGone { remove(key) }
            return nil
        }
        if servingStale, error.allowsStaleResponse, let allowance = staleIfErrorAllowance,
           stored.metadata.servesStale(afterError: now, allowance: allowance), let data = stored.bytes.load() {
            return data
        }
        if error.meansResourceGone { remove(key) }
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

    /// How long a tier that expires records itself keeps one: its remaining
    /// freshness under the policy, plus the window past it that the policy may still
    /// serve it in (stale while revalidating, or after an error), at most 30 days.
    /// Zero or less: not kept.
    func lifetime(of metadata: HTTPCacheMetadata, at now: Date) -> Double {
        guard metadata.isStorable else { return 0 }
        var fresh = metadata.cacheControl.noCache ? 0 : metadata.freshnessLifetime - metadata.currentAge(at: now)
        if case .trusted(let seconds) = freshnessPolicy {
            fresh = max(fresh, seconds - now.timeIntervalSince(metadata.storedAt))
        }
        var window = 0.0
        if !metadata.forbidsStaleUse, !metadata.cacheControl.noCache {
            let staleIfError = metadata.cacheControl.staleIfError ?? staleIfErrorAllowance ?? 0
            window = max(metadata.cacheControl.staleWhileRevalidate ?? 0, staleIfError)
        }
        return fresh <= 0 ? 0 : min(fresh + window, 30 * 86400)
    }

    // MARK: - Variants

    /// A sized or processed variant as a tier keeps it.
    enum VariantLookup: Sendable {
        /// Fresh with its original: used as it is.
        case fresh(Data, HTTPCacheMetadata, source: ImageResponse.Source)
        /// Stale with validators: used as it is if the server confirms the original
        /// it was made from (`confirms`).
        case stale(Data, HTTPCacheMetadata)
        case miss
    }

    /// Looks up the variant under `key` at `now`, for a request sending `fields`
    /// (its original's `Vary` selects it too). A variant expires with its
    /// original: while that is fresh the variant answers; once stale, the original
    /// is revalidated, and the variant answers again if the server confirmed it, or
    /// is made and kept again from what the server sent. A farther tier is asked
    /// for a fresh one before a stale one is used.
    func lookUpVariant(_ key: HTTPCacheKey, at now: Date, for fields: RequestFields) -> VariantLookup {
        var stale = VariantLookup.miss
        for index in tiers.indices {
            guard let record = tiers[index].contents(for: key), let metadata = metadata(record.metadata, from: tiers[index], for: fields)
            else { continue }
            if freshnessPolicy.isFresh(metadata, at: now) {
                copy(record.data, metadata: record.metadata, bodyChecksum: record.bodyChecksum, as: key, freshness: metadata, into: index, at: now)
                return .fresh(record.data, metadata.judged(asShared: false), source: tiers[index].source)
            }
            if case .miss = stale, metadata.hasValidators { stale = .stale(record.data, metadata.judged(asShared: false)) }
        }
        return stale
    }

    /// Whether `original`, the metadata of an original the server has just confirmed
    /// (a 304), confirms a stale variant kept with `variant`: made under the same
    /// validators, it is still the image asked for.
    func confirms(_ original: HTTPCacheMetadata, variant: HTTPCacheMetadata) -> Bool {
        original.etag == variant.etag && original.lastModified == variant.lastModified
    }

    /// Keeps a confirmed variant with its original's `updated` metadata, only when
    /// the 304 changed something a later load reads.
    func freshenVariant(_ data: Data, stored: HTTPCacheMetadata, updated: HTTPCacheMetadata, key: HTTPCacheKey, at now: Date) {
        if rewritesAfterRevalidation(updated, stored: stored) {
            store(data, metadata: updated, as: key, at: now)
        }
    }

    /// Keeps a variant with the HTTP freshness of its original, unless the server
    /// forbade storing it; `encode` makes its bytes only then.
    func storeVariant(metadata: HTTPCacheMetadata, key: HTTPCacheKey, at now: Date, encode: () -> Data) {
        guard metadata.isStorable else { return }
        store(encode(), metadata: metadata, as: key, at: now)
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
