import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago

/// The HTTP cache's answers over a real disk tier in a folder of its own: what a
/// look-up says to do, what a response and an error leave behind. Times are given to
/// each question, so no test waits for a clock.
@Suite struct HTTPCacheTests {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-http-\(UUID().uuidString)", isDirectory: true)
    let url = URL(string: "https://example.com/a.jpg")!
    let key = HTTPCacheKey(name: "o-a", imageKey: "https://example.com/a.jpg")
    let start = Date()
    let body = Data("the image".utf8)

    func makeCache(_ policy: FreshnessPolicy = .httpHeaders) -> HTTPCache {
        HTTPCache(tiers: [DiskCache(directory: folder)], freshnessPolicy: policy, staleIfErrorAllowance: 86_400)
    }

    func response(_ headers: [String: String], status: Int = 200, data: Data? = nil) -> DataResponse {
        DataResponse(data: data ?? body, url: url, statusCode: status, headers: headers)
    }

    /// Stores a 200 with `headers` at `start`, as a load would.
    func storeOriginal(_ headers: [String: String], in cache: HTTPCache) async -> HTTPCache.Fetch? {
        _ = cache.update(with: response(headers), for: url, sending: .none, fetch: HTTPCache.Fetch(), key: key, at: start)
        guard case .fetch(let fetch) = await cache.lookUp(key, at: start.addingTimeInterval(1e6), for: .none), fetch.stored != nil else { return nil }
        return fetch
    }

    func removeFolder() {
        try? FileManager.default.removeItem(at: folder)
    }

    @Test func aLookUpAnswersFreshStaleWhileRevalidatingRevalidateOrMiss() async throws {
        defer { removeFolder() }
        let cache = makeCache()
        guard case .fetch(let empty) = await cache.lookUp(key, at: start, for: .none), empty.stored == nil else {
            Issue.record("an empty tier answers")
            return
        }
        let kept = cache.update(
            with: response(["cache-control": "max-age=60, stale-while-revalidate=600", "etag": "\"v1\""]), for: url, sending: .none,
            fetch: HTTPCache.Fetch(), key: key, at: start)
        #expect(kept.source == .network && kept.metadata?.etag == "\"v1\"")
        guard case .fresh(let data, _, .disk) = await cache.lookUp(key, at: start.addingTimeInterval(30), for: .none) else {
            Issue.record("not fresh within max-age")
            return
        }
        #expect(data == body)
        guard case .staleWhileRevalidating(let stale, _, let validators, _) = await cache.lookUp(key, at: start.addingTimeInterval(120), for: .none) else {
            Issue.record("not served while revalidating")
            return
        }
        #expect(stale == body && validators["If-None-Match"] == "\"v1\"")
        guard case .fetch(let later) = await cache.lookUp(key, at: start.addingTimeInterval(3600), for: .none), later.stored != nil else {
            Issue.record("past stale-while-revalidate, not revalidated")
            return
        }
        #expect(later.validators["If-None-Match"] == "\"v1\"")
    }

    @Test func aTrustPeriodMakesAStaleResponseFresh() async {
        defer { removeFolder() }
        let cache = makeCache(.trusted(seconds: 3600))
        _ = cache.update(with: response(["cache-control": "no-cache"]), for: url, sending: .none, fetch: HTTPCache.Fetch(), key: key, at: start)
        guard case .fresh = await cache.lookUp(key, at: start.addingTimeInterval(60), for: .none) else { Issue.record("the trust period is ignored"); return }
    }

    @Test func aNotModifiedFreshensTheStoredResponse() async throws {
        defer { removeFolder() }
        let cache = makeCache()
        let stored = try #require(await storeOriginal(["cache-control": "max-age=60", "etag": "\"v1\""], in: cache))
        let later = start.addingTimeInterval(120)
        let confirmed = cache.update(
            with: response(["cache-control": "max-age=600", "etag": "\"v1\""], status: 304, data: Data()), for: url, sending: .none, fetch: stored,
            key: key, at: later)
        #expect(confirmed.source == .revalidated && confirmed.bytes.load() == body)
        guard case .fresh(let data, _, _) = await cache.lookUp(key, at: later.addingTimeInterval(300), for: .none) else {
            Issue.record("the 304's lifetime was not kept")
            return
        }
        #expect(data == body)
    }

    @Test func aResponseTheServerForbidsStoringRemovesWhatWasKept() async throws {
        defer { removeFolder() }
        let cache = makeCache()
        let stored = try #require(await storeOriginal(["cache-control": "max-age=60"], in: cache))
        let kept = cache.update(with: response(["cache-control": "no-store"]), for: url, sending: .none, fetch: stored, key: key, at: start)
        #expect(kept.source == .network && kept.metadata == nil)
        guard case .fetch(let after) = await cache.lookUp(key, at: start, for: .none), after.stored == nil else { Issue.record("a no-store response left the old one"); return }
    }

    @Test func afterAnErrorAStaleResponseStandsInOrTheRecordGoes() async throws {
        defer { removeFolder() }
        let cache = makeCache()
        let stored = try #require(await storeOriginal(["cache-control": "max-age=60"], in: cache))
        let later = start.addingTimeInterval(120)
        #expect(cache.afterError(.httpStatus(503, url: url.absoluteString), fetch: stored, key: key, at: later) == body)
        #expect(cache.afterError(.httpStatus(503, url: url.absoluteString), fetch: stored, key: key, at: later, servingStale: false) == nil)
        // Past the allowance nothing stands in, and the record stays for the next load.
        #expect(cache.afterError(.timedOut(url: url.absoluteString, seconds: 60), fetch: stored, key: key, at: later.addingTimeInterval(2 * 86_400)) == nil)
        guard case .fetch(let kept) = await cache.lookUp(key, at: later, for: .none), kept.stored != nil else {
            Issue.record("a passing failure removed the record")
            return
        }
        #expect(cache.afterError(.httpStatus(404, url: url.absoluteString), fetch: stored, key: key, at: later) == nil)
        guard case .fetch(let gone) = await cache.lookUp(key, at: later, for: .none), gone.stored == nil else { Issue.record("a 404 left the record"); return }
    }

    @Test func variantsExpireWithTheirOriginalAndAreConfirmedByItsValidators() throws {
        defer { removeFolder() }
        let cache = makeCache()
        let variantKey = HTTPCacheKey(name: "v-a", imageKey: url.absoluteString)
        let original = try #require(HTTPCacheMetadata(
            url: url, statusCode: 200, headers: ["cache-control": "max-age=60", "etag": "\"v1\""],
            storedAt: start))
        cache.storeVariant(metadata: original, key: variantKey, at: start) { Data("variant".utf8) }
        guard case .fresh = cache.lookUpVariant(variantKey, at: start.addingTimeInterval(30), for: .none) else { Issue.record("not fresh"); return }
        guard case .stale(let data, let metadata) = cache.lookUpVariant(variantKey, at: start.addingTimeInterval(120), for: .none) else {
            Issue.record("a stale variant with validators is not kept for confirmation")
            return
        }
        #expect(data == Data("variant".utf8) && cache.confirms(original, variant: metadata))
        let changed = try #require(HTTPCacheMetadata(
            url: url, statusCode: 200, headers: ["etag": "\"v2\""], storedAt: start))
        #expect(!cache.confirms(changed, variant: metadata))

        // A revalidation can forbid storing what was stored.
        let forbidden = original.updated(with: ["cache-control": "no-store"], statusCode: 304, at: start)
        #expect(!forbidden.isStorable)
        var encoded = false
        let forbiddenKey = HTTPCacheKey(name: "v-b", imageKey: url.absoluteString)
        cache.storeVariant(metadata: forbidden, key: forbiddenKey, at: start) {
            encoded = true
            return Data()
        }
        #expect(!encoded)
        guard case .miss = cache.lookUpVariant(forbiddenKey, at: start, for: .none) else { Issue.record("a no-store variant was kept"); return }
    }
}
