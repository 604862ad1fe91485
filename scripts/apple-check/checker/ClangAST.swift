// The SDK's C and Objective-C declarations as clang reads them: clang's textual AST
// dump of a file importing the frameworks, parsed into the declarations the checker
// looks up (classes with their categories and protocols, functions, globals, enums,
// typedefs), each with its attributes.
import Foundation

/// A node of clang's AST dump: its kind, the rest of its line, its children.
final class ClangNode {
    let kind: String
    let text: String
    var children: [ClangNode] = []

    init(kind: String, text: String) {
        self.kind = kind
        self.text = text
    }

    /// The declared name: the word before the type for typed declarations, the last
    /// word otherwise.
    var name: String {
        let words = declarationPart.split(separator: " ")
        if let quote = declarationPart.firstIndex(of: "'") {
            return declarationPart[..<quote].split(separator: " ").last.map(String.init) ?? ""
        }
        return words.last.map(String.init) ?? ""
    }

    /// The first quoted type: `'UIImage * _Nullable':'UIImage *'` → `UIImage * _Nullable`,
    /// without the attribute macros clang keeps in its spelling
    /// (`'API_DEPRECATED UIScreen *'` → `UIScreen *`), which the importer ignores.
    var type: String {
        guard let quote = declarationPart.firstIndex(of: "'") else { return "" }
        let rest = declarationPart[declarationPart.index(after: quote)...]
        let spelled = rest.firstIndex(of: "'").map { String(rest[..<$0]) } ?? ""
        let words = spelled.split(separator: " ", omittingEmptySubsequences: false)
        let macros = words.prefix { $0.count > 3 && $0.contains("_") && $0.allSatisfy { $0.isUppercase || $0.isNumber || $0 == "_" } }
        return macros.isEmpty ? spelled : words.dropFirst(macros.count).joined(separator: " ")
    }

    /// The words after the type (`readonly`, `class`, `extern`...).
    var flags: [String] {
        let words = declarationPart.components(separatedBy: "'")
        return (words.last ?? "").split(separator: " ").map(String.init)
    }

    /// The line without the address, `prev` link and source range.
    lazy var declarationPart: String = {
        var rest = Substring(text)
        // "0x... [prev 0x...] <range> location"
        if rest.hasPrefix("0x") { rest = rest.drop(while: { $0 != " " }).dropFirst() }
        if rest.hasPrefix("prev 0x") { rest = rest.dropFirst(5).drop(while: { $0 != " " }).dropFirst() }
        if rest.hasPrefix("parent 0x") { rest = rest.dropFirst(7).drop(while: { $0 != " " }).dropFirst() }
        if rest.hasPrefix("<") {
            var depth = 0
            var index = rest.startIndex
            while index < rest.endIndex {
                if rest[index] == "<" { depth += 1 }
                if rest[index] == ">" { depth -= 1; if depth == 0 { break } }
                index = rest.index(after: index)
            }
            rest = rest[rest.index(after: min(index, rest.index(before: rest.endIndex)))...].drop(while: { $0 == " " })
            // The location: col:N, line:N:M, or a path.
            if rest.hasPrefix("col:") || rest.hasPrefix("line:") || rest.hasPrefix("/") || rest.hasPrefix("<") {
                rest = rest.drop(while: { $0 != " " }).drop(while: { $0 == " " })
            }
        }
        return String(rest)
    }()

    /// The iOS availability attributes: introduced version, or "unavailable".
    var iOSAvailability: String? {
        for child in children where child.kind == "AvailabilityAttr" {
            let words = child.declarationPart.split(separator: " ").map(String.init)
            guard words.first == "ios" else { continue }
            if words.contains("Unavailable") { return "unavailable" }
            return words.count > 1 ? words[1] : nil
        }
        return nil
    }

    /// The strings of `swift_attr` attributes: "@UIActor", "@Sendable".
    var swiftAttributes: [String] {
        children.filter { $0.kind == "SwiftAttrAttr" }.map { $0.declarationPart.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
    }

    /// The name `swift_name` gives, if any.
    var swiftName: String? {
        children.first { $0.kind == "SwiftNameAttr" }.map { $0.declarationPart.trimmingCharacters(in: CharacterSet(charactersIn: "\" ")) }
    }

    var isSwiftPrivate: Bool { children.contains { $0.kind == "SwiftPrivateAttr" } }
}

/// An Objective-C method or property, with the container it is declared in.
struct ObjCMember {
    let node: ClangNode
    /// The class or protocol whose declaration (or category) holds it.
    let container: String
    /// The attributes of that declaration (availability, UI actor...).
    let containerNode: ClangNode
}

/// The declarations of the SDK's headers that the checker looks up.
final class SDKHeaders {
    var classes: [String: [ClangNode]] = [:]
    var protocols: [String: [ClangNode]] = [:]
    /// Categories by the class they extend.
    var categories: [String: [ClangNode]] = [:]
    var functions: [String: ClangNode] = [:]
    var globals: [String: ClangNode] = [:]
    var enums: [String: ClangNode] = [:]
    var typedefs: [String: ClangNode] = [:]
    /// Each enumerator's enum.
    var enumOfConstant: [String: ClangNode] = [:]

    /// Runs clang over `source` (an Objective-C file importing the frameworks) and reads its dump.
    init(clang: String, sdk: String, source: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: clang)
        // __swift__ and __SWIFT_ATTR_SUPPORTS_SENDABLE_DECLS are defined as Swift's
        // importer defines them: headers declare differently for Swift (CoreGraphics'
        // `cg_nullable`, Foundation's NS_SWIFT_SENDABLE).
        process.arguments = [
            "-target", "arm64-apple-ios16.0", "-isysroot", sdk, "-x", "objective-c", "-fblocks", "-fsyntax-only",
            "-D__swift__=60000", "-D__SWIFT_ATTR_SUPPORTS_SENDABLE_DECLS=1", "-Xclang", "-ast-dump", "-fno-color-diagnostics", source,
        ]
        let output = Pipe()
        process.standardOutput = output
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let errorText = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CheckerError("clang could not read the SDK's headers:\n\(errorText)")
        }
        index(Self.parse(data))
    }

    /// The dump's top-level declarations, each with its subtree.
    private static func parse(_ data: Data) -> [ClangNode] {
        var roots: [ClangNode] = []
        var stack: [ClangNode] = []
        data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var lineStart = 0
            let count = bytes.count
            while lineStart < count {
                var lineEnd = lineStart
                while lineEnd < count, bytes[lineEnd] != 10 { lineEnd += 1 }
                // The tree prefix: "| ", "  ", "|-", "`-", two characters a level.
                var index = lineStart
                while index < lineEnd, [32, 124, 96, 45].contains(bytes[index]) { index += 1 }
                let depth = (index - lineStart) / 2
                if depth >= 1, depth <= 3, index < lineEnd {
                    // Only the levels the checker reads: declarations, their members
                    // and attributes, and the parameters and attributes of members.
                    var wordEnd = index
                    while wordEnd < lineEnd, bytes[wordEnd] != 32 { wordEnd += 1 }
                    let kind = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<wordEnd]), as: UTF8.self)
                    let text = wordEnd < lineEnd
                        ? String(decoding: UnsafeRawBufferPointer(rebasing: bytes[(wordEnd + 1)..<lineEnd]), as: UTF8.self) : ""
                    let node = ClangNode(kind: kind, text: text)
                    stack.removeSubrange(min(depth - 1, stack.count)...)
                    if depth == 1 { roots.append(node) } else if stack.count == depth - 1, let parent = stack.last { parent.children.append(node) }
                    if stack.count == depth - 1 { stack.append(node) }
                } else if depth > 3 {
                    // A value of an enumerator (`value: Int -5`) sits deeper.
                    if let line = Optional(String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<lineEnd]), as: UTF8.self)),
                       line.hasPrefix("value: Int "), stack.count >= 2 {
                        stack[1].children.append(ClangNode(kind: "value", text: String(line.dropFirst(11))))
                    }
                }
                lineStart = lineEnd + 1
            }
        }
        return roots
    }

    private func index(_ roots: [ClangNode]) {
        for node in roots {
            switch node.kind {
            case "ObjCInterfaceDecl": classes[node.name, default: []].append(node)
            case "ObjCProtocolDecl": protocols[node.name, default: []].append(node)
            case "ObjCCategoryDecl":
                if let interface = node.children.first(where: { $0.kind == "ObjCInterface" }) {
                    categories[interface.type, default: []].append(node)
                }
            case "FunctionDecl": functions[node.name] = node
            case "VarDecl": globals[node.name] = node
            case "EnumDecl":
                guard node.children.contains(where: { $0.kind == "EnumConstantDecl" }) else { continue }
                if !node.name.isEmpty, !node.name.contains(":") { enums[node.name] = node }
                for constant in node.children where constant.kind == "EnumConstantDecl" { enumOfConstant[constant.name] = node }
            case "TypedefDecl": typedefs[node.name] = node
            default: break
            }
        }
    }

    /// The superclass of an Objective-C class, as the dump writes it (`NSLayoutAnchor<NSLayoutXAxisAnchor *>`).
    func superclass(of name: String) -> String? {
        for node in classes[name] ?? [] {
            if let superNode = node.children.first(where: { $0.kind == "super" }) { return superNode.type }
        }
        return nil
    }

    /// The attributes of a class, from all its declarations.
    func attributes(ofClass name: String) -> [ClangNode] {
        (classes[name] ?? []).flatMap(\.children)
    }

    /// The protocols a class or protocol adopts, with what they inherit.
    func adoptedProtocols(_ declarations: [ClangNode]) -> [String] {
        var result: [String] = []
        var pending = declarations.flatMap(\.children).filter { $0.kind == "ObjCProtocol" }.map(\.type)
        while let name = pending.popLast() {
            guard !result.contains(name) else { continue }
            result.append(name)
            pending += (protocols[name] ?? []).flatMap(\.children).filter { $0.kind == "ObjCProtocol" }.map(\.type)
        }
        return result
    }

    /// Every method and property a class has: its own, its categories', its protocols',
    /// then its superclasses', nearest first.
    func members(ofClass name: String) -> [ObjCMember] {
        var result: [ObjCMember] = []
        var current: String? = name
        while let className = current {
            var declarations = classes[className] ?? []
            declarations += categories[className] ?? []
            for declaration in declarations {
                for child in declaration.children where child.kind == "ObjCMethodDecl" || child.kind == "ObjCPropertyDecl" {
                    result.append(ObjCMember(node: child, container: className, containerNode: declaration))
                }
            }
            for protocolName in adoptedProtocols(declarations) {
                for declaration in protocols[protocolName] ?? [] {
                    for child in declaration.children where child.kind == "ObjCMethodDecl" || child.kind == "ObjCPropertyDecl" {
                        result.append(ObjCMember(node: child, container: protocolName, containerNode: declaration))
                    }
                }
            }
            current = superclass(of: className).map { String($0.prefix { $0 != "<" && $0 != " " }) }
        }
        return result
    }
}

/// What the checker reports for a failure of its own (no SDK, clang failing).
struct CheckerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
