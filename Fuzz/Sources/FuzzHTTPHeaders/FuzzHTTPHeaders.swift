import Foundation
@_spi(HTTPCaching) @_spi(Internals) import Imago

/// Feeds libFuzzer's input, read as response header lines ("Name: value"), to the
/// HTTP cache's parsers (Cache-Control, the HTTP-dates of Date, Expires and
/// Last-Modified, Age, ETag, Vary) and to the retry policy's Retry-After, and read as
/// a stored metadata blob, then checks what must always hold: the stored form reads
/// back as the same metadata, and a response is never fresh for longer than it says.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    // The same bytes as a blob from the disk or shared tier, with the binary form's
    // magic in front too, so that the fuzzer starts inside it.
    for blob in [Data(bytes: bytes, count: count), Data("imh2".utf8) + Data(bytes: bytes, count: count)] {
        if let stored = HTTPCacheMetadata(encoded: blob) {
            precondition(HTTPCacheMetadata(encoded: stored.encoded()) == stored, "a stored blob does not read back")
        }
    }
    var headers: [String: String] = [:]
    for line in text.split(whereSeparator: \.isNewline) {
        guard let colon = line.firstIndex(of: ":") else { continue }
        headers[String(line[..<colon]).lowercased()] = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
    }
    _ = HTTPCacheMetadata.CacheControl(parsing: headers["cache-control"] ?? text)
    let start = Date(timeIntervalSince1970: 1_700_000_000)
    let url = URL(string: "https://example.com/a.jpg")!
    // Odd lengths as answers to requests with credentials: their flag's stored form too.
    if let metadata = HTTPCacheMetadata(url: url, statusCode: 200, headers: headers, storedAt: start, requestCarriedCredentials: count & 1 == 1) {
        precondition(HTTPCacheMetadata(encoded: metadata.encoded()) == metadata, "the stored form does not read back")
        if case .fresh(let remaining) = metadata.freshness(at: start) {
            precondition(remaining <= metadata.freshnessLifetime, "fresh for longer than its lifetime")
        }
        _ = metadata.freshness(at: start.addingTimeInterval(86_400 * 365))
        _ = metadata.servesStale(afterError: start.addingTimeInterval(3600), allowance: 86_400)
        _ = metadata.servesWhileRevalidating(at: start.addingTimeInterval(60))
        _ = metadata.updated(with: headers, statusCode: 304, at: start.addingTimeInterval(10)).encoded()
    }
    if let retryAfter = headers["retry-after"] {
        let delay = RetryPolicy().delay(afterAttempt: 1, error: .httpStatus(503, url: url.absoluteString), retryAfter: retryAfter)
        precondition(delay.map { $0 >= 0 && $0.isFinite } ?? true, "a negative or endless retry delay")
    }
    return 0
}
