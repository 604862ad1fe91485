import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif


/// The request header fields an HTTP loader sends, and the one check every field
/// passes before anything is sent.
enum HTTPHeaderFields {
    /// A data loader's own fields, with Imago's User-Agent added unless they set one.
    static func withDefaultUserAgent(_ fields: [String: String]) -> [String: String] {
        guard !fields.keys.contains(where: { $0.lowercased() == "user-agent" }) else { return fields }
        return fields.merging(["User-Agent": HTTPLoaderConfiguration.defaultUserAgent]) { own, _ in own }
    }

    /// The loader's own fields with the request's laid over them (a request's field
    /// replaces the loader's of the same name, whatever its case), loader's first,
    /// each checked (`check`).
    static func merge(
        _ fields: [String: String], over defaults: [String: String], url: URL
    ) throws(ImagoError) -> [(name: String, value: String)] {
        let own = Set(fields.keys.map { $0.lowercased() })
        let merged = defaults.filter { !own.contains($0.key.lowercased()) }.sorted { $0.key < $1.key }
            + fields.sorted { $0.key < $1.key }
        for (name, value) in merged { try check(name, value, url: url) }
        return merged.map { (name: $0.key, value: $0.value) }
    }

    /// Throws `ImagoError.invalidRequest` for a name that is not an HTTP token, or a
    /// value with a CR, LF or NUL in it: those would end the field early on the
    /// wire, and whatever follows would reach the server as fields (or a whole
    /// request) the caller never meant to send.
    static func check(_ name: String, _ value: String, url: URL) throws(ImagoError) {
        guard !name.isEmpty, name.unicodeScalars.allSatisfy(isTokenCharacter) else {
            throw refusal(url, "the header name '\(shown(name))' is not a valid field name")
        }
        guard !value.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
            throw refusal(url, "the header \(name.debugDescription) holds a line break or NUL")
        }
    }

    private static func refusal(_ url: URL, _ reason: String) -> ImagoError {
        .invalidRequest(url: url.absoluteString, reason: reason + "; the request was not sent")
    }

    /// RFC 9110 §5.6.2: visible ASCII except delimiters.
    private static func isTokenCharacter(_ scalar: Unicode.Scalar) -> Bool {
        guard scalar.isASCII, scalar.value > 0x20, scalar.value < 0x7F else { return false }
        return !"\"(),/:;<=>?@[\\]{}".unicodeScalars.contains(scalar)
    }

    private static func shown(_ name: String) -> String {
        String(name.unicodeScalars.map { $0 == "\r" ? "\\r" : $0 == "\n" ? "\\n" : String($0) }.joined().prefix(40))
    }
}
