extension StringProtocol {
    /// The text without HTTP's optional whitespace around it: spaces and tabs, the
    /// only whitespace a header value may have (RFC 9110 §5.6.3). Foundation's
    /// `trimmingCharacters(in:)` goes through NSString on Linux, which made trimming
    /// a few header values a visible part of every response's handling.
    var trimmingHTTPWhitespace: String {
        let text = Substring(self)
        let bytes = text.utf8
        var start = bytes.startIndex, end = bytes.endIndex
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { bytes.formIndex(after: &start) }
        while start < end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        return String(text[start..<end])
    }
}
