import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The bytes a transfer cut short delivered, with what it takes to ask for the
/// rest: the load's retries resume from them, and `PartialBodies` keeps them for
/// a later load of the URL, as Nuke resumes downloads.
///
/// Only a response that allows it leaves one: `Accept-Ranges: bytes`, a validator
/// the server can check the rest against (a strong ETag, else Last-Modified: a
/// weak ETag may not go in `If-Range`), and a body that is the resource's own bytes
/// (not content-encoded: both clients decompress, and a range counts the
/// compressed bytes).
struct PartialBody: Sendable {
    /// The first bytes of the resource.
    let data: Data
    /// What goes in `If-Range`: the server sends the rest only if the resource is
    /// still the one these bytes came from.
    let validator: String
    /// The resource's whole length, when a response said it.
    let totalLength: Int64?
    /// The response's `Vary`, and what the request that got it sent in the fields
    /// it names (`HTTPCacheMetadata.selection(ofVary:in:)`): only a request sending
    /// the same continues these bytes, or a `Last-Modified` in `If-Range`, the same
    /// for every representation, would join the rest of another onto them.
    let vary: String?
    let selection: String?

    /// What a response cut short, to a request sending `fields`, leaves to resume
    /// from, or nil when it cannot be resumed.
    init?(cut response: DataResponse, sending fields: RequestFields) {
        guard response.isTruncated, response.statusCode == 200, !response.data.isEmpty,
              let validator = Self.validator(response.headers), Self.isIdentity(response.headers)
        else { return nil }
        let ranges = response.headers["accept-ranges"]?.lowercased() ?? ""
        guard ranges.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == "bytes" }) else {
            return nil
        }
        let vary = response.headers["vary"]
        self.init(
            data: response.data, validator: validator, totalLength: response.headers["content-length"].flatMap { Int64($0) },
            vary: vary, selection: HTTPCacheMetadata.selection(ofVary: vary, in: fields))
    }

    init(data: Data, validator: String, totalLength: Int64?, vary: String? = nil, selection: String? = nil) {
        self.data = data
        self.validator = validator
        self.totalLength = totalLength
        self.vary = vary
        self.selection = selection
    }

    /// Whether a request sending `fields` may continue these bytes.
    func isSelected(by fields: RequestFields) -> Bool {
        HTTPCacheMetadata.selection(ofVary: vary, in: fields) == selection
    }

    /// The strong ETag, else the Last-Modified date, as the server gave it: `If-Range`
    /// is compared byte for byte. Only one that can be sent back as it is (no control
    /// character, a date in the grammar's spelling): sent, anything else would fail or
    /// go without its `If-Range`, asking for a range of whatever the server has now.
    private static func validator(_ headers: [String: String]) -> String? {
        if let etag = headers["etag"]?.trimmingHTTPWhitespace, etag.hasPrefix("\""), etag.count > 1 {
            return HTTPHeaderFields.isSendableValue(etag) ? etag : nil
        }
        return headers["last-modified"].map(\.trimmingHTTPWhitespace).flatMap { date in
            HTTPDate.parse(date) != nil && HTTPDate.isSpelledAsTheGrammar(date) && HTTPHeaderFields.isSendableValue(date) ? date : nil
        }
    }

    /// Whether a 206 is of the representation these bytes are: it carries the same
    /// validator (RFC 9110 §15.3.7.3: parts combine only under one strong validator).
    /// A server that ignores `If-Range` answers a changed resource with a range of
    /// the new one, which joined onto these bytes would be neither.
    private func isSameRepresentation(_ headers: [String: String]) -> Bool {
        if validator.hasPrefix("\"") { return headers["etag"]?.trimmingHTTPWhitespace == validator }
        return headers["last-modified"].flatMap { HTTPDate.parse($0.trimmingHTTPWhitespace) } == HTTPDate.parse(validator)
    }

    private static func isIdentity(_ headers: [String: String]) -> Bool {
        let encoding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased() ?? ""
        return encoding.isEmpty || encoding == "identity"
    }

    /// The header fields asking for the rest.
    var requestHeaders: [String: String] {
        ["Range": "bytes=\(data.count)-", "If-Range": validator]
    }

    /// What a response to `requestHeaders` makes of these bytes.
    enum Resumption {
        /// The rest arrived: the whole resource, as a 200 would have carried it.
        case complete(DataResponse)
        /// More arrived, and was cut again: what arrived so far (a truncated
        /// response) and the longer partial body to resume from.
        case cutAgain(DataResponse, PartialBody)
        /// The server sent another body (the resource changed, or it ignores
        /// ranges), or no body at all: the response stands as it is.
        case replaced
        /// The server's range does not continue these bytes (a 206 starting
        /// elsewhere, a 416): ask again for the whole resource, without a range.
        case startOver
    }

    /// Joins the answer to a request for the rest onto these bytes.
    func resumed(by response: DataResponse) -> Resumption {
        switch response.statusCode {
        case 206:
            guard let range = Self.contentRange(response.headers["content-range"]), range.start == Int64(data.count),
                  Self.isIdentity(response.headers), isSameRepresentation(response.headers), !response.data.isEmpty || response.isTruncated
            else { return .startOver }
            var whole = data
            whole.append(response.data)
            let total = range.total ?? totalLength
            if let total, Int64(whole.count) > total { return .startOver }
            var headers = response.headers
            headers["content-range"] = nil
            if response.isTruncated || total.map({ Int64(whole.count) < $0 }) == true {
                let longer = PartialBody(data: whole, validator: validator, totalLength: total, vary: vary, selection: selection)
                let cut = DataResponse(
                    data: whole, url: response.url, statusCode: 200, headers: headers, redirects: response.redirects, isTruncated: true,
                    requestCarriedCredentials: response.requestCarriedCredentials)
                return .cutAgain(cut, longer)
            }
            headers["content-length"] = String(whole.count)
            return .complete(DataResponse(
                data: whole, url: response.url, statusCode: 200, headers: headers, redirects: response.redirects,
                requestCarriedCredentials: response.requestCarriedCredentials))
        case 416:
            return .startOver
        default:
            return .replaced
        }
    }

    /// `bytes first-last/total` (total `*` when unknown): the first offset and the
    /// whole length.
    private static func contentRange(_ value: String?) -> (start: Int64, total: Int64?)? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2, let dash = parts[0].firstIndex(of: "-"), let start = Int64(parts[0][..<dash]),
              Int64(parts[0][parts[0].index(after: dash)...]) != nil
        else { return nil }
        return (start, Int64(parts[1]))
    }
}

/// Bodies of transfers cut short, kept for a while so that a later load of the same
/// URL asks only for the rest (`Range` with `If-Range`), as Nuke keeps resumable
/// data: a photo that failed at 90 % over a bad connection costs the last 10 % when
/// it is asked for again, not the whole.
///
/// A few bodies, within a byte budget, the least recently stored dropped first. A
/// body goes when its load completes, and when the server answers with another
/// (the resource changed). The loader keeps one only from a response that allows
/// resuming (`Accept-Ranges: bytes` and a strong ETag or a Last-Modified date).
public final class PartialBodies: Sendable {
    private let memory: RecentMemory<PartialBody>

    /// Keeps at most `countLimit` bodies of at most `byteLimit` bytes together.
    public init(countLimit: Int = 4, byteLimit: Int = 64 << 20) {
        memory = RecentMemory(costLimit: byteLimit, countLimit: countLimit, timeToLive: nil, clock: ImageCache.monotonicClock)
    }

    /// How many bodies are kept.
    package var count: Int { memory.count }
    /// The bytes kept, all bodies together.
    package var totalBytes: Int { memory.totalCost }

    /// The body kept for `url`, if any.
    func body(for url: URL) -> PartialBody? {
        memory.value(forKey: url.absoluteString)
    }

    /// Keeps `body` for `url`, in place of what was kept; one larger than the
    /// whole budget is not kept.
    func store(_ body: PartialBody, for url: URL) {
        memory.set(body, cost: body.data.count, entryCostLimit: memory.costLimit, forKey: url.absoluteString)
    }

    /// Forgets the body of `url`.
    func removeBody(for url: URL) {
        memory.removeValue(forKey: url.absoluteString)
    }

    /// Forgets every body.
    public func removeAll() {
        memory.removeAll()
    }
}
