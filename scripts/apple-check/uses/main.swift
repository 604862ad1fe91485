// Proves that Imago's Apple code uses an API newer than the package's minimums only
// where it is guarded: inside `if #available(...)`, after `guard #available(...)`, or
// in a declaration marked `@available(...)`, at versions no earlier than the API's.
//
// The Linux compiler cannot do this for Apple platforms (it has no Apple target), so
// it is done from the source text: the SDK declarations (scripts/apple-check/SDK, whose
// availability the SDK check proves against the real SDK) say which names are newer
// than the minimums, and every use of such a name in the sources is looked up in the
// scopes around it. A name the declarations also give an older overload of cannot be
// told apart from it in the text, and is listed as not checked.
//
// Usage: check-uses MINIMUMS DECLARATIONS-DIR SOURCE...
//   MINIMUMS: "iOS=15.0,macOS=12.0,tvOS=15.0,watchOS=8.0,visionOS=1.0"
import Foundation

typealias Versions = [String: [Int]]

func version(_ text: some StringProtocol) -> [Int] {
    text.split(separator: ".").compactMap { Int($0) }
}

func less(_ a: [Int], _ b: [Int]) -> Bool {
    for index in 0..<max(a.count, b.count) {
        let l = index < a.count ? a[index] : 0, r = index < b.count ? b[index] : 0
        if l != r { return l < r }
    }
    return false
}

/// The platform versions of every `@available(...)` or `#available(...)` in `text`
/// (`iOS 17.0`; `introduced:` forms and `unavailable` ones are not versions).
func availability(in text: Substring, marker: String) -> Versions {
    var versions: Versions = [:]
    var rest = text[...]
    while let start = rest.range(of: marker + "(") {
        guard let end = rest[start.upperBound...].firstIndex(of: ")") else { break }
        for item in rest[start.upperBound..<end].split(separator: ",") {
            let words = item.split(separator: " ")
            if words.count == 2, let first = words[1].first, first.isNumber {
                let platform = String(words[0])
                let new = version(words[1])
                if let old = versions[platform], !less(old, new) { continue }
                versions[platform] = new
            }
        }
        rest = rest[end...]
    }
    return versions
}

/// The text with comments and the insides of string literals blanked out, lines kept.
func code(_ source: String) -> [Character] {
    var out: [Character] = []
    var chars = Array(source)
    chars.append("\n")
    var i = 0
    var inString = false, inLineComment = false, blockDepth = 0
    while i < chars.count - 1 {
        let c = chars[i], next = chars[i + 1]
        if inLineComment {
            if c == "\n" { inLineComment = false; out.append(c) } else { out.append(" ") }
        } else if blockDepth > 0 {
            if c == "*" && next == "/" { blockDepth -= 1; out += [" ", " "]; i += 1 }
            else if c == "/" && next == "*" { blockDepth += 1; out += [" ", " "]; i += 1 }
            else { out.append(c == "\n" ? c : " ") }
        } else if inString {
            if c == "\\" { out += [" ", " "]; i += 1 }
            else if c == "\"" { inString = false; out.append(c) }
            else { out.append(c == "\n" ? c : " ") }
        } else if c == "/" && next == "/" {
            inLineComment = true; out.append(" ")
        } else if c == "/" && next == "*" {
            blockDepth = 1; out += [" ", " "]; i += 1
        } else {
            if c == "\"" { inString = true }
            out.append(c)
        }
        i += 1
    }
    return out
}

func isIdentifier(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" }

// MARK: The declarations: which names are newer than the minimums

let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    print("usage: check-uses MINIMUMS DECLARATIONS-DIR SOURCE...")
    exit(2)
}
var minimums: Versions = [:]
for pair in arguments[1].split(separator: ",") {
    let parts = pair.split(separator: "=")
    if parts.count == 2 { minimums[String(parts[0])] = version(parts[1]) }
}

/// Each declared name, with the availability of each of its declarations above the
/// minimums (empty for a declaration the minimums cover).
var declared: [String: [Versions]] = [:]
let declarationFiles = ((try? FileManager.default.contentsOfDirectory(atPath: arguments[2])) ?? []).filter { $0.hasSuffix(".swift") }.sorted()
let keywords = ["func", "var", "let", "class", "struct", "enum", "protocol", "typealias", "case", "init", "subscript"]
for file in declarationFiles {
    let text = String(code((try? String(contentsOfFile: "\(arguments[2])/\(file)", encoding: .utf8)) ?? ""))
    // The availability of the scopes around, and the attributes waiting for their declaration.
    var scopes: [Versions] = [[:]]
    var pending: Versions = [:]
    for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
        var attributes = availability(in: line, marker: "@available")
        for (platform, version) in pending where attributes[platform].map({ less($0, version) }) ?? true { attributes[platform] = version }
        let words = line.split(whereSeparator: { !isIdentifier($0) })
        if let keyword = words.firstIndex(where: { keywords.contains(String($0)) }) {
            var stated = scopes.last ?? [:]
            for (platform, version) in attributes { stated[platform] = version }
            let name = words[keyword] == "init" ? "init" : (keyword + 1 < words.count ? String(words[keyword + 1]) : "")
            let newer = stated.filter { platform, version in minimums[platform].map { less($0, version) } ?? false }
            if !name.isEmpty { declared[name, default: []].append(newer) }
            pending = [:]
            for c in line {
                if c == "{" { scopes.append(stated) } else if c == "}", scopes.count > 1 { scopes.removeLast() }
            }
        } else {
            if line.contains("@available") { pending = attributes }
            for c in line {
                if c == "{" { scopes.append(scopes.last ?? [:]) } else if c == "}", scopes.count > 1 { scopes.removeLast() }
            }
        }
    }
}
var newer: [String: Versions] = [:]
var overloaded: [String] = []
for (name, declarations) in declared where declarations.contains(where: { !$0.isEmpty }) {
    if declarations.contains(where: { $0.isEmpty }) { overloaded.append(name); continue }
    var required: Versions = [:]
    for versions in declarations {
        for (platform, version) in versions where required[platform].map({ less(version, $0) }) ?? true { required[platform] = version }
    }
    newer[name] = required
}

// MARK: The uses

var faults: [String] = []
var checked = 0
for path in arguments[3...] {
    let chars = code((try? String(contentsOfFile: path, encoding: .utf8)) ?? "")
    // Each open brace's guarantee, and the text since the last statement boundary.
    var scopes: [Versions] = [[:]]
    var header = ""
    var line = 1
    var i = 0
    while i < chars.count {
        let c = chars[i]
        if c == "\n" { line += 1 }
        if isIdentifier(c), i == 0 || !isIdentifier(chars[i - 1]) {
            var j = i
            while j < chars.count, isIdentifier(chars[j]) { j += 1 }
            let word = String(chars[i..<j])
            if let required = newer[word], i == 0 || chars[i - 1] != "@" {
                checked += 1
                // What holds here: the scopes', and an `if #available` whose braces
                // open on this statement before the use (`if #available(…) { use }`).
                var holds = scopes.last ?? [:]
                for (platform, version) in availability(in: header[...], marker: "#available") {
                    if holds[platform].map({ less($0, version) }) ?? true { holds[platform] = version }
                }
                let missing = required.filter { platform, version in holds[platform].map { less($0, version) } ?? true }
                if !missing.isEmpty {
                    let wanted = missing.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.map(String.init).joined(separator: "."))" }
                    faults.append("\(path):\(line): \(word) is newer than the package's minimums (\(wanted.joined(separator: ", "))): use it under `if #available` or in an `@available` declaration")
                }
            }
            header += word
            i = j
            continue
        }
        switch c {
        case "{":
            var opened = scopes.last ?? [:]
            if header.contains("guard") {
                // `guard #available(…) else {`: the else block has no guarantee; the
                // rest of the scope around it has.
                var rest = scopes.removeLast()
                for (platform, version) in availability(in: header[...], marker: "#available") {
                    if rest[platform].map({ less($0, version) }) ?? true { rest[platform] = version }
                }
                scopes.append(rest)
            } else {
                // An `if`'s block, and a declaration marked `@available`, have theirs.
                for marker in ["#available", "@available"] {
                    for (platform, version) in availability(in: header[...], marker: marker) {
                        if opened[platform].map({ less($0, version) }) ?? true { opened[platform] = version }
                    }
                }
            }
            scopes.append(opened)
            header = ""
        case "}":
            if scopes.count > 1 { scopes.removeLast() }
            header = ""
        case ";":
            header = ""
        default:
            header.append(c)
        }
        i += 1
    }
}

for name in overloaded.sorted() {
    print("    Not checked (an older overload has the same name): \(name)")
}
if !faults.isEmpty {
    for fault in faults { print(fault) }
    exit(1)
}
print("    Availability: \(newer.count) API(s) newer than the minimums, \(checked) use(s), each guarded")
