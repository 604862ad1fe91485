import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif


/// The request header fields an HTTP loader sends, and the one check every field
/// passes before anything is sent.
package enum HTTPHeaderFields {
    /// A data loader's own fields, with Imago's User-Agent added unless they set one.
    static func withDefaultUserAgent(_ fields: [String: String]) -> [String: String] {
        guard !fields.keys.contains(where: { $0.equalsIgnoringASCIICase("User-Agent") }) else { return fields }
        return fields.merging(["User-Agent": HTTPLoaderConfiguration.defaultUserAgent]) { own, _ in own }
    }

    /// The loader's own fields with the request's laid over them (a request's field
    /// replaces the loader's of the same name, whatever its case), loader's first,
    /// each checked (`check`).
    static func merge(
        _ fields: [String: String], over defaults: [String: String], url: URL
    ) throws(ImagoError) -> [(name: String, value: String)] {
        let merged = defaults.filter { field in !fields.keys.contains { $0.equalsIgnoringASCIICase(field.key) } }
            .sorted { $0.key < $1.key }
            + fields.sorted { $0.key < $1.key }
        for (name, value) in merged { try check(name, value, url: url) }
        return merged.map { (name: $0.key, value: $0.value) }
    }

    /// Whether a request to `url` with fields of these names carries credentials:
    /// an `Authorization` field, or a user in the URL (which HTTP clients send as
    /// Basic authorization).
    static func carryCredentials(names: some Sequence<String>, url: URL?) -> Bool {
        url?.user != nil || names.contains { $0.equalsIgnoringASCIICase("Authorization") }
    }

    /// The same of a URL request's own fields, without building their dictionary.
    static func carryCredentials(_ request: URLRequest) -> Bool {
        request.url?.user != nil || request.value(forHTTPHeaderField: "Authorization") != nil
    }

    /// Throws `ImagoError.invalidRequest` for a name that is not an HTTP token, or a
    /// value with a CR, LF or NUL in it: those would end the field early on the
    /// wire, and whatever follows would reach the server as fields (or a whole
    /// request) the caller never meant to send.
    static func check(_ name: String, _ value: String, url: URL) throws(ImagoError) {
        guard isFieldName(name) else {
            throw refusal(url, "the header name '\(shown(name))' is not a valid field name")
        }
        guard !holdsLineBreak(value) else {
            throw refusal(url, "the header \(name.debugDescription) holds a line break or NUL")
        }
    }

    /// Whether `name` is an HTTP field name: a token (RFC 9110 §5.6.2).
    package static func isFieldName(_ name: String) -> Bool {
        // Byte by byte: every request's fields pass here, and a scalar beyond ASCII is
        // no token character, as none of its UTF-8 bytes is.
        !name.isEmpty && name.utf8.allSatisfy(isTokenByte)
    }

    /// Whether `value` holds a CR, LF or NUL, which would end the field early.
    package static func holdsLineBreak(_ value: String) -> Bool {
        let breaks: (UInt8) -> Bool = { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
        // A native string's bytes are searched in place; the Accept field's long value
        // goes through here at every request.
        return value.utf8.withContiguousStorageIfAvailable { $0.contains(where: breaks) } ?? value.utf8.contains(where: breaks)
    }

    /// Whether `value` can be sent as a field value as it is: no control character
    /// but tab (RFC 9110 §5.5). What a server gave (a validator) goes back only then.
    package static func isSendableValue(_ value: String) -> Bool {
        !value.utf8.contains { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }
    }

    private static func refusal(_ url: URL, _ reason: String) -> ImagoError {
        .invalidRequest(url: url.absoluteString, reason: reason + "; the request was not sent")
    }

    /// RFC 9110 §5.6.2: visible ASCII except delimiters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        byte < 0x80 && tokenBytes[Int(byte >> 6)] >> UInt64(byte & 63) & 1 == 1
    }

    /// The token bytes as two 64-bit masks, bytes 0–63 and 64–127.
    private static let tokenBytes: [UInt64] = {
        var masks: [UInt64] = [0, 0]
        let delimiters = Set("\"(),/:;<=>?@[\\]{}".utf8)
        for byte in UInt8(0x21)..<0x7F where !delimiters.contains(byte) {
            masks[Int(byte >> 6)] |= 1 << UInt64(byte & 63)
        }
        return masks
    }()

    private static func shown(_ name: String) -> String {
        String(name.unicodeScalars.map { $0 == "\r" ? "\\r" : $0 == "\n" ? "\\n" : String($0) }.joined().prefix(40))
    }
}
