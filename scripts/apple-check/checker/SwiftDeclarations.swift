// Reads Swift declarations (the SDK declarations of scripts/apple-check/SDK and
// SwiftUI's .swiftinterface) into a tree: enough of Swift's grammar to find each
// declaration, its attributes, modifiers, signature and members. Bodies are skipped.
import Foundation

/// One Swift declaration, with the text of its parts as written.
final class SwiftDecl {
    var keyword: String
    var name: String
    var attributes: [String] = []
    var modifiers: [String] = []
    /// For functions and initializers: the generic clause and parameter list, the
    /// effects and the result, as written. For properties: the type.
    var signature = ""
    /// For types and extensions: the inherited types, as written.
    var inherits: [String] = []
    var members: [SwiftDecl] = []
    /// For properties: whether a setter exists (stored `var`, or `{ get set }`).
    var settable = false
    /// For enum cases and `static let x = T(rawValue: n)`: the raw value, as written.
    var rawValue: String?
    /// For properties: the initial value, as written.
    var initializer: String?
    weak var parent: SwiftDecl?
    let file: String
    let line: Int

    init(keyword: String, name: String, file: String, line: Int) {
        self.keyword = keyword
        self.name = name
        self.file = file
        self.line = line
    }

    var isType: Bool { ["class", "struct", "enum", "protocol", "extension", "actor"].contains(keyword) }

    /// The parameters of a function or initializer.
    var parameters: [SwiftParameter] {
        guard let open = signature.firstIndex(of: "(") else { return [] }
        let inner = balanced(signature, from: open)
        return splitTopLevel(inner, on: ",").compactMap(SwiftParameter.init)
    }

    /// The result of a function, "" for none.
    var result: String {
        guard let open = signature.firstIndex(of: "(") else { return "" }
        let after = signature[signature.index(open, offsetBy: balanced(signature, from: open).count + 2)...]
        guard let arrow = after.range(of: "->") else { return "" }
        var text = String(after[arrow.upperBound...])
        if let whereClause = text.range(of: " where ") { text = String(text[..<whereClause.lowerBound]) }
        return text.trimmingCharacters(in: .whitespaces)
    }

    /// `name(label:label:)` for functions and initializers, the name otherwise.
    var fullName: String {
        guard keyword == "func" || keyword == "init" || keyword == "subscript" else { return name }
        return name + "(" + parameters.map { "\($0.label):" }.joined() + ")"
    }

    /// The path from the outermost type: `UIView.ContentMode`, `UIImage.init(named:)`.
    var path: String {
        var names = [fullName]
        var scope = parent
        while let outer = scope { names.insert(outer.name, at: 0); scope = outer.parent }
        return names.joined(separator: ".")
    }

    var location: String { "\(file):\(line)" }

    /// The platform versions of `@available` attributes: `["iOS": "17.0"]`, "unavailable"
    /// for a platform the declaration is unavailable on.
    var availability: [String: String] {
        var result: [String: String] = [:]
        for attribute in attributes where attribute.hasPrefix("@available(") {
            let arguments = splitTopLevel(String(attribute.dropFirst(11).dropLast()), on: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }
            if arguments.count >= 2, arguments[1] == "unavailable" { result[arguments[0]] = "unavailable"; continue }
            for argument in arguments {
                let words = argument.split(separator: " ")
                if words.count == 2, words[0] != "*" { result[String(words[0])] = String(words[1]) }
            }
        }
        return result
    }

    /// The declared type of a property, or the one its initial value makes obvious
    /// (`= true`, `= 0`, `= Alignment()`).
    var propertyType: String {
        if !signature.isEmpty { return signature }
        let value = compact(initializer ?? "")
        if value == "true" || value == "false" { return "Bool" }
        if Int(value) != nil { return "Int" }
        if value.hasSuffix("()"), value.first?.isUppercase == true { return String(value.dropLast(2)) }
        if let open = value.firstIndex(of: "("), value.first?.isUppercase == true { return String(value[..<open]) }
        return ""
    }

    var isPublicAPI: Bool { !modifiers.contains { ["private", "fileprivate", "internal"].contains($0) } }

    var hasMainActor: Bool { attributes.contains { $0 == "@MainActor" || $0 == "@_Concurrency.MainActor" } }
}

/// A parameter: label, name, type and default value as written.
struct SwiftParameter {
    var label: String
    var name: String
    var type: String
    var defaultValue: String?

    init?(_ text: String) {
        var text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        // Attributes such as @ViewBuilder before the names.
        while text.hasPrefix("@"), let space = text.firstIndex(of: " ") { text = String(text[text.index(after: space)...]) }
        guard let colon = firstTopLevel(text, ":") else { return nil }
        let names = text[..<colon].split(separator: " ").map(String.init)
        label = names.first ?? "_"
        name = names.last ?? "_"
        var rest = String(text[text.index(after: colon)...])
        if let equals = firstTopLevel(rest, "=") {
            defaultValue = rest[rest.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            rest = String(rest[..<equals])
        }
        type = rest.trimmingCharacters(in: .whitespaces)
    }
}

/// The text between the bracket at `open` and the one that closes it.
func balanced(_ text: String, from open: String.Index) -> String {
    let pairs: [Character: Character] = ["(": ")", "[": "]", "<": ">", "{": "}"]
    guard let close = pairs[text[open]] else { return "" }
    var depth = 0
    var index = open
    while index < text.endIndex {
        let character = text[index]
        if character == text[open] { depth += 1 }
        // `->` is no closing angle bracket.
        if character == close, !(close == ">" && index > text.startIndex && text[text.index(before: index)] == "-") {
            depth -= 1
            if depth == 0 { return String(text[text.index(after: open)..<index]) }
        }
        index = text.index(after: index)
    }
    return String(text[text.index(after: open)...])
}

/// `text` split at each `separator` outside brackets.
func splitTopLevel(_ text: String, on separator: Character) -> [String] {
    var parts: [String] = []
    var current = ""
    var depth = 0
    var previous: Character = " "
    for character in text {
        switch character {
        case "(", "[", "<", "{": depth += 1
        case ")", "]", "}": depth -= 1
        case ">" where previous != "-": depth -= 1
        default: break
        }
        if character == separator, depth == 0 { parts.append(current); current = "" } else { current.append(character) }
        previous = character
    }
    if !current.trimmingCharacters(in: .whitespaces).isEmpty { parts.append(current) }
    return parts
}

/// The first `character` outside brackets.
func firstTopLevel(_ text: String, _ character: Character) -> String.Index? {
    var depth = 0
    var previous: Character = " "
    var index = text.startIndex
    while index < text.endIndex {
        let current = text[index]
        switch current {
        case "(", "[", "<", "{": depth += 1
        case ")", "]", "}": depth -= 1
        case ">" where previous != "-": depth -= 1
        default: if current == character, depth == 0 { return index }
        }
        previous = current
        index = text.index(after: index)
    }
    return nil
}

/// A token of Swift source: its text, line, and whether a line break precedes it.
struct Token {
    var text: String
    var line: Int
    var newlineBefore: Bool
}

/// Reads declarations from Swift source. `condition` decides each `#if` clause.
struct SwiftReader {
    private var tokens: [Token] = []
    private var position = 0
    private let file: String

    init(source: String, file: String, condition: (String) -> Bool) {
        self.file = file
        tokens = Self.tokenize(Self.activeLines(source, condition: condition))
    }

    /// The source with the lines of inactive `#if` clauses (and the directives) blanked.
    private static func activeLines(_ source: String, condition: (String) -> Bool) -> String {
        // Per nesting level: is the clause active, was any clause of it taken.
        var stack: [(active: Bool, taken: Bool)] = []
        var lines: [String] = []
        for line in source.components(separatedBy: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            let enclosing = stack.allSatisfy(\.active)
            if trimmed.hasPrefix("#if ") {
                let taken = condition(String(trimmed.dropFirst(4)))
                stack.append((taken, taken))
                lines.append("")
            } else if trimmed.hasPrefix("#elseif ") {
                let taken = !stack[stack.count - 1].taken && condition(String(trimmed.dropFirst(8)))
                stack[stack.count - 1] = (taken, stack[stack.count - 1].taken || taken)
                lines.append("")
            } else if trimmed == "#else" {
                stack[stack.count - 1] = (!stack[stack.count - 1].taken, true)
                lines.append("")
            } else if trimmed == "#endif" {
                stack.removeLast()
                lines.append("")
            } else {
                lines.append(enclosing ? line : "")
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func tokenize(_ source: String) -> [Token] {
        var tokens: [Token] = []
        let characters = Array(source.unicodeScalars)
        var index = 0
        var line = 1
        var newline = true
        func isIdentifier(_ c: Unicode.Scalar) -> Bool {
            CharacterSet.alphanumerics.contains(c) || c == "_" || c == "$"
        }
        while index < characters.count {
            let c = characters[index]
            if c == "\n" { line += 1; newline = true; index += 1; continue }
            if c == " " || c == "\t" || c == "\r" { index += 1; continue }
            if c == "/", index + 1 < characters.count, characters[index + 1] == "/" {
                while index < characters.count, characters[index] != "\n" { index += 1 }
                continue
            }
            if c == "/", index + 1 < characters.count, characters[index + 1] == "*" {
                index += 2
                while index + 1 < characters.count, !(characters[index] == "*" && characters[index + 1] == "/") {
                    if characters[index] == "\n" { line += 1 }
                    index += 1
                }
                index += 2
                continue
            }
            let start = index
            let startLine = line
            if c == "\"" {
                let triple = index + 2 < characters.count && characters[index + 1] == "\"" && characters[index + 2] == "\""
                index += triple ? 3 : 1
                while index < characters.count {
                    if characters[index] == "\\" { index += 2; continue }
                    if characters[index] == "\n" { line += 1 }
                    if characters[index] == "\"" {
                        if !triple { index += 1; break }
                        if index + 2 < characters.count, characters[index + 1] == "\"", characters[index + 2] == "\"" { index += 3; break }
                    }
                    index += 1
                }
            } else if CharacterSet.decimalDigits.contains(c) {
                // A number, with its fraction: `17.0`, `0x1F`.
                index += 1
                while index < characters.count, isIdentifier(characters[index])
                    || characters[index] == "." && index + 1 < characters.count && CharacterSet.decimalDigits.contains(characters[index + 1]) {
                    index += 1
                }
            } else if isIdentifier(c) || c == "@" || c == "#" || c == "`" {
                index += 1
                // A qualified name (`SwiftUI.View`, `Self.Body`) is one token.
                while index < characters.count, isIdentifier(characters[index]) || characters[index] == "`"
                    || characters[index] == "." && index + 1 < characters.count && CharacterSet.letters.contains(characters[index + 1]) {
                    index += 1
                }
            } else if c == "-" && index + 1 < characters.count && characters[index + 1] == ">" {
                index += 2
            } else {
                index += 1
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: characters[start..<index].filter { $0 != "`" || start + 1 == index })
            tokens.append(Token(text: text, line: startLine, newlineBefore: newline))
            newline = false
        }
        return tokens
    }

    private var current: Token? { position < tokens.count ? tokens[position] : nil }

    /// Every declaration of the source, types with their members.
    mutating func declarations() -> [SwiftDecl] {
        members(until: nil)
    }

    private static let modifierWords: Set<String> = [
        "public", "open", "final", "static", "class", "nonisolated", "override", "required", "convenience", "mutating",
        "nonmutating", "private", "internal", "fileprivate", "package", "indirect", "dynamic", "optional", "lazy", "weak",
        "unowned", "__consuming", "consuming", "borrowing", "distributed", "prefix", "postfix", "infix",
    ]

    private mutating func members(until closing: String?) -> [SwiftDecl] {
        var result: [SwiftDecl] = []
        while let token = current {
            if token.text == closing { position += 1; return result }
            if let declaration = declaration() { result.append(declaration) }
            result.append(contentsOf: pendingCases)
            pendingCases.removeAll()
        }
        return result
    }

    /// The text of tokens from here to the end of a balanced group opened by the
    /// current token.
    private mutating func group() -> String {
        let pairs = ["(": ")", "[": "]", "<": ">", "{": "}"]
        guard let open = current?.text, let close = pairs[open] else { return "" }
        var depth = 0
        var text = ""
        while let token = current {
            if token.text == open { depth += 1 }
            if token.text == close { depth -= 1 }
            text += spaced(text, token.text)
            position += 1
            if depth == 0 { break }
        }
        return text
    }

    /// Tokens are joined with single spaces; comparisons drop the spaces (`compact`).
    private func spaced(_ text: String, _ next: String) -> String {
        text.isEmpty ? next : " " + next
    }

    /// Skips to the end of the declaration or statement that starts here.
    private mutating func skipStatement() {
        position += 1
        while let token = current, !token.newlineBefore, token.text != "}" {
            if ["(", "[", "{"].contains(token.text) { _ = group() } else { position += 1 }
        }
    }

    /// The tokens up to (not including) a body, a line break at depth 0 before a new
    /// declaration, or `stop`, as text.
    private mutating func signature(stopAt stop: Set<String>) -> String {
        var text = ""
        while let token = current {
            if stop.contains(token.text) { break }
            if token.newlineBefore, !text.isEmpty, !continuesSignature(token.text, after: text) { break }
            if ["(", "[", "<"].contains(token.text) { text += spaced(text, group()); continue }
            text += spaced(text, token.text)
            position += 1
        }
        return text
    }

    private func continuesSignature(_ next: String, after text: String) -> Bool {
        ["->", "where", "throws", "rethrows", "async", "&", ",", ":", "=", "."].contains(next) || text.hasSuffix(",")
            || text.hasSuffix("->") || text.hasSuffix(":") || text.hasSuffix("&") || text.hasSuffix("=")
    }

    private mutating func declaration() -> SwiftDecl? {
        var attributes: [String] = []
        var modifiers: [String] = []
        while let token = current {
            if token.text.hasPrefix("@") {
                position += 1
                var attribute = token.text
                if current?.text == "(", !(current?.newlineBefore ?? true) { attribute += group() }
                attributes.append(attribute)
            } else if Self.modifierWords.contains(token.text), position + 1 < tokens.count {
                // `class func` / `class var` are modifiers; `class Name` is a declaration.
                if token.text == "class", let next = tokens[safe: position + 1], !["func", "var", "let", "subscript"].contains(next.text) && !Self.modifierWords.contains(next.text) { break }
                position += 1
                var modifier = token.text
                if current?.text == "(" { modifier += group() }
                modifiers.append(modifier)
            } else {
                break
            }
        }
        guard let keywordToken = current else { return nil }
        let keyword = keywordToken.text
        switch keyword {
        case "class", "struct", "enum", "protocol", "extension", "actor":
            position += 1
            var name = ""
            while let token = current, token.text != "{", token.text != ":", token.text != "<", token.text != "where" {
                name += token.text; position += 1
            }
            let declaration = SwiftDecl(keyword: keyword, name: name, file: file, line: keywordToken.line)
            declaration.attributes = attributes
            declaration.modifiers = modifiers
            if current?.text == "<" { declaration.signature = group() }
            if current?.text == ":" {
                position += 1
                let inherited = signature(stopAt: ["{", "where"])
                declaration.inherits = splitTopLevel(inherited, on: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
            if current?.text == "where" { _ = signature(stopAt: ["{"]) }
            if current?.text == "{" {
                position += 1
                declaration.members = members(until: "}")
                for member in declaration.members { member.parent = declaration }
            }
            return declaration
        case "func", "init", "subscript":
            position += 1
            var name = keyword
            if keyword == "func", let token = current {
                name = token.text; position += 1
                // Operators are several tokens.
                while let next = current, next.text != "(", next.text != "<", !next.newlineBefore,
                      !(next.text.first?.isLetter ?? false) { name += next.text; position += 1 }
            }
            if keyword == "init", current?.text == "?" || current?.text == "!" { modifiers.append("failable"); position += 1 }
            let declaration = SwiftDecl(keyword: keyword, name: name, file: file, line: keywordToken.line)
            declaration.attributes = attributes
            declaration.modifiers = modifiers
            declaration.signature = signature(stopAt: ["{", "}"])
            if current?.text == "{" { _ = group() }
            return declaration
        case "var", "let":
            position += 1
            guard let nameToken = current else { return nil }
            position += 1
            let declaration = SwiftDecl(keyword: keyword, name: nameToken.text, file: file, line: keywordToken.line)
            declaration.attributes = attributes
            declaration.modifiers = modifiers
            if current?.text == ":" {
                position += 1
                declaration.signature = signature(stopAt: ["{", "=", "}"])
            }
            declaration.settable = keyword == "var"
            if current?.text == "=" {
                position += 1
                let value = signature(stopAt: ["}"])
                declaration.rawValue = Self.rawValue(ofInitializer: value)
                declaration.initializer = value
            } else if current?.text == "{" {
                let body = group()
                let words = body.split(whereSeparator: { !$0.isLetter })
                declaration.settable = words.contains("set")
            }
            return declaration
        case "case":
            position += 1
            // `case a = 0, b, c`: one declaration each, returned through the parent's list.
            var cases: [SwiftDecl] = []
            while let token = current {
                let declaration = SwiftDecl(keyword: "case", name: token.text, file: file, line: token.line)
                declaration.attributes = attributes
                position += 1
                if current?.text == "(" { declaration.signature = group() }
                if current?.text == "=" {
                    position += 1
                    var value = ""
                    while let next = current, next.text != ",", !next.newlineBefore, next.text != "}" { value += next.text; position += 1 }
                    declaration.rawValue = value
                }
                cases.append(declaration)
                if current?.text == ",", !(current?.newlineBefore ?? true) { position += 1; continue }
                break
            }
            pendingCases.append(contentsOf: cases.dropFirst())
            return cases.first
        case "typealias", "associatedtype":
            position += 1
            let declaration = SwiftDecl(keyword: keyword, name: current?.text ?? "", file: file, line: keywordToken.line)
            declaration.attributes = attributes
            declaration.modifiers = modifiers
            position += 1
            // A bare `associatedtype Value` ends with its line.
            if !(current?.newlineBefore ?? true) { declaration.signature = signature(stopAt: ["}"]) }
            return declaration
        case "import", "precedencegroup", "operator", "macro":
            skipStatement()
            return nil
        default:
            // Anything else (a stray token of an unsupported construct) is skipped.
            if ["(", "[", "{"].contains(keyword) { _ = group() } else { position += 1 }
            return nil
        }
    }

    private var pendingCases: [SwiftDecl] = []

    /// `Type(rawValue: 2 << 12)` → "2 << 12".
    private static func rawValue(ofInitializer text: String) -> String? {
        guard let range = text.range(of: "rawValue:") else { return nil }
        var value = String(text[range.upperBound...])
        if let close = value.lastIndex(of: ")") { value = String(value[..<close]) }
        return value.trimmingCharacters(in: .whitespaces)
    }

}

extension Array {
    subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}

/// `text` without spaces, the form declarations are compared in.
func compact(_ text: String) -> String {
    text.filter { $0 != " " }
}
