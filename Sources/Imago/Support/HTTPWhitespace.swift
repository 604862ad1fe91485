extension StringProtocol {
    /// The text without HTTP's optional whitespace around it: spaces and tabs, the
    /// only whitespace a header value may have (RFC 9110 §5.6.3). Foundation's
    /// `trimmingCharacters(in:)` goes through NSString on Linux, which made trimming
    /// a few header values a visible part of every response's handling.
    var trimmingHTTPWhitespace: String {
        String(trimmingASCII { $0 == 0x20 || $0 == 0x09 })
    }

    /// The text without the ASCII bytes `isTrimmed` picks at either end, by bytes,
    /// without Foundation. `isTrimmed` must pick ASCII bytes only, so that the ends
    /// fall between characters' scalars.
    package func trimmingASCII(where isTrimmed: (UInt8) -> Bool) -> Substring {
        let text = Substring(self)
        let bytes = text.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, isTrimmed(bytes[start]) { bytes.formIndex(after: &start) }
        while start < end {
            let last = bytes.index(before: end)
            guard isTrimmed(bytes[last]) else { break }
            end = last
        }
        return text[start..<end]
    }
}
