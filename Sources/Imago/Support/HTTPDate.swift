import Foundation

/// HTTP-date parsing (RFC 9110 §5.6.7), shared by `Retry-After` and the HTTP cache's
/// `Date`, `Expires` and `Last-Modified`, so that both read dates the same way.
///
/// Strict, by hand rather than through `DateFormatter`: a formatter is lenient in
/// ways a cache must not be (it reads garbage around a date, and days or months out
/// of range, as some other date), and an invalid `Expires` means "already expired",
/// never a date in the future. Names of days and months and the zone are read in any
/// case (`THU`, `aug`, `gMT`), as every browser reads them: the grammar spells them
/// one way, but refusing another case would expire a response its server meant to
/// last.
enum HTTPDate {
    private static let days = Names(["mon", "tue", "wed", "thu", "fri", "sat", "sun"])
    private static let longDays = Names(["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
    private static let months = Names(["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])
    private static let gmt = Names(["gmt"])

    /// The date `value` names, or nil when it is not an HTTP-date in any of the three
    /// forms: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
    /// A recipient must then treat it per the header's own rule: `Expires` calls it
    /// expired, `Retry-After` ignores it. `now` places a two-digit year.
    static func parse(_ value: String, now: Date = Date()) -> Date? {
        let text = Substring(value.trimmingHTTPWhitespace)
        return imfFixdate(text) ?? rfc850(text, now: now) ?? asctime(text)
    }

    /// `date` as an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one form a
    /// sender may generate (RFC 9110 §5.6.7), whole seconds. A date outside the
    /// four-digit years (only a damaged stored blob holds one) is written as the
    /// nearest within them.
    static func format(_ date: Date) -> String {
        let seconds = Int(min(max(date.timeIntervalSince1970, -62_135_596_800), 253_402_300_799).rounded(.down))
        let dayNumber = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - dayNumber * 86_400
        let (year, monthNumber, day) = civil(daysSinceEpoch: dayNumber)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        // 1970-01-01 was a Thursday; `days` counts from Monday.
        let weekday = days.names[((dayNumber + 3) % 7 + 7) % 7].capitalized
        let month = months.names[monthNumber - 1].capitalized
        let yearText = String(year)
        return "\(weekday), \(two(day)) \(month) \(String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText) "
            + "\(two(time / 3600)):\(two(time / 60 % 60)):\(two(time % 60)) GMT"
    }

    /// Whether the names in a parsed date are spelled in the grammar's case (`Sun`,
    /// `Nov`, `GMT`): only then may its text be sent back as an HTTP-date. Read as
    /// bytes (a parsed date is ASCII; anything else is not sent back).
    static func isSpelledAsTheGrammar(_ value: String) -> Bool {
        var wordStart = true, word: [UInt8] = []
        func wordIsSpelled() -> Bool {
            word.isEmpty || word.elementsEqual("GMT".utf8) || word.dropFirst().allSatisfy { $0 >= 0x61 && $0 <= 0x7A }
        }
        for byte in value.utf8 {
            guard byte < 0x80 else { return false }
            let isUpper = byte >= 0x41 && byte <= 0x5A, isLower = byte >= 0x61 && byte <= 0x7A
            if isUpper || isLower {
                if wordStart, !isUpper { return false }
                word.append(byte)
                wordStart = false
            } else {
                guard wordIsSpelled() else { return false }
                word.removeAll(keepingCapacity: true)
                wordStart = true
            }
        }
        return wordIsSpelled()
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`: 29 bytes in fixed places, read as bytes. The
    /// form nearly every server sends, read at every response and revalidation: by
    /// characters, splitting and lower-casing, it took some 38,000 instructions.
    private static func imfFixdate(_ text: Substring) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 29, bytes[3] == UInt8(ascii: ","), bytes[4] == UInt8(ascii: " "), bytes[7] == UInt8(ascii: " "),
              bytes[11] == UInt8(ascii: " "), bytes[16] == UInt8(ascii: " "), bytes[19] == UInt8(ascii: ":"),
              bytes[22] == UInt8(ascii: ":"), bytes[25] == UInt8(ascii: " ")
        else { return nil }
        guard name(bytes[0..<3], in: days) != nil, let day = number(bytes[5..<7]), let month = name(bytes[8..<11], in: months),
              let year = number(bytes[12..<16]), isGMT(bytes[26..<29]),
              let hour = number(bytes[17..<19]), let minute = number(bytes[20..<22]), let second = number(bytes[23..<25])
        else { return nil }
        return date(year: year, month: month + 1, day: day, hour: hour, minute: minute, second: second)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`; a two-digit year more than 50 years ahead of
    /// `now` is the most recent past year with those digits (RFC 9110 §5.6.7).
    private static func rfc850(_ text: Substring, now: Date) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].last == ",", name(parts[0].dropLast().utf8, in: longDays) != nil, isGMT(parts[3].utf8)
        else { return nil }
        let dayMonthYear = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard dayMonthYear.count == 3, dayMonthYear[0].count == 2, let day = number(dayMonthYear[0].utf8),
              let month = name(dayMonthYear[1].utf8, in: months),
              dayMonthYear[2].count == 2, let shortYear = number(dayMonthYear[2].utf8)
        else { return nil }
        let thisYear = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "GMT")!, from: now).year ?? 2000
        var year = thisYear - thisYear % 100 + shortYear
        if year > thisYear + 50 { year -= 100 }
        return date(year: year, month: month + 1, day: day, time: parts[2])
    }

    /// `Sun Nov  6 08:49:37 1994` (a one-digit day is padded with a space).
    private static func asctime(_ text: Substring) -> Date? {
        let parts = text.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 5, name(parts[0].utf8, in: days) != nil, let month = name(parts[1].utf8, in: months),
              (1...2).contains(parts[2].count), let day = number(parts[2].utf8),
              parts[4].count == 4, let year = number(parts[4].utf8)
        else { return nil }
        // The padding is exactly one space before a one-digit day, and single spaces
        // elsewhere.
        let expected = "\(parts[0]) \(parts[1]) \(parts[2].count == 1 ? " " : "")\(parts[2]) \(parts[3]) \(parts[4])"
        guard text == expected else { return nil }
        return date(year: year, month: month + 1, day: day, time: parts[3])
    }

    /// The index among the lower-case `names` of the name in `bytes`, in any case
    /// (of ASCII letters: the names have no others).
    private static func name(_ bytes: some Collection<UInt8>, in names: Names) -> Int? {
        names.index(of: bytes)
    }

    /// Lower-case names, each also packed into one word when it has at most seven
    /// letters: a name read is compared as one word with each, where comparing it
    /// letter by letter with each in turn was most of reading a date, at every
    /// response.
    struct Names {
        let names: [String]
        private let words: [UInt64?]

        init(_ names: [String]) {
            self.names = names
            words = names.map { Names.packed($0.utf8) }
        }

        func index(of bytes: some Collection<UInt8>) -> Int? {
            if let word = Names.packed(bytes) { return words.firstIndex(of: word) }
            return names.firstIndex { $0.utf8.elementsEqual(bytes.lazy.map { $0 &- 0x41 < 26 ? $0 | 0x20 : $0 }) }
        }

        /// Up to seven bytes, ASCII capitals lowered, under their count in one word
        /// (so that no two texts share one); nil for more.
        private static func packed(_ bytes: some Collection<UInt8>) -> UInt64? {
            guard bytes.count <= 7 else { return nil }
            return bytes.reduce(UInt64(bytes.count)) { $0 << 8 | UInt64($1 &- 0x41 < 26 ? $1 | 0x20 : $1) }
        }
    }

    private static func isGMT(_ bytes: some Collection<UInt8>) -> Bool {
        name(bytes, in: gmt) != nil
    }

    /// ASCII digits only, one to four, no sign or space.
    private static func number(_ bytes: some Collection<UInt8>) -> Int? {
        guard !bytes.isEmpty, bytes.count <= 4 else { return nil }
        var value = 0
        for byte in bytes {
            guard byte >= 0x30, byte <= 0x39 else { return nil }
            value = value * 10 + Int(byte - 0x30)
        }
        return value
    }

    /// The moment of a valid calendar date and `HH:MM:SS` time in GMT; nil for any
    /// field out of range (a leap second, 60, counts as the second before).
    private static func date(year: Int, month: Int, day: Int, time: Substring) -> Date? {
        let clock = time.split(separator: ":", omittingEmptySubsequences: false)
        guard clock.count == 3, clock.allSatisfy({ $0.count == 2 }),
              let hour = number(clock[0].utf8), let minute = number(clock[1].utf8), let second = number(clock[2].utf8)
        else { return nil }
        return date(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
    }

    /// The moment of a valid calendar date and time in GMT; nil for any field out of
    /// range (a leap second, 60, counts as the second before).
    private static func date(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Date? {
        guard hour < 24, minute < 60, second <= 60,
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return nil }
        let seconds = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
        return Date(timeIntervalSince1970: Double(seconds))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
    /// `days_from_civil`).
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`), the inverse of `daysSinceEpoch`.
    private static func civil(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
