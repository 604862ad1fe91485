import Foundation

/// The fields of the request a load sends, as a stored response's `Vary` selects by
/// them (RFC 9111 §4.1): a response the server chose by a field's value answers a
/// later request only when that request sends the same value, or, like it, none.
///
/// The fields are made only when a stored response's `Vary` names some, so a load of
/// an image served without `Vary` never prepares its request for this.
struct RequestFields: Sendable {
    private let make: @Sendable () -> [String: String]

    /// The fields `make` gives, keyed by lower-cased name; made once for each
    /// response that asks, however many fields its `Vary` names.
    init(_ make: @escaping @Sendable () -> [String: String]) {
        self.make = make
    }

    /// A request that sends none of the fields a response may select by.
    static let none = RequestFields { [:] }

    /// The request's fields, keyed by lower-cased name.
    var fields: [String: String] { make() }
}

extension HTTPCacheMetadata {
    /// The metadata of `response` to a request for `url` sending `fields`, arrived at
    /// `now`; nil for a response that says no status (not HTTP) or may not be kept.
    init?(_ response: DataResponse, for url: URL, sending fields: RequestFields, at now: Date) {
        guard let status = response.statusCode,
              var metadata = HTTPCacheMetadata(
                url: url, statusCode: status, headers: response.headers, storedAt: now,
                requestCarriedCredentials: response.requestCarriedCredentials)
        else { return nil }
        metadata.select(by: fields)
        self = metadata
    }

    /// The fields `Vary` names, lower-cased, in its order, each once.
    var selectingNames: [String] { Self.names(inVary: vary) }

    /// What `request` sends in the fields `vary` (a `Vary` value) names, as a
    /// response chosen by them writes it down; nil when it names none.
    static func selection(ofVary vary: String?, in request: RequestFields) -> String? {
        selection(of: names(inVary: vary), in: request)
    }

    private static func names(inVary vary: String?) -> [String] {
        guard let vary else { return [] }
        var names: [String] = []
        for part in vary.split(separator: ",") {
            let name = part.trimmingHTTPWhitespace.lowercased()
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        return names
    }

    /// Writes down what `request` sends in each field `Vary` names, for the response
    /// kept to answer later requests that send the same (`isSelected(by:)`).
    mutating func select(by request: RequestFields) {
        selection = Self.selection(of: selectingNames, in: request)
    }

    /// Whether the response may answer `request`: `Vary` names no field, or
    /// `request` sends in each what the request that fetched it did.
    func isSelected(by request: RequestFields) -> Bool {
        let names = selectingNames
        return names.isEmpty || selection == Self.selection(of: names, in: request)
    }

    /// One line a field: its name, and a colon and its value when the request sends
    /// it (a field sent empty is not one left out). A value's list members are
    /// compared without the whitespace around them, so `1,2` and ` 1, 2 ` select
    /// alike (§4.1 lets a cache normalise so).
    private static func selection(of names: [String], in request: RequestFields) -> String? {
        guard !names.isEmpty else { return nil }
        let fields = request.fields
        var lines = ""
        for name in names {
            lines += name
            if let value = fields[name] {
                lines += ":" + value.split(separator: ",", omittingEmptySubsequences: false)
                    .map { $0.trimmingHTTPWhitespace }.joined(separator: ",")
            }
            lines += "\n"
        }
        return lines
    }
}
