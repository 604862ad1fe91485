// How Swift's Clang importer names and types the SDK's C and Objective-C
// declarations: the rules Imago's declarations rely on (swift_name and API notes
// first, then initializers, factory methods, needless-word omission and prepositions,
// enumerator prefixes, and the type mapping with nullability). Where a rule here is
// narrower than the importer's, a declaration fails to match and the check says so,
// rather than passing something unproven.
import Foundation

struct Importer {
    let headers: SDKHeaders
    let notes: APINotes

    // MARK: Words

    /// Camel-case words: `CGImageSourceStatus` → CG, Image, Source, Status.
    static func words(_ name: String) -> [String] {
        var words: [String] = []
        var current = ""
        let characters = Array(name)
        for (index, character) in characters.enumerated() {
            let next = index + 1 < characters.count ? characters[index + 1] : nil
            if character == "_" { if !current.isEmpty { words.append(current); current = "" }; continue }
            if character.isUppercase, let last = current.last {
                // A new word at lower→upper, and before the last capital of an acronym.
                if last.isLowercase || last.isNumber || (last.isUppercase && (next?.isLowercase ?? false)) {
                    words.append(current); current = ""
                }
            }
            current.append(character)
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// The first word lowercased, an acronym as a whole: `CGImage` → `cgImage`, `URLs` → `urls`.
    static func lowercasedFirstWord(_ name: String) -> String {
        let characters = Array(name)
        var upper = 0
        while upper < characters.count, characters[upper].isUppercase { upper += 1 }
        if upper == 0 { return name }
        // In `CGImage` the I starts the next word; in `URL` or `EOF` all are lowered.
        let lowered = upper > 1 && upper < characters.count && characters[upper].isLowercase ? upper - 1 : upper
        return characters[..<lowered].map { $0.lowercased() }.joined() + String(characters[lowered...])
    }

    static let prepositions: Set<String> = [
        "above", "after", "along", "alongside", "as", "at", "before", "below", "by", "following", "for", "from", "given",
        "in", "including", "inside", "into", "matching", "of", "on", "passing", "preceding", "since", "to", "until",
        "using", "via", "when", "with", "within",
    ]

    // MARK: Objective-C names

    /// The Swift name of an Objective-C method or property of `className`:
    /// `init(cgImage:scale:orientation:)`, `add(_:forKey:)`, `isAnimating`.
    func swiftName(of member: ObjCMember, className: String) -> String {
        let node = member.node
        let isClass = node.declarationPart.hasPrefix("+") || node.flags.contains("class")
        if node.kind == "ObjCPropertyDecl" {
            let key = "Classes/\(member.container)/Properties/\(node.name)" + (isClass ? "/Class" : "")
            if let name = (notes.entry(key) ?? notes.entry(key.replacingOccurrences(of: "Classes/", with: "Protocols/")))?["SwiftName"] {
                return name
            }
            if let name = node.swiftName { return name }
            // A Boolean property with an `is` getter takes the getter's name.
            if let getter = node.children.first(where: { $0.kind == "getter" })?.type, getter.hasPrefix("is") { return getter }
            // A class property of the class's own type drops the words that repeat the
            // type: `+[UIScreen mainScreen]` → `main`, `+[UIColor whiteColor]` → `white`.
            var words = Self.words(node.name)
            let type = node.type
            let typeWords = Self.typeWords(type)
            if isClass, !typeWords.isEmpty, type.hasPrefix(className + " *") || type.hasPrefix("instancetype"),
               words.count > typeWords.count,
               Array(words.suffix(typeWords.count)).map({ $0.lowercased() }) == typeWords.map({ $0.lowercased() }) {
                words.removeLast(typeWords.count)
                return Self.lowercasedFirstWord(words.joined())
            }
            return Self.lowercasedFirstWord(node.name)
        }
        let selector = node.name
        let kind = isClass ? "Class" : "Instance"
        // A name whose arity is not the selector's is ignored, as the importer ignores it
        // (UIKit's notes name `imageNamed:` `init(named:withConfiguration:)`).
        let arity = selector.filter { $0 == ":" }.count
        let fits: (String) -> Bool = { $0.filter { $0 == ":" }.count == arity }
        for section in ["Classes", "Protocols"] {
            if let name = notes.entry("\(section)/\(member.container)/Methods/\(selector)/\(kind)")?["SwiftName"], fits(name) { return name }
        }
        if let name = node.swiftName, fits(name) { return name }
        var pieces = selector.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        if pieces.last == "" { pieces.removeLast() }
        let parameters = node.children.filter { $0.kind == "ParmVarDecl" }
        let parameterTypes = parameters.map(\.type)

        // Initializers: `initWithCGImage:scale:` → init(cgImage:scale:).
        if !isClass, let first = pieces.first, first.hasPrefix("init"), first == "init" || first.dropFirst(4).first?.isUppercase == true {
            var label = String(first.dropFirst(4))
            if label.hasPrefix("With") { label = String(label.dropFirst(4)) }
            if parameters.isEmpty { return "init()" }
            let labels = [label.isEmpty ? "_" : Self.lowercasedFirstWord(label)] + pieces.dropFirst()
            return "init(" + labels.map { "\($0):" }.joined() + ")"
        }
        // Factory methods: `+imageNamed:` of UIImage → init(named:).
        if isClass, let first = pieces.first, let classWord = Self.words(className).last?.lowercased(), first.hasPrefix(classWord),
           first.dropFirst(classWord.count).first?.isUppercase == true,
           node.type.hasPrefix("instancetype") || node.type.hasPrefix(className + " *") {
            var label = String(first.dropFirst(classWord.count))
            if label.hasPrefix("With") { label = String(label.dropFirst(4)) }
            let labels = [Self.lowercasedFirstWord(label)] + pieces.dropFirst()
            return "init(" + labels.map { "\($0):" }.joined() + ")"
        }
        guard let first = pieces.first else { return selector }
        if parameters.isEmpty { return first + "()" }
        // Needless words: the type name's last words at the end of the first piece.
        var words = Self.words(first)
        let typeWords = Self.typeWords(parameterTypes[0])
        // A setter keeps them: `setBackgroundImage:forState:` → setBackgroundImage(_:for:).
        if !typeWords.isEmpty, words.count > typeWords.count, words.first != "set",
           Array(words.suffix(typeWords.count)).map({ $0.lowercased() }) == typeWords.map({ $0.lowercased() }) {
            words.removeLast(typeWords.count)
        }
        // The first argument label: from the last preposition on (with `Equal` of
        // `EqualTo`, which the importer keeps with it).
        var label = "_"
        if let index = words.lastIndex(where: { Self.prepositions.contains($0.lowercased()) }), index > 0 {
            var start = index
            if start > 1, words[start - 1] == "Equal" { start -= 1 }
            label = Self.lowercasedFirstWord(words[start...].joined())
            words.removeSubrange(start...)
        }
        let base = Self.lowercasedFirstWord(words.joined())
        // The other labels lose the type name's words at their end too, when a word
        // stays: `forState:` of a UIControlState → `for:`.
        let others = pieces.dropFirst().enumerated().map { offset, piece -> String in
            let index = offset + 1
            guard index < parameterTypes.count else { return piece }
            var words = Self.words(piece)
            let typeWords = Self.typeWords(parameterTypes[index])
            guard !typeWords.isEmpty, words.count > typeWords.count,
                  Array(words.suffix(typeWords.count)).map({ $0.lowercased() }) == typeWords.map({ $0.lowercased() })
            else { return piece }
            words.removeLast(typeWords.count)
            return Self.lowercasedFirstWord(words.joined())
        }
        return base + "(" + ([label] + others).map { "\($0):" }.joined() + ")"
    }

    /// The words of a parameter type that a method name may repeat: `UIView *` → View;
    /// `NSArray<UIImage *> *` → Images.
    static func typeWords(_ type: String) -> [String] {
        var name = type.replacingOccurrences(of: "_Nonnull", with: "").replacingOccurrences(of: "_Nullable", with: "")
        var plural = false
        if name.hasPrefix("NSArray<") { name = String(name.dropFirst(8)); plural = true }
        name = String(name.prefix { $0.isLetter || $0.isNumber })
        var words = Self.words(name)
        // Drop the framework prefix (UI, NS, CA, CG).
        if let first = words.first, first.count >= 2, first.allSatisfy(\.isUppercase) { words.removeFirst() }
        guard let last = words.last else { return [] }
        return [last + (plural ? "s" : "")]
    }

    // MARK: C names

    /// The Swift name of a C function, global or type: API notes, then swift_name.
    func swiftName(ofC name: String, section: String, node: ClangNode?) -> String? {
        notes.entry("\(section)/\(name)")?["SwiftName"] ?? node?.swiftName
    }

    /// The Swift name of an enumerator: its own name if noted, else the enum's common
    /// word prefix (no longer than what it shares with the enum's name) dropped.
    func swiftName(ofEnumerator constant: String, in enumNode: ClangNode) -> String {
        if let name = notes.entry("Enumerators/\(constant)")?["SwiftName"] {
            return String(name.split(separator: ".").last ?? Substring(name))
        }
        let constants = enumNode.children.filter { $0.kind == "EnumConstantDecl" && $0.iOSAvailability != "unavailable" }.map(\.name)
        var prefix = Self.words(constants.first ?? "")
        for other in constants.dropFirst() {
            let words = Self.words(other)
            var count = 0
            while count < prefix.count, count < words.count, prefix[count] == words[count] { count += 1 }
            prefix = Array(prefix.prefix(count))
        }
        // No longer than the part shared with the enum's name (a plural `Options` shares `Option`).
        var enumWords = Self.words(enumNode.name)
        let kPrefix = prefix.first == "k"
        if kPrefix { enumWords.insert("k", at: 0) }
        var shared = 0
        while shared < prefix.count, shared < enumWords.count,
              prefix[shared] == enumWords[shared] || prefix[shared] + "s" == enumWords[shared] { shared += 1 }
        let words = Self.words(constant)
        var rest = Array(words.dropFirst(min(shared, prefix.count)))
        if rest.isEmpty { rest = [words.last ?? constant] }
        // A name that would start with a digit keeps one word more.
        if rest.first?.first?.isNumber == true, shared > 0 { rest.insert(words[shared - 1], at: 0) }
        return Self.lowercasedFirstWord(rest.joined())
    }

    // MARK: Types

    /// The Swift type the importer makes of a C or Objective-C type, with `?` for a
    /// nullable pointer and `!` for one without nullability.
    func swiftType(_ cType: String, genericParameters: Set<String> = []) -> String {
        var type = cType.trimmingCharacters(in: .whitespaces)
        // Blocks: `void (^ _Nullable)(BOOL)` → ((Bool) -> Void)?
        if let caret = type.range(of: "(^"), let close = type[caret.upperBound...].firstIndex(of: ")") {
            let result = type[..<caret.lowerBound].trimmingCharacters(in: .whitespaces)
            let pointer = type[caret.upperBound..<close]
            var parameters = type[type.index(after: close)...].trimmingCharacters(in: .whitespaces)
            if parameters.hasPrefix("("), parameters.hasSuffix(")") { parameters = String(parameters.dropFirst().dropLast()) }
            let mapped = parameters == "void" || parameters.isEmpty
                ? [] : splitTopLevel(parameters, on: ",").map { swiftType($0, genericParameters: genericParameters) }
            let function = "(" + mapped.joined(separator: ", ") + ") -> " + (result == "void" ? "Void" : swiftType(result, genericParameters: genericParameters))
            if pointer.contains("_Nullable") { return "(" + function + ")?" }
            if pointer.contains("_Nonnull") { return function }
            return "(" + function + ")!"
        }
        var optional = ""
        for (word, mark) in [("_Nullable", "?"), ("_Nonnull", ""), ("_Null_unspecified", "!")] where type.contains(word) {
            optional = mark
            type = type.replacingOccurrences(of: word, with: "")
        }
        for word in ["const ", "__strong ", "__kindof ", "struct ", "enum ", "API_AVAILABLE "] {
            type = type.replacingOccurrences(of: word, with: "")
        }
        type = type.trimmingCharacters(in: .whitespaces)
        let isPointer = type.hasSuffix("*")
        if isPointer, !cType.contains("_Nullable"), !cType.contains("_Nonnull"), optional.isEmpty { optional = "!" }
        if isPointer { type = String(type.dropLast()).trimmingCharacters(in: .whitespaces) }
        let scalars = [
            "BOOL": "Bool", "bool": "Bool", "NSInteger": "Int", "NSUInteger": "Int", "size_t": "Int", "double": "Double",
            "float": "Float", "int32_t": "Int32", "uint32_t": "UInt32", "int": "Int32", "NSTimeInterval": "TimeInterval",
            "void": "Void", "id": "Any", "instancetype": "Self",
        ]
        if type == "instancetype" || type == "id" {
            let mark = cType.contains("_Nullable") ? "?" : cType.contains("_Nonnull") ? "" : "!"
            return scalars[type]! + mark
        }
        if !isPointer, let scalar = scalars[type] { return scalar }
        if isPointer, !type.hasSuffix("*") {
            let base = String(type.prefix { $0 != "<" }).trimmingCharacters(in: .whitespaces)
            if headers.classes[base] != nil || base == "id" {
                // Objective-C objects, with Foundation's bridged to Swift's.
                if base == "NSString" { return "String" + optional }
                if base == "NSArray", let open = type.firstIndex(of: "<") {
                    return "[" + swiftType(balanced(type, from: open), genericParameters: genericParameters).replacingOccurrences(of: "!", with: "") + "]" + optional
                }
                if base == "NSDictionary", let open = type.firstIndex(of: "<") {
                    let arguments = splitTopLevel(balanced(type, from: open), on: ",").map { swiftType($0).replacingOccurrences(of: "!", with: "") }
                    return "[" + arguments.joined(separator: ": ") + "]" + optional
                }
                if let open = type.firstIndex(of: "<") {
                    let arguments = splitTopLevel(balanced(type, from: open), on: ",").map { swiftType($0, genericParameters: genericParameters).replacingOccurrences(of: "!", with: "") }
                    return base + "<" + arguments.joined(separator: ", ") + ">" + optional
                }
                return (base == "id" ? "Any" : base) + optional
            }
            // C pointers.
            if type == "void" { return (cType.contains("const") ? "UnsafeRawPointer" : "UnsafeMutableRawPointer") + optional }
            let pointee = swiftType(type)
            return (cType.contains("const") ? "UnsafePointer<" : "UnsafeMutablePointer<") + pointee + ">" + optional
        }
        if genericParameters.contains(type) { return type + optional }
        // Typedefs: a Swift name of their own, Core Foundation `…Ref`s, typed enums.
        if let name = swiftName(ofC: type, section: "Typedefs", node: headers.typedefs[type])
            ?? swiftName(ofC: type, section: "Tags", node: headers.enums[type]) {
            return name + optional
        }
        if type.hasSuffix("Ref"), let typedef = headers.typedefs[type], typedef.type.hasSuffix("*") {
            let annotated = cType.contains("_Nullable") || cType.contains("_Nonnull") || cType.contains("_Null_unspecified")
            return String(type.dropLast(3)) + (annotated ? optional : "!")
        }
        return type + optional
    }
}
