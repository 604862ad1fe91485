import Foundation

// The form HTTP cache metadata takes in the disk and shared tiers.

extension HTTPCacheMetadata {
    /// A self-contained blob for the disk and shared tiers; equal metadata always
    /// gives equal bytes.
    ///
    /// Binary, the fields in a fixed order: "imh2"; two bytes of flags (which optional
    /// fields follow, and Cache-Control's six switches), and when their top bit is
    /// set two more (`s-maxage`, `proxy-revalidate`, a request with credentials, the
    /// request's selecting fields); the URL; when it was stored and its `Age`; then
    /// those of ETag, Last-Modified (its text, then its date), Date, Expires, Vary,
    /// max-age, stale-if-error, stale-while-revalidate, s-maxage and the selecting
    /// fields that are present. Metadata that needs no
    /// second pair of flags is written as before they existed, so older readers
    /// still take it (and treat the rest as a miss). A text is a four-byte length and its UTF-8; a number or a date, the
    /// eight bytes of its `Double`; all big-endian. Read at every warm load (twice at a
    /// revalidation) and written at every store: as JSON through Foundation, which
    /// blobs written before still are, it took some 107,000 instructions to read and
    /// 123,000 to write.
    @_spi(HTTPCaching) public func encoded() -> Data {
        var out = StoredForm.magic
        out.reserveCapacity(128 + url.absoluteString.utf8.count)
        let control = cacheControl
        let present: [Bool] = [
            etag != nil, lastModified != nil, lastModifiedDate != nil, date != nil, expires != nil, vary != nil,
            control.maxAge != nil, control.staleIfError != nil, control.staleWhileRevalidate != nil,
            control.noCache, control.noStore, control.mustRevalidate, control.isPrivate, control.isPublic, control.isImmutable,
        ]
        let more: [Bool] = [control.sharedMaxAge != nil, control.proxyRevalidate, requestCarriedCredentials, selection != nil]
        func word(_ bits: [Bool]) -> UInt16 { bits.enumerated().reduce(UInt16(0)) { $1.element ? $0 | 1 << $1.offset : $0 } }
        let extra = word(more)
        let flags = word(present) | (extra != 0 ? 0x8000 : 0)
        out += [UInt8(flags >> 8), UInt8(flags & 0xFF)]
        if extra != 0 { out += [UInt8(extra >> 8), UInt8(extra & 0xFF)] }
        func text(_ value: String?) {
            guard let value else { return }
            let bytes = Array(value.utf8)
            number(UInt64(bytes.count), bytes: 4)
            out += bytes
        }
        func number(_ value: UInt64, bytes: Int) {
            for shift in stride(from: (bytes - 1) * 8, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
        }
        func double(_ value: Double?) {
            if let value { number(value.bitPattern, bytes: 8) }
        }
        text(url.absoluteString)
        double(storedAt.timeIntervalSinceReferenceDate)
        double(ageValue)
        text(etag)
        text(lastModified)
        double(lastModifiedDate?.timeIntervalSinceReferenceDate)
        double(date?.timeIntervalSinceReferenceDate)
        double(expires?.timeIntervalSinceReferenceDate)
        text(vary)
        double(control.maxAge)
        double(control.staleIfError)
        double(control.staleWhileRevalidate)
        double(control.sharedMaxAge)
        text(selection)
        return Data(out)
    }

    /// Reads a blob made by `encoded()`, or by the JSON form written before; nil for
    /// anything else (damaged, foreign, cut short, a number that is not finite, or a
    /// format version this code does not know), which the cache treats as a miss.
    @_spi(HTTPCaching) public init?(encoded data: Data) {
        guard data.starts(with: StoredForm.magic) else {
            guard let envelope = try? JSONDecoder().decode(JSONEnvelope.self, from: data), envelope.version == 1 else { return nil }
            self = envelope.metadata
            return
        }
        var reader = StoredForm(bytes: Array(data), at: StoredForm.magic.count)
        guard let high = reader.byte(), let low = reader.byte() else { return nil }
        let flags = UInt16(high) << 8 | UInt16(low)
        var extra: UInt16 = 0
        if flags & 0x8000 != 0 {
            guard let high = reader.byte(), let low = reader.byte() else { return nil }
            extra = UInt16(high) << 8 | UInt16(low)
        }
        func has(_ bit: Int) -> Bool { flags & 1 << bit != 0 }
        func hasMore(_ bit: Int) -> Bool { extra & 1 << bit != 0 }
        func date(_ bit: Int) -> Date?? {
            guard has(bit) else { return .some(nil) }
            return reader.double().map { .some(Date(timeIntervalSinceReferenceDate: $0)) }
        }
        func number(present: Bool) -> Double?? { present ? reader.double().map { .some($0) } : .some(nil) }
        func number(_ bit: Int) -> Double?? { number(present: has(bit)) }
        func text(present: Bool) -> String?? { present ? reader.text().map { .some($0) } : .some(nil) }
        func text(_ bit: Int) -> String?? { text(present: has(bit)) }
        // A flag this code does not know belongs to a later version's form.
        guard extra & ~0b1111 == 0, let address = reader.text(), let url = URL(string: address),
              let storedAt = reader.double(), let age = reader.double(),
              let etag = text(0), let lastModified = text(1), let lastModifiedDate = date(2), let responseDate = date(3),
              let expires = date(4), let vary = text(5), let maxAge = number(6), let staleIfError = number(7),
              let staleWhileRevalidate = number(8), let sharedMaxAge = number(present: hasMore(0)),
              let selection = text(present: hasMore(3)),
              reader.isAtEnd
        else { return nil }
        var control = CacheControl()
        control.maxAge = maxAge
        control.staleIfError = staleIfError
        control.staleWhileRevalidate = staleWhileRevalidate
        (control.noCache, control.noStore, control.mustRevalidate) = (has(9), has(10), has(11))
        (control.isPrivate, control.isPublic, control.isImmutable) = (has(12), has(13), has(14))
        (control.sharedMaxAge, control.proxyRevalidate) = (sharedMaxAge, hasMore(1))
        self.init(
            url: url, storedAt: Date(timeIntervalSinceReferenceDate: storedAt), etag: etag, lastModified: lastModified,
            lastModifiedDate: lastModifiedDate, date: responseDate, ageValue: age, expires: expires, cacheControl: control, vary: vary,
            selection: selection, requestCarriedCredentials: hasMore(2))
    }

    /// The JSON form metadata was stored in before the binary one, still read.
    private struct JSONEnvelope: Decodable {
        var version: Int
        var metadata: HTTPCacheMetadata
    }
}

/// Reads the binary stored form: each read is nil past the end.
private struct StoredForm {
    static let magic: [UInt8] = Array("imh2".utf8)

    let bytes: [UInt8]
    var at: Int

    var isAtEnd: Bool { at == bytes.count }

    mutating func byte() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func number(bytes count: Int) -> UInt64? {
        guard bytes.count - at >= count else { return nil }
        defer { at += count }
        return bytes[at..<at + count].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }

    /// A finite number: a blob holding another is damaged.
    mutating func double() -> Double? {
        number(bytes: 8).map { Double(bitPattern: $0) }.flatMap { $0.isFinite ? $0 : nil }
    }

    /// Valid UTF-8 only.
    mutating func text() -> String? {
        guard let length = number(bytes: 4), length <= UInt64(bytes.count - at) else { return nil }
        let utf8 = bytes[at..<at + Int(length)]
        at += Int(length)
        let value = String(decoding: utf8, as: UTF8.self)
        return value.utf8.elementsEqual(utf8) ? value : nil
    }
}
