import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension ImageLoaderConfiguration {
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
        var urlRequest: URLRequest
        let url = request.url
        for (name, value) in validators { try HTTPHeaderFields.check(name, value, url: url) }
        for (name, value) in headers { try HTTPHeaderFields.check(name, value, url: url) }
        let accepting = request.givenURLRequest == nil
            && !headers.keys.contains { $0.caseInsensitiveCompare("Accept") == .orderedSame }
        if accepting {
            // A request made from a URL, the common load: the Accept field comes with
            // a request made once. Foundation on Linux checks a field's value
            // character by character as it is set; for the long Accept value of
            // every load that was a tenth of the work of queueing one.
            urlRequest = Self.acceptingRequest
            urlRequest.url = url
            if !validators.isEmpty {
                // The validators' names are Imago's own, in Foundation's spelling, and
                // none is Accept: set with the Accept field at once, not one by one
                // through `setValue`, which spells each name again and compares it with
                // every field's lower-cased copy.
                urlRequest.allHTTPHeaderFields = validators.merging(["Accept": ImageFormat.acceptHeader]) { own, _ in own }
            }
        } else {
            urlRequest = request.urlRequest
            for (name, value) in validators { urlRequest.setValue(value, forHTTPHeaderField: name) }
        }
        for (name, value) in headers where urlRequest.value(forHTTPHeaderField: name) == nil {
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if !accepting, urlRequest.value(forHTTPHeaderField: "Accept") == nil {
            urlRequest.setValue(ImageFormat.acceptHeader, forHTTPHeaderField: "Accept")
        }
        if let requestModifier { urlRequest = requestModifier(urlRequest) }
        return urlRequest
    }

    /// The fields `urlRequest(for:)` prepares for `request`, made only when a stored
    /// response's `Vary` names some: what the HTTP cache matches the request by. The
    /// async request modifier, run per attempt, is left out, at a look-up and where
    /// the answer is kept alike.
    func requestFields(for request: ImageRequest) -> RequestFields {
        RequestFields { [self] in HTTPCacheMetadata.fields((try? urlRequest(for: request))?.allHTTPHeaderFields ?? [:]) }
    }

    /// A URL request with the Accept field of the formats this build decodes, for a
    /// URL of its own to be set in a copy.
    private static let acceptingRequest: URLRequest = {
        var request = URLRequest(url: URL(fileURLWithPath: "/"))
        request.setValue(ImageFormat.acceptHeader, forHTTPHeaderField: "Accept")
        return request
    }()
}
