import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ImageLoader {
    /// Imago's version, as its User-Agent gives it.
    package static let version = "0.1.0"
    /// `Imago/<version>`: the User-Agent both network loaders (curl and
    /// URLSession) send unless the request, the loader configuration's `headers`,
    /// or the data loader's `httpAdditionalHeaders` set one. Some servers and CDNs
    /// refuse requests without one, and a server's logs can tell Imago's requests
    /// from others'.
    package static let defaultUserAgent = "Imago/\(version)"
}

extension ImageLoader.Configuration {
    /// The URL request a load hands its data loader, prepared in one place: the
    /// request's own fields, the validators of a conditional request over them,
    /// the configuration's `headers` where the request has none of the name, the
    /// formats this build decodes as `Accept` (so a negotiating server never picks
    /// one it cannot), then the `requestModifier`. The HTTP loaders add their own
    /// fields and the User-Agent beneath these (`HTTPHeaderFields.merge`).
    ///
    /// The fields added here are checked as given (`HTTPHeaderFields.check`), before
    /// Foundation sees them: Foundation on Linux drops a value with a line break
    /// without a word, which would send the request without it. The request as it
    /// will be sent is checked by the HTTP loader, with the same check; either way
    /// a bad field throws `ImagoError.invalidRequest` before any I/O.
    func urlRequest(for request: ImageRequest, validators: [String: String] = [:]) throws(ImagoError) -> URLRequest {
        var urlRequest = request.urlRequest
        let url = request.url
        for (name, value) in validators { try HTTPHeaderFields.check(name, value, url: url) }
        for (name, value) in headers { try HTTPHeaderFields.check(name, value, url: url) }
        for (name, value) in validators { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in headers where urlRequest.value(forHTTPHeaderField: name) == nil {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if urlRequest.value(forHTTPHeaderField: "Accept") == nil {
            urlRequest.setValue(ImageFormat.acceptHeader, forHTTPHeaderField: "Accept")
        }
        if let requestModifier { urlRequest = requestModifier(urlRequest) }
        return urlRequest
    }
}

/// The request header fields an HTTP loader sends, and the one check every field
/// passes before anything is sent.
enum HTTPHeaderFields {
    /// A data loader's own fields, with Imago's User-Agent added unless they set one.
    static func withDefaultUserAgent(_ fields: [String: String]) -> [String: String] {
        guard !fields.keys.contains(where: { $0.lowercased() == "user-agent" }) else { return fields }
        return fields.merging(["User-Agent": ImageLoader.defaultUserAgent]) { own, _ in own }
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
