import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ImageLoader {
    /// Imago's version, as its User-Agent gives it.
    public static let version = "0.1.0"
    /// `Imago/<version>`: the User-Agent both network loaders (curl and
    /// URLSession) send unless the request, the loader configuration's `headers`,
    /// or the data loader's `httpAdditionalHeaders` set one. Some servers and CDNs
    /// refuse requests without one, and a server's logs can tell Imago's requests
    /// from others'.
    public static let defaultUserAgent = "Imago/\(version)"
}

/// The request header fields a data loader sends, checked before anything is sent.
enum HTTPHeaderFields {
    /// A data loader's own fields, with Imago's User-Agent added unless they set one.
    static func withDefaultUserAgent(_ fields: [String: String]) -> [String: String] {
        guard !fields.keys.contains(where: { $0.lowercased() == "user-agent" }) else { return fields }
        return fields.merging(["User-Agent": ImageLoader.defaultUserAgent]) { own, _ in own }
    }

    /// The loader's own fields with the request's laid over them (a request's field
    /// replaces the loader's of the same name, whatever its case), loader's first.
    ///
    /// Throws `ImagoError.network` with code `.badURL`, before any I/O, for a name
    /// that is not an HTTP token or a name or value with a CR, LF or NUL in it: those
    /// would end the field early on the wire, and whatever follows would reach the
    /// server as fields (or a whole request) the caller never meant to send.
    static func merge(
        _ fields: [String: String], over defaults: [String: String], url: URL
    ) throws(ImagoError) -> [(name: String, value: String)] {
        let own = Set(fields.keys.map { $0.lowercased() })
        let merged = defaults.filter { !own.contains($0.key.lowercased()) }.sorted { $0.key < $1.key }
            + fields.sorted { $0.key < $1.key }
        for (name, value) in merged {
            guard !name.isEmpty, name.unicodeScalars.allSatisfy(isTokenCharacter) else {
                throw refusal(url, "the request header name '\(shown(name))' is not a valid field name")
            }
            guard !value.unicodeScalars.contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) else {
                throw refusal(url, "the value of request header '\(name)' contains a line break or NUL")
            }
        }
        return merged.map { (name: $0.key, value: $0.value) }
    }

    private static func refusal(_ url: URL, _ reason: String) -> ImagoError {
        .network(url: url.absoluteString, reason: reason + " and was not sent", code: .badURL, errno: nil)
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
