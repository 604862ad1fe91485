import Foundation
import Imago
import ImagoCommandLine
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// The URLs `fetch` and `sheet` load, read from the command line or a file.

/// One URL to load and where it was given: its line in the `--input` file (counting
/// every line, blank or comment, from 1), nil for one on the command line.
struct InputURL: Sendable {
    let text: String
    let line: Int?

    /// The URL, or nil when the text is not one (reported as `ImagoError.invalidURL`,
    /// as the loader reports a URL its data loader does not take).
    var url: URL? { isFilePath(text) ? URL(fileURLWithPath: text) : URL(string: text) }
}

/// Whether a command's argument names a file rather than a URL: it has no scheme
/// (`https:`, `file:`, `data:`). A path is taken as a Linux tool takes one, relative
/// to the current directory, spaces and all.
func isFilePath(_ text: String) -> Bool {
    guard let colon = text.firstIndex(of: ":") else { return true }
    let scheme = text[..<colon]
    // RFC 3986: a letter, then letters, digits, '+', '-' or '.'.
    guard let first = scheme.first, first.isASCII, first.isLetter else { return true }
    return !scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
}

/// The URLs of the command line, then those of `--input` (a file, or '-' for
/// standard input), read one at a time as they are asked for, so that a long list
/// costs no memory and a stream on standard input is loaded while it is still being
/// written. Blank lines and `#` comments are skipped but counted in line numbers.
///
/// `@unchecked Sendable`: made while the command line is parsed, then handed to the
/// one thread that reads it; never used by two threads at once.
final class InputReader: @unchecked Sendable {
    private var positionals: IndexingIterator<[String]>
    private var file: UnsafeMutablePointer<FILE>?
    private var lineNumber = 0
    /// How many URLs there are, when that can be known before reading them: the
    /// command line's and a regular file's. Nil for standard input.
    let countAhead: Int?
    /// Whether some URL comes more than once, when that can be known before reading
    /// them (as `countAhead`); nil for standard input, and for a file too long to
    /// look through for repeats.
    let repeatsAhead: Bool?
    /// For each input in order (counting every URL given, valid or not), where the
    /// same text came last and comes next (-1 when it does not), when that can be
    /// known as `repeatsAhead` can; nil otherwise, and for a list with no repeat.
    let uses: (previous: [Int32], next: [Int32])?

    /// Opens the input; a file that cannot be read, or no input at all, is bad usage.
    init(_ arguments: Arguments, command: String) throws(UsageError) {
        positionals = arguments.positionals.makeIterator()
        guard let input = arguments.string("--input") else {
            guard !arguments.positionals.isEmpty else {
                throw UsageError(message: "\(command) needs at least one URL, or --input FILE")
            }
            let ahead = Self.look(atFileAt: nil, after: arguments.positionals)
            countAhead = arguments.positionals.count
            repeatsAhead = ahead.repeats
            uses = ahead.uses
            return
        }
        if input == "-" {
            file = fdopen(dup(STDIN_FILENO), "r")
            countAhead = nil
            repeatsAhead = nil
            uses = nil
        } else {
            var status = stat()
            guard stat(input, &status) == 0, status.st_mode & S_IFMT != S_IFDIR, let opened = fopen(input, "r") else {
                throw UsageError(message: "cannot read --input \(input)")
            }
            // Closed here: a reader that throws before all it holds is set has no deinit.
            if let encoding = Self.foreignEncoding(of: opened) {
                fclose(opened)
                throw UsageError(message: "--input \(input) is \(encoding), not UTF-8: convert it first (iconv -f \(encoding) -t UTF-8)")
            }
            file = opened
            // A second pass over a file on disk is cheap and gives the progress bar
            // its total; a pipe can be read only once.
            let ahead = status.st_mode & S_IFMT == S_IFREG ? Self.look(atFileAt: input, after: arguments.positionals) : nil
            countAhead = ahead?.count
            repeatsAhead = ahead?.repeats
            uses = ahead?.uses
        }
    }

    deinit {
        if let file { fclose(file) }
    }

    /// The next URL; nil at the end of the input. Blocks while standard input waits.
    func next() -> InputURL? {
        if let text = positionals.next() { return InputURL(text: text, line: nil) }
        while var line = readLine() {
            lineNumber += 1
            // The byte-order mark some editors start a UTF-8 file with is no part of its first URL.
            if lineNumber == 1, line.first == "\u{FEFF}" { line = line.dropFirst() }
            if let url = inputURL(line, number: lineNumber) { return url }
        }
        return nil
    }

    /// Every URL, for commands that need them all before they start.
    func readAll() -> [InputURL] {
        var urls: [InputURL] = []
        while let url = next() { urls.append(url) }
        return urls
    }

    private func readLine() -> Substring? {
        guard let file else { return nil }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        let count = getline(&buffer, &capacity, file)
        guard count >= 0, let buffer else { return nil }
        return String(decoding: UnsafeRawBufferPointer(start: buffer, count: count), as: UTF8.self)[...]
    }

    /// The encoding a file that is not UTF-8 text plainly is (UTF-16 or UTF-32, by its
    /// byte-order mark or the NUL bytes of its first characters), read from its start,
    /// which is left where it was; nil for UTF-8 or ASCII. Read as UTF-8, such a file
    /// would turn into as many garbage URLs as it has lines.
    private static func foreignEncoding(of file: UnsafeMutablePointer<FILE>) -> String? {
        var head = [UInt8](repeating: 0, count: 64)
        let count = fread(&head, 1, head.count, file)
        rewind(file)
        let bytes = head.prefix(count)
        if bytes.starts(with: [0xFF, 0xFE, 0, 0]) || bytes.starts(with: [0, 0, 0xFE, 0xFF]) { return "UTF-32" }
        if bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) { return "UTF-16" }
        guard bytes.contains(0) else { return nil }
        // No mark: text whose every other (or every fourth) byte is NUL.
        return bytes.filter { $0 == 0 }.count * 4 >= bytes.count * 3 ? "UTF-32" : "UTF-16"
    }

    /// How many URLs there are, the command line's and then the file's, whether one
    /// comes twice, and where each comes next (both nil past `repeatWindow`
    /// different URLs or `scheduleLimit` URLs: a list that long is not kept in
    /// memory to find out).
    private static func look(
        atFileAt path: String?, after positionals: [String]
    ) -> (count: Int, repeats: Bool?, uses: (previous: [Int32], next: [Int32])?) {
        var last: [String: Int32] = [:]
        var nextUse: [Int32] = [], previousUse: [Int32] = []
        var repeats: Bool? = false
        func note(_ url: String) {
            guard repeats != nil else { return }
            let index = Int32(nextUse.count)
            nextUse.append(-1)
            previousUse.append(-1)
            if let previous = last.updateValue(index, forKey: url) {
                nextUse[Int(previous)] = index
                previousUse[Int(index)] = previous
                repeats = true
            } else if last.count > repeatWindow || nextUse.count > scheduleLimit {
                repeats = nil
            }
        }
        positionals.forEach(note)
        var count = positionals.count
        if let path, let file = fopen(path, "r") {
            defer { fclose(file) }
            var buffer: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(buffer) }
            while getline(&buffer, &capacity, file) >= 0, let buffer {
                let text = String(cString: buffer).trimmingWhitespaceAndNewlines
                if !text.isEmpty && !text.hasPrefix("#") {
                    count += 1
                    note(text)
                }
            }
        }
        return (count, repeats, repeats == true ? (previousUse, nextUse) : nil)
    }

    /// The most different URLs looked through for a repeat: 100,000 take a few MB
    /// for the moment the look lasts.
    static let repeatWindow = 100_000
    /// The most URLs whose uses are noted: 8 MB for the moment the command lasts.
    static let scheduleLimit = 1_000_000
}

/// The URL on line `number` of an input, or nil for a blank line or a comment.
func inputURL(_ line: Substring, number: Int) -> InputURL? {
    let text = line.trimmingWhitespaceAndNewlines
    guard !text.isEmpty, !text.hasPrefix("#") else { return nil }
    return InputURL(text: text, line: number)
}

extension StringProtocol {
    /// The text as `trimmingCharacters(in: .whitespacesAndNewlines)` gives it. Every
    /// line of a list is trimmed twice (when the list is looked through, and when it
    /// is read), and Foundation's trimming goes through NSString on Linux: 31,000
    /// instructions a line, 2 % of a warm fetch. ASCII's whitespace is dropped byte by
    /// byte; Foundation is asked only when what is left starts or ends beyond ASCII,
    /// where whitespace of other scripts may be.
    var trimmingWhitespaceAndNewlines: String {
        let trimmed = trimmingASCII { $0 == 0x20 || $0 &- 0x09 < 5 }
        guard let first = trimmed.utf8.first, let last = trimmed.utf8.last, first >= 0x80 || last >= 0x80 else {
            return String(trimmed)
        }
        return trimmed.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
