// Proves Imago's hand-written Apple SDK declarations (scripts/apple-check/SDK) against
// a real SDK: every declaration naming an iOS API is found in the iOS 16.5 SDK's
// headers, symbol lists (.tbd), API notes and Swift interfaces, and its Swift name,
// types, nullability, main-actor isolation, Sendable conformance and availability must
// agree with what Swift's importer makes of them. What this SDK cannot show (AppKit,
// newer APIs) must be listed, with its Apple documentation page, in one file.
//
// Usage: check-sdk SDK DECLARATIONS-DIR UNCONFIRMED-LIST MINIMUM-IOS-VERSION CLANG
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 6 else {
    print("usage: check-sdk SDK DECLARATIONS-DIR UNCONFIRMED-LIST MINIMUM-IOS-VERSION CLANG")
    exit(2)
}
let (sdk, declarationsDirectory, unconfirmedFile, minimumIOS, clang) = (arguments[1], arguments[2], arguments[3], arguments[4], arguments[5])
let frameworks = "\(sdk)/System/Library/Frameworks"

/// The iOS view of the declarations' `#if` conditions.
@MainActor func iOSCondition(_ condition: String) -> Bool {
    let iOSModules: Set<String> = ["CoreGraphics", "ImageIO", "QuartzCore", "UIKit", "SwiftUI", "Foundation"]
    var text = condition.trimmingCharacters(in: .whitespaces)
    var negate = false
    if text.hasPrefix("!") { negate = true; text = String(text.dropFirst()) }
    var value = true
    if text.hasPrefix("os(") { value = text.dropFirst(3).dropLast() == "iOS" }
    if text.hasPrefix("canImport(") { value = iOSModules.contains(String(text.dropFirst(10).dropLast())) }
    if text.hasPrefix("targetEnvironment(") { value = false }
    return negate ? !value : value
}

/// `17.0` < `17.2`: versions compared part by part.
@MainActor func versionLess(_ a: String, _ b: String) -> Bool {
    let left = a.split(separator: ".").compactMap { Int($0) }, right = b.split(separator: ".").compactMap { Int($0) }
    for index in 0..<max(left.count, right.count) {
        let l = index < left.count ? left[index] : 0, r = index < right.count ? right[index] : 0
        if l != r { return l < r }
    }
    return false
}

@MainActor func readDeclarations(_ path: String, condition: (String) -> Bool) -> [SwiftDecl] {
    let source = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    var reader = SwiftReader(source: source, file: path, condition: condition)
    let declarations = reader.declarations()
    func link(_ declaration: SwiftDecl) { for member in declaration.members { member.parent = declaration; link(member) } }
    declarations.forEach(link)
    return declarations
}

// MARK: The list of what the SDK here cannot confirm

/// `Module.Path  URL`: an entry covers the declaration and its members.
var unconfirmed: [(key: String, url: String, used: Bool)] = []
for line in ((try? String(contentsOfFile: unconfirmedFile, encoding: .utf8)) ?? "").components(separatedBy: "\n") {
    guard !line.trimmingCharacters(in: .whitespaces).hasPrefix("#") else { continue }
    let text = line.split(separator: "#", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
    let words = text.split(separator: " ", omittingEmptySubsequences: true)
    guard words.count >= 2 else { continue }
    unconfirmed.append((String(words[0]), String(words[1]), false))
}

// MARK: The SDK

let started = Date()
let importSource = FileManager.default.temporaryDirectory.appendingPathComponent("imago-check-sdk-\(getpid()).m")
try "#import <UIKit/UIKit.h>\n#import <ImageIO/ImageIO.h>\n#import <QuartzCore/QuartzCore.h>\n".write(to: importSource, atomically: true, encoding: .utf8)
defer { try? FileManager.default.removeItem(at: importSource) }
let headers: SDKHeaders
do { headers = try SDKHeaders(clang: clang, sdk: sdk, source: importSource.path) } catch {
    print("check-sdk: \(error)")
    exit(1)
}
let noteFiles = ((try? FileManager.default.contentsOfDirectory(atPath: frameworks)) ?? []).compactMap { framework -> String? in
    let name = framework.replacingOccurrences(of: ".framework", with: "")
    let path = "\(frameworks)/\(framework)/Headers/\(name).apinotes"
    return FileManager.default.fileExists(atPath: path) ? path : nil
}
let importer = Importer(headers: headers, notes: APINotes(files: noteFiles))

/// Every exported symbol and Objective-C class of the frameworks' .tbd files.
var exportedSymbols: Set<String> = []
var exportedClasses: Set<String> = []
for framework in ["CoreGraphics", "ImageIO", "QuartzCore", "UIKit", "CoreFoundation", "Foundation"] {
    guard let text = try? String(contentsOfFile: "\(frameworks)/\(framework).framework/\(framework).tbd", encoding: .utf8) else { continue }
    var list = ""
    for word in text.split(whereSeparator: { " \n,[]".contains($0) }) {
        if word.hasSuffix(":") { list = String(word); continue }
        let name = word.trimmingCharacters(in: CharacterSet(charactersIn: "'"))
        if list == "symbols:" || list == "weak-symbols:" { exportedSymbols.insert(name) }
        if list == "objc-classes:" { exportedClasses.insert(name) }
    }
}

/// The Swift overlays' declarations, for what they add (Sendable conformances, members).
var overlay: [String: [SwiftDecl]] = [:]
for module in ["CoreGraphics", "UIKit", "QuartzCore"] {
    let path = "\(sdk)/usr/lib/swift/\(module).swiftmodule/arm64-apple-ios.swiftinterface"
    overlay[module] = readDeclarations(path) { $0.contains("compiler(") || $0.contains("$") ? true : iOSCondition($0) }
}
let swiftUIInterface = readDeclarations(
    "\(frameworks)/SwiftUI.framework/Modules/SwiftUI.swiftmodule/arm64-apple-ios.swiftinterface"
) { $0.contains("compiler(") || $0.contains("$") ? true : iOSCondition($0) }

// MARK: Checking

var failures: [String] = []
var confirmed = 0
var listed = 0

@MainActor func fail(_ declaration: SwiftDecl, _ message: String) {
    failures.append("\(declaration.location): \(declaration.path): \(message)")
}

/// A type's name with module qualifiers and spaces dropped, for comparison.
@MainActor func normalized(_ type: String, in declaration: SwiftDecl? = nil) -> String {
    var text = compact(type)
    for module in ["Self.", "Swift.", "SwiftUI.", "SwiftUICore.", "CoreFoundation.", "CoreGraphics.", "Foundation.", "UIKit.", "QuartzCore.", "_Concurrency.", "ImageIO."] {
        text = text.replacingOccurrences(of: module, with: "")
    }
    for attribute in ["@escaping", "@Sendable", "@MainActor", "@preconcurrency", "__owned", "@ViewBuilder", "@_implicitSelfCapture", "@_inheritActorContext"] {
        text = text.replacingOccurrences(of: attribute, with: "")
    }
    // A nested type written from inside its parent.
    var scope = declaration?.parent
    while let outer = scope {
        for member in outer.members where member.isType { text = text.replacingOccurrences(of: "(?<![A-Za-z0-9_.])\(member.name)(?![A-Za-z0-9_])", with: "\(outer.name).\(member.name)", options: .regularExpression) }
        scope = outer.parent
    }
    text = text.replacingOccurrences(of: "\(declaration?.parent?.name ?? "#").\(declaration?.parent?.name ?? "#").", with: "\(declaration?.parent?.name ?? "#").")
    if text.hasPrefix("Optional<"), text.hasSuffix(">") { text = String(text.dropFirst(9).dropLast()) + "?" }
    return text
}

/// Does the declared Swift type agree with the importer's, nullability included?
/// A pointer without nullability (`T!`) may be declared either way.
@MainActor func typesAgree(declared: String, imported: String, in declaration: SwiftDecl) -> Bool {
    let declared = normalized(declared, in: declaration), imported = normalized(imported, in: declaration)
    if declared == imported { return true }
    if imported.hasSuffix("!") {
        let base = String(imported.dropLast())
        return declared == base || declared == base + "?" || declared == "(" + base + ")?"
            || base.hasPrefix("(") && base.hasSuffix(")") && (declared == String(base.dropFirst().dropLast()) || declared == base + "?")
    }
    return false
}

/// The iOS version a declaration states, or its enclosing declarations'.
@MainActor func statedIOS(_ declaration: SwiftDecl) -> String? {
    var current: SwiftDecl? = declaration
    while let node = current {
        if let version = node.availability["iOS"] { return version }
        current = node.parent
    }
    return nil
}

/// Availability: stated as the SDK states it where the SDK's is later than the
/// package's minimum, never earlier than the SDK's, never on what iOS lacks.
@MainActor func checkAvailability(_ declaration: SwiftDecl, sdk: String?) {
    if sdk == "unavailable" { return fail(declaration, "unavailable on iOS in the SDK") }
    let stated = statedIOS(declaration)
    // An inherited version earlier than the SDK's matters only above the minimum.
    let relevant = declaration.availability["iOS"] != nil || sdk.map { versionLess(minimumIOS, $0) } ?? false
    if let sdk, let stated, relevant, versionLess(stated, sdk) {
        fail(declaration, "declared available from iOS \(stated), but the SDK says iOS \(sdk)")
    } else if let sdk, versionLess(minimumIOS, sdk), stated == nil {
        fail(declaration, "the SDK makes it available from iOS \(sdk), later than the package's minimum iOS \(minimumIOS): declare @available(iOS \(sdk), ...)")
    }
}

@MainActor func iOSAvailability(_ member: ObjCMember, className: String) -> String? {
    member.node.iOSAvailability ?? member.containerNode.iOSAvailability
        ?? headers.attributes(ofClass: className).first(where: { $0.kind == "AvailabilityAttr" }).flatMap { _ in
            (headers.classes[className] ?? []).lazy.compactMap(\.iOSAvailability).first
        }
}

/// Stated Sendable: in the inheritance list or an available extension in the file.
@MainActor func declaresSendable(_ declaration: SwiftDecl, among all: [SwiftDecl]) -> Bool {
    let sendable: (String) -> Bool = { compact($0).hasSuffix("Sendable") }
    if declaration.inherits.contains(where: sendable) { return true }
    return all.contains { $0.keyword == "extension" && $0.name == declaration.name && $0.inherits.contains(where: sendable) && $0.availability["*"] == nil }
}

@MainActor func isUIActorClass(_ name: String) -> Bool {
    var current: String? = name
    while let className = current {
        let attributes = headers.attributes(ofClass: className).filter { $0.kind == "SwiftAttrAttr" }.map { $0.declarationPart }
        if attributes.contains(where: { $0.contains("@UIActor") || $0.contains("@MainActor") }) { return true }
        current = headers.superclass(of: className).map { String($0.prefix { $0 != "<" && $0 != " " }) }
    }
    return false
}

@MainActor func isSendableClass(_ name: String) -> Bool {
    var current: String? = name
    while let className = current {
        let attributes = headers.attributes(ofClass: className).filter { $0.kind == "SwiftAttrAttr" }.map { $0.declarationPart }
        if attributes.contains(where: { $0.contains("@Sendable") }) { return true }
        // `@_nonSendable(_assumed)` is the audited default, which a Sendable superclass overrides.
        if attributes.contains(where: { $0.contains("@_nonSendable") && !$0.contains("_assumed") }) { return false }
        current = headers.superclass(of: className).map { String($0.prefix { $0 != "<" && $0 != " " }) }
    }
    return false
}

@MainActor func overlaySendable(_ name: String) -> Bool {
    overlay.values.joined().contains { $0.keyword == "extension" && normalized($0.name) == name && $0.inherits.contains { compact($0).hasSuffix("Sendable") } }
}

/// Stated main-actor isolation of a class: its own or inherited from a declared superclass.
@MainActor func declaresMainActor(_ declaration: SwiftDecl, among all: [SwiftDecl]) -> Bool {
    if declaration.hasMainActor { return true }
    guard let superName = declaration.inherits.first.map({ String($0.prefix { $0 != "<" }) }),
          let superDeclaration = all.first(where: { $0.keyword == "class" && $0.name == superName }) else { return false }
    return declaresMainActor(superDeclaration, among: all)
}

/// Evaluates a raw value as written: `-5`, `0x1F`, `2 << 12`.
@MainActor func evaluate(_ text: String) -> Int? {
    let text = compact(text)
    if let shift = text.range(of: "<<") { return evaluate(String(text[..<shift.lowerBound])).flatMap { a in evaluate(String(text[shift.upperBound...])).map { a << $0 } } }
    if text.hasPrefix("0x") { return Int(text.dropFirst(2), radix: 16) }
    if text.hasPrefix("-0x") { return Int(text.dropFirst(3), radix: 16).map { -$0 } }
    return Int(text)
}

/// The value of an enumerator from the dump: its `value:` or the previous one's plus one.
@MainActor func enumeratorValues(_ node: ClangNode) -> [String: Int] {
    var values: [String: Int] = [:]
    var next = 0
    for constant in node.children where constant.kind == "EnumConstantDecl" {
        let value = constant.children.first(where: { $0.kind == "value" }).flatMap { Int($0.text.trimmingCharacters(in: .whitespaces)) } ?? next
        values[constant.name] = value
        next = value + 1
    }
    return values
}

/// The raw type the importer gives an enum of `cType`.
@MainActor func rawType(_ cType: String, options: Bool) -> String {
    let table = ["NSInteger": "Int", "NSUInteger": options ? "UInt" : "Int", "uint32_t": "UInt32", "int32_t": "Int32", "int": "Int32", "unsigned int": "UInt32", "uint64_t": "UInt64"]
    return table[cType] ?? cType
}

/// Checks an imported C enum or option set and its cases against `node`.
@MainActor func checkEnum(_ declaration: SwiftDecl, _ node: ClangNode) {
    let options = node.children.contains { $0.kind == "FlagEnumAttr" } || declaration.keyword == "struct"
    let values = enumeratorValues(node)
    let names = Dictionary(values.keys.map { (importer.swiftName(ofEnumerator: $0, in: node), $0) }, uniquingKeysWith: { a, _ in a })
    let cType = node.type
    if declaration.keyword == "enum" {
        if let raw = declaration.inherits.first, compact(raw) != rawType(cType, options: false) {
            fail(declaration, "raw type \(raw), but the SDK's enum is \(cType) (\(rawType(cType, options: false)))")
        }
    } else if declaration.keyword == "struct", options {
        if let rawValue = declaration.members.first(where: { $0.name == "rawValue" }), compact(rawValue.signature) != rawType(cType, options: true) {
            fail(declaration, "raw value \(rawValue.signature), but the SDK's options are \(cType) (\(rawType(cType, options: true)))")
        }
    }
    var next = 0
    for member in declaration.members {
        if member.keyword == "case" || member.keyword == "let" && member.modifiers.contains("static") {
            let value = member.rawValue.flatMap(evaluate) ?? next
            next = value + 1
            guard let constant = names[member.name] else {
                fail(member, "no enumerator of \(node.name) imports as `\(member.name)` (it has \(names.keys.sorted().joined(separator: ", ")))")
                continue
            }
            if values[constant] != value, member.keyword == "case" || member.rawValue != nil {
                fail(member, "raw value \(value), but \(constant) is \(values[constant] ?? 0)")
            }
            let constantNode = node.children.first { $0.name == constant }
            checkAvailability(member, sdk: constantNode?.iOSAvailability ?? node.iOSAvailability)
            confirmed += 1
        } else if ["rawValue", "init(rawValue:)"].contains(member.fullName) {
            confirmed += 1
        } else if !isListed(member) {
            fail(member, "not a member the importer gives \(node.name)")
        }
    }
}

/// Is the declaration listed: by its path, or by `Type.*` for a type and its members?
@MainActor func isListed(_ declaration: SwiftDecl, module: String = currentModule) -> Bool {
    let path = module + "." + declaration.path
    var scope: SwiftDecl? = declaration
    // An extension is not the type it extends: only `Type.*` covers it.
    var keys = declaration.keyword == "extension" ? [] : [path]
    while let current = scope { keys.append(module + "." + current.path + ".*"); scope = current.parent }
    guard let index = unconfirmed.firstIndex(where: { keys.contains($0.key) }) else { return false }
    unconfirmed[index].used = true
    return true
}

var currentModule = ""

/// The C declaration the API notes give a Swift name: `CGImage.init(width:…)` →
/// CGImageCreate, `getter:CGImage.width(self:)` → CGImageGetWidth.
@MainActor func cDeclaration(forSwift path: String, property: Bool) -> (name: String, node: ClangNode, isGetter: Bool)? {
    for (key, fields) in importer.notes.entries {
        guard let swiftName = fields["SwiftName"], key.hasPrefix("Functions/") || key.hasPrefix("Globals/") else { continue }
        let cName = String(key.split(separator: "/")[1])
        var name = swiftName
        var getter = false
        if name.hasPrefix("getter:") { name = String(name.dropFirst(7)); getter = true }
        if name.hasPrefix("setter:") { continue }
        name = name.replacingOccurrences(of: "(self:)", with: "").replacingOccurrences(of: "self:", with: "")
        if property, name == path, let node = headers.functions[cName] ?? headers.globals[cName] { return (cName, node, getter) }
        if !property, name == path, let node = headers.functions[cName] { return (cName, node, false) }
    }
    return nil
}

/// Checks a C function as `declaration` declares it (a free function or a member the
/// API notes make of it), `skipFirst` dropping the `self` parameter.
@MainActor func checkFunction(_ declaration: SwiftDecl, _ cName: String, _ node: ClangNode, skipSelf: Bool) {
    if !exportedSymbols.contains("_" + cName) { fail(declaration, "\(cName) is not exported by the SDK's .tbd") }
    var parameters = node.children.filter { $0.kind == "ParmVarDecl" }
    if skipSelf, !parameters.isEmpty, let selfIndex = selfPosition(declaration, cName) { parameters.remove(at: selfIndex) }
    let declared = declaration.parameters
    if declared.count != parameters.count {
        fail(declaration, "\(declared.count) parameters, but \(cName) has \(parameters.count)")
    } else {
        for (swiftParameter, cParameter) in zip(declared, parameters) {
            let imported = importer.swiftType(cParameter.type)
            if !typesAgree(declared: swiftParameter.type, imported: imported, in: declaration) {
                fail(declaration, "parameter \(swiftParameter.name): \(swiftParameter.type), but the SDK's \(cParameter.name) imports as \(imported)")
            }
        }
    }
    let resultType = String(node.type.prefix { $0 != "(" }).trimmingCharacters(in: .whitespaces)
    let imported = importer.swiftType(resultType)
    if declaration.keyword == "init" {
        let failable = declaration.modifiers.contains("failable")
        if failable != (imported.hasSuffix("?") || imported.hasSuffix("!")) {
            fail(declaration, failable ? "failable, but \(cName) returns \(imported)" : "not failable, but \(cName) returns \(imported)")
        }
    } else if declaration.keyword == "func" {
        let declaredResult = declaration.result.isEmpty ? "Void" : declaration.result
        if !typesAgree(declared: declaredResult, imported: imported, in: declaration) {
            fail(declaration, "returns \(declaredResult), but \(cName) imports as returning \(imported)")
        }
    } else if !typesAgree(declared: declaration.propertyType, imported: imported, in: declaration) {
        fail(declaration, "type \(declaration.propertyType), but \(cName) imports as \(imported)")
    }
    checkAvailability(declaration, sdk: node.iOSAvailability)
}

@MainActor func selfPosition(_ declaration: SwiftDecl, _ cName: String) -> Int? {
    guard let name = importer.notes.entry("Functions/\(cName)")?["SwiftName"], let open = name.firstIndex(of: "(") else { return nil }
    return balanced(name, from: open).split(separator: ":").firstIndex(of: "self")
}

/// Checks a member of an Objective-C class.
@MainActor func checkObjCMember(_ declaration: SwiftDecl, className: String) {
    let isClassMember = declaration.modifiers.contains("class") || declaration.modifiers.contains("static")
    let wanted = declaration.keyword == "var" || declaration.keyword == "let" ? declaration.name : declaration.fullName
    let candidates = headers.members(ofClass: className).filter { member in
        let memberIsClass = member.node.declarationPart.hasPrefix("+") || member.node.flags.contains("class")
        let isProperty = member.node.kind == "ObjCPropertyDecl"
        // A class factory method imports as an initializer.
        return (memberIsClass == isClassMember || declaration.keyword == "init" && memberIsClass) && isProperty == (declaration.keyword == "var" || declaration.keyword == "let")
            && importer.swiftName(of: member, className: className) == wanted
    }
    guard let member = candidates.first else {
        return fail(declaration, "no Objective-C member of \(className) (or its categories, protocols, superclasses) imports as `\(wanted)`")
    }
    let node = member.node
    if node.kind == "ObjCPropertyDecl" {
        let imported = importer.swiftType(node.type)
        if !typesAgree(declared: declaration.propertyType, imported: imported, in: declaration) {
            fail(declaration, "type \(declaration.propertyType), but the SDK's \(node.name) imports as \(imported)")
        }
        if declaration.settable, node.flags.contains("readonly") { fail(declaration, "settable, but the SDK's \(node.name) is readonly") }
    } else {
        let parameters = node.children.filter { $0.kind == "ParmVarDecl" }
        for (swiftParameter, cParameter) in zip(declaration.parameters, parameters) {
            let imported = importer.swiftType(cParameter.type, genericParameters: ["AnchorType"])
            if !typesAgree(declared: swiftParameter.type, imported: imported, in: declaration) {
                fail(declaration, "parameter \(swiftParameter.name): \(swiftParameter.type), but the SDK's \(cParameter.name) imports as \(imported)")
            }
            // A main-actor closure only where the SDK marks the block so.
            if swiftParameter.type.contains("@MainActor"), !cParameter.type.contains("UIActor"), !cParameter.type.contains("MainActor") {
                fail(declaration, "parameter \(swiftParameter.name) is a @MainActor closure, but the SDK's block is not UI-actor")
            }
            if let value = swiftParameter.defaultValue {
                let nullable = imported.hasSuffix("?") || imported.hasSuffix("!")
                let options = headers.enums[cParameter.type]?.children.contains { $0.kind == "FlagEnumAttr" } ?? false
                if !(value == "nil" && nullable) && !(compact(value) == "[]" && options) {
                    fail(declaration, "default \(value) for \(swiftParameter.name), which the importer does not give")
                }
            }
        }
        let imported = importer.swiftType(node.type)
        if declaration.keyword == "init" {
            let failable = declaration.modifiers.contains("failable")
            let nullable = imported.hasSuffix("?")
            if failable != nullable { fail(declaration, failable ? "failable, but the SDK's initializer returns nonnull" : "not failable, but the SDK's initializer may return nil") }
        } else {
            let declaredResult = declaration.result.isEmpty ? "Void" : declaration.result
            if !typesAgree(declared: declaredResult, imported: imported, in: declaration) {
                fail(declaration, "returns \(declaredResult), but the SDK's method imports as returning \(imported)")
            }
        }
    }
    if declaration.hasMainActor, !isUIActorClass(className),
       !node.swiftAttributes.contains(where: { $0.contains("UIActor") || $0.contains("MainActor") }) {
        fail(declaration, "@MainActor, but the SDK does not mark it UI-actor")
    }
    checkAvailability(declaration, sdk: iOSAvailability(member, className: className))
    confirmed += 1
}

/// Checks a type of the C frameworks and its members.
@MainActor func checkType(_ declaration: SwiftDecl, among all: [SwiftDecl]) {
    let name = declaration.path
    if declaration.keyword == "extension" {
        // Conformances the declarations add are checked with the type.
        return
    }
    if headers.classes[name]?.contains(where: { !$0.children.isEmpty }) == true {
        // An Objective-C class.
        // The subset's UIKit.tbd lists UIKit's own classes, not UIKitCore's (NSLayoutConstraint):
        // a class is confirmed by its exported @interface in the headers, the .tbd where it lists it.
        if !exportedClasses.contains(name), !headers.attributes(ofClass: name).contains(where: { $0.kind == "VisibilityAttr" }) {
            fail(declaration, "no exported Objective-C class \(name) in the SDK")
        }
        if declaration.keyword != "class" { fail(declaration, "an Objective-C class, declared as a \(declaration.keyword)") }
        let superclass = headers.superclass(of: name).map { importer.swiftType($0 + " *").replacingOccurrences(of: "!", with: "") }
        let declaredSuperBase = declaration.inherits.first.map { superclass?.contains("<") == true ? $0 : String($0.prefix { $0 != "<" }) }
        if let declaredSuper = declaration.inherits.first, normalized(declaredSuperBase ?? "") != normalized(superclass ?? "") {
            fail(declaration, "subclass of \(declaredSuper), but the SDK's superclass is \(superclass ?? "none")")
        }
        if declaresMainActor(declaration, among: all) != isUIActorClass(name) {
            fail(declaration, isUIActorClass(name) ? "not @MainActor, but the SDK marks the class UI-actor" : "@MainActor, but the SDK does not mark the class UI-actor")
        }
        if declaresSendable(declaration, among: all) != isSendableClass(name) {
            fail(declaration, isSendableClass(name) ? "not Sendable, but the SDK marks the class Sendable" : "Sendable, but the SDK does not mark the class Sendable")
        }
        checkAvailability(declaration, sdk: (headers.classes[name] ?? []).lazy.compactMap(\.iOSAvailability).first)
        confirmed += 1
        for member in declaration.members where member.isPublicAPI && !isListed(member) {
            if member.isType { checkType(member, among: all) } else if member.keyword == "typealias" { confirmed += 1 } else { checkObjCMember(member, className: name) }
        }
        return
    }
    // An enum or option set, by its own name or the Swift name its typedef is given.
    let enumNode = headers.enums[name] ?? headers.enums.first(where: { cName, node in
        importer.swiftName(ofC: cName, section: "Typedefs", node: headers.typedefs[cName]) == name
            || importer.swiftName(ofC: cName, section: "Tags", node: node) == name
    })?.value
    if let enumNode, declaration.keyword == "enum" || declaration.keyword == "struct" {
        if !declaresSendable(declaration, among: all) { fail(declaration, "imported enums and option sets are Sendable") }
        checkAvailability(declaration, sdk: enumNode.iOSAvailability ?? headers.typedefs[enumNode.name]?.iOSAvailability)
        confirmed += 1
        checkEnum(declaration, enumNode)
        return
    }
    // A Core Foundation type: `CGImage` from `CGImageRef`.
    if let typedef = headers.typedefs[name + "Ref"], typedef.type.contains("*") {
        if declaration.keyword != "class" { fail(declaration, "a Core Foundation type, declared as a \(declaration.keyword)") }
        if declaresSendable(declaration, among: all) != overlaySendable(name) {
            fail(declaration, overlaySendable(name) ? "not Sendable, but the SDK's overlay makes it Sendable" : "Sendable, but the SDK does not make it Sendable")
        }
        confirmed += 1
        for member in declaration.members where member.isPublicAPI && !isListed(member) {
            checkCFMember(member, typeName: name)
        }
        return
    }
    // A typed string constant (NS_TYPED_ENUM): `CATransitionType` and its constants.
    if let typedef = headers.typedefs[name], typedef.children.contains(where: { $0.kind == "SwiftNewTypeAttr" }) {
        if !declaresSendable(declaration, among: all) { fail(declaration, "imported typed constants are Sendable") }
        confirmed += 1
        for member in declaration.members where !isListed(member) {
            if member.name == "rawValue" || member.fullName == "init(rawValue:)" { confirmed += 1; continue }
            let typeWords = Importer.words(name).dropLast()
            let constant = headers.globals.first { cName, node in
                node.type.contains(name) && Importer.lowercasedFirstWord(Importer.words(cName).drop { $0 == "k" }.dropFirst(typeWords.count).joined()) == member.name
            }
            guard let (cName, node) = constant else { fail(member, "no constant of type \(name) imports as `\(member.name)`"); continue }
            if !exportedSymbols.contains("_" + cName) { fail(member, "\(cName) is not exported by the SDK's .tbd") }
            checkAvailability(member, sdk: node.iOSAvailability)
            confirmed += 1
        }
        return
    }
    fail(declaration, "no Objective-C class, enum, option set, Core Foundation type or typed constant \(name) in the SDK")
}

/// A member of a Core Foundation type: a function or global the API notes import as
/// one, or a member of the Swift overlay.
@MainActor func checkCFMember(_ declaration: SwiftDecl, typeName: String) {
    let property = declaration.keyword == "var" || declaration.keyword == "let"
    let path = property ? "\(typeName).\(declaration.name)" : "\(typeName).\(declaration.fullName)"
    if let (cName, node, _) = cDeclaration(forSwift: path, property: property) {
        if node.kind == "VarDecl" {
            if !exportedSymbols.contains("_" + cName) { fail(declaration, "\(cName) is not exported by the SDK's .tbd") }
            let imported = importer.swiftType(node.type)
            if !typesAgree(declared: declaration.propertyType, imported: imported, in: declaration) {
                fail(declaration, "type \(declaration.propertyType), but \(cName) imports as \(imported)")
            }
            checkAvailability(declaration, sdk: node.iOSAvailability)
        } else {
            checkFunction(declaration, cName, node, skipSelf: true)
            if property, declaration.settable {
                let setter = importer.notes.entries.first { $0.value["SwiftName"] == "setter:\(typeName).\(declaration.name)(self:_:)" }
                if setter == nil { fail(declaration, "settable, but the API notes name no setter") }
            }
        }
        confirmed += 1
        return
    }
    // The overlay's own members.
    for module in overlay.values {
        for extensionDeclaration in module where extensionDeclaration.keyword == "extension" && normalized(extensionDeclaration.name) == typeName {
            if let member = extensionDeclaration.members.first(where: { $0.fullName == declaration.fullName && $0.modifiers.contains("public") }) {
                if normalized(member.signature) != normalized(declaration.signature) {
                    fail(declaration, "signature \(declaration.signature), but the overlay declares \(member.signature)")
                }
                confirmed += 1
                return
            }
        }
    }
    fail(declaration, "no function or global the API notes import as \(path), nor an overlay member")
}

/// Free functions and constants.
@MainActor func checkGlobal(_ declaration: SwiftDecl) {
    if declaration.keyword == "typealias" {
        // Core Foundation types and scalars: CFData for CFDataRef, CFTimeInterval.
        let name = declaration.name
        if headers.typedefs[name + "Ref"] != nil || headers.typedefs[name] != nil { confirmed += 1; return }
        return fail(declaration, "no Core Foundation type \(name)Ref or typedef \(name) in the SDK")
    }
    let cName = declaration.name
    if declaration.keyword == "func" {
        guard let node = headers.functions[cName] else { return fail(declaration, "no C function \(cName) in the SDK's headers") }
        if let swiftName = importer.swiftName(ofC: cName, section: "Functions", node: node), swiftName != declaration.fullName {
            fail(declaration, "imports as \(swiftName)")
        }
        if declaration.parameters.contains(where: { $0.label != "_" }) { fail(declaration, "C functions import with unlabelled parameters") }
        checkFunction(declaration, cName, node, skipSelf: false)
        confirmed += 1
    } else if declaration.keyword == "let" || declaration.keyword == "var" {
        guard let node = headers.globals[cName] else { return fail(declaration, "no C global \(cName) in the SDK's headers") }
        if !exportedSymbols.contains("_" + cName) { fail(declaration, "\(cName) is not exported by the SDK's .tbd") }
        if let swiftName = importer.swiftName(ofC: cName, section: "Globals", node: node), swiftName != cName {
            fail(declaration, "imports as \(swiftName)")
        }
        let imported = importer.swiftType(node.type)
        if !typesAgree(declared: declaration.propertyType, imported: imported, in: declaration) {
            fail(declaration, "type \(declaration.propertyType), but \(cName) imports as \(imported)")
        }
        checkAvailability(declaration, sdk: node.iOSAvailability)
        confirmed += 1
    } else {
        fail(declaration, "not a kind of declaration the checker knows")
    }
}

// MARK: SwiftUI

/// SwiftUI's declarations by path (`Image.init(uiImage:)`, `View.frame(width:height:alignment:)`).
var swiftUIByPath: [String: [SwiftDecl]] = [:]
@MainActor func indexSwiftUI(_ declarations: [SwiftDecl], prefix: String, inherited: [String]) {
    for declaration in declarations {
        let name = normalized(declaration.name)
        let attributes = inherited + declaration.attributes
        declaration.attributes = attributes
        if declaration.isType {
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            swiftUIByPath[path, default: []].append(declaration)
            indexSwiftUI(declaration.members, prefix: path, inherited: declaration.attributes.filter { $0.hasPrefix("@available") })
        } else {
            let path = prefix.isEmpty ? declaration.fullName : "\(prefix).\(declaration.fullName)"
            swiftUIByPath[path, default: []].append(declaration)
        }
    }
}
indexSwiftUI(swiftUIInterface, prefix: "", inherited: [])

/// The iOS version of a SwiftUI declaration's availability, own or its extension's.
@MainActor func swiftUIIOS(_ declarations: [SwiftDecl]) -> String? {
    let main = declarations.filter { $0.keyword != "extension" }
    return (main.isEmpty ? declarations : main).compactMap { $0.availability["iOS"] }.filter { $0 != "unavailable" }.min(by: versionLess)
}

@MainActor func checkSwiftUI(_ declaration: SwiftDecl, among all: [SwiftDecl]) {
    guard !isListed(declaration) else { listed += 1; return }
    let path = declaration.keyword == "extension" ? normalized(declaration.name) : declaration.path
    if declaration.keyword == "extension" {
        // Conformances: each must be written somewhere in the interface.
        for conformance in declaration.inherits {
            let found = (swiftUIByPath[path] ?? []).contains { $0.inherits.contains { normalized($0) == normalized(conformance) } }
            if !found { fail(declaration, "SwiftUI declares no conformance of \(path) to \(conformance)") }
        }
        for member in declaration.members { checkSwiftUIMember(member, typePath: path, among: all) }
        confirmed += 1
        return
    }
    guard let matches = swiftUIByPath[path], matches.contains(where: { $0.isType }) else {
        return fail(declaration, "SwiftUI.swiftinterface declares no type \(path)")
    }
    let interfaceMainActor = matches.contains { $0.hasMainActor }
    if declaration.hasMainActor != interfaceMainActor {
        fail(declaration, interfaceMainActor ? "SwiftUI declares it @MainActor" : "@MainActor, but SwiftUI does not declare it so")
    }
    if declaresSendable(declaration, among: all) {
        let sendable = matches.contains { $0.inherits.contains { compact($0).hasSuffix("Sendable") } }
        if !sendable { fail(declaration, "Sendable, but SwiftUI declares no Sendable conformance") }
    }
    for conformance in declaration.inherits where !compact(conformance).hasSuffix("Sendable") {
        let target = normalized(conformance)
        let found = matches.contains { $0.inherits.contains { normalized($0) == target } }
            || (declaration.keyword == "protocol" && false)
        if !found, declaration.keyword != "protocol" || !matches.contains(where: { $0.inherits.contains { normalized($0).contains(target) } }) {
            // A conformance may also be written with a `where` clause on the type.
            if !matches.contains(where: { $0.inherits.contains { normalized($0).hasPrefix(target) } }) {
                fail(declaration, "SwiftUI declares no conformance of \(path) to \(conformance)")
            }
        }
    }
    checkAvailability(declaration, sdk: swiftUIIOS(matches))
    confirmed += 1
    for member in declaration.members { checkSwiftUIMember(member, typePath: path, among: all) }
}

@MainActor func checkSwiftUIMember(_ declaration: SwiftDecl, typePath: String, among all: [SwiftDecl]) {
    guard !isListed(declaration) else { listed += 1; return }
    if declaration.isType { return checkSwiftUI(declaration, among: all) }
    guard declaration.isPublicAPI else { return }
    // A primitive view's body: SwiftUI gives every view whose Body is Never one.
    if declaration.name == "body", normalized(declaration.propertyType) == "Never" {
        let primitive = (swiftUIByPath[typePath] ?? []).contains { $0.members.contains { $0.keyword == "typealias" && $0.name == "Body" && normalized($0.signature).hasSuffix("Never") } }
        if primitive || typePath == "Never" { confirmed += 1; return }
    }
    let path = "\(typePath).\(declaration.fullName)"
    var matches = swiftUIByPath[path] ?? []
    var trimmed = false
    if matches.isEmpty, declaration.keyword == "func" || declaration.keyword == "init" {
        // An overload whose extra parameters all have defaults is called the same way.
        let prefix = "\(typePath).\(declaration.name)("
        for (key, candidates) in swiftUIByPath where key.hasPrefix(prefix) {
            for candidate in candidates {
                let kept = candidate.parameters.filter { $0.defaultValue == nil }
                if kept.map(\.label) == declaration.parameters.map(\.label) { matches.append(candidate); trimmed = true }
            }
        }
    }
    guard !matches.isEmpty else {
        return fail(declaration, "SwiftUI.swiftinterface declares no \(path)")
    }
    // One of the interface's overloads must have the same parameter types and result.
    let declared = (declaration.parameters.map { normalized($0.type, in: declaration) }, normalized(declaration.result, in: declaration), normalized(declaration.keyword == "var" || declaration.keyword == "let" ? declaration.propertyType : "", in: declaration))
    let match = matches.first { candidate in
        let parameters = trimmed ? candidate.parameters.filter { $0.defaultValue == nil } : candidate.parameters
        let theirs = (parameters.map { normalized($0.type) }, normalized(candidate.result), normalized(candidate.keyword == "var" || candidate.keyword == "let" ? candidate.signature : ""))
        // A static constant of the type may stand for a case of SwiftUI's enum.
        if candidate.keyword == "case", declaration.modifiers.contains("static"), declared.2 == normalized(typePath) { return true }
        return theirs.0 == declared.0 && (theirs.1 == declared.1 || declared.1 == "someView" && theirs.1.hasPrefix("some")) && theirs.2 == declared.2
    }
    guard let match else {
        let theirs = matches.map { $0.keyword == "var" || $0.keyword == "let" ? $0.signature : $0.signature }.joined(separator: " | ")
        return fail(declaration, "SwiftUI declares it differently: \(theirs)")
    }
    checkAvailability(declaration, sdk: swiftUIIOS([match]))
    confirmed += 1
}

// MARK: Running

let files = ((try? FileManager.default.contentsOfDirectory(atPath: declarationsDirectory)) ?? []).filter { $0.hasSuffix(".swift") }.sorted()
for file in files {
    currentModule = String(file.dropLast(6))
    let path = "\(declarationsDirectory)/\(file)"
    // AppKit exists on macOS only: nothing of it is in this SDK, all of it is listed.
    let declarations = readDeclarations(path, condition: currentModule == "AppKit" ? { _ in true } : iOSCondition)
    func countListed(_ declaration: SwiftDecl) -> Int { 1 + declaration.members.map(countListed).reduce(0, +) }
    for declaration in declarations {
        if isListed(declaration) { listed += countListed(declaration); continue }
        switch currentModule {
        case "SwiftUI": checkSwiftUI(declaration, among: declarations)
        default:
            if declaration.isType { checkType(declaration, among: declarations) } else { checkGlobal(declaration) }
        }
    }
}

for entry in unconfirmed where !entry.used {
    failures.append("\(unconfirmedFile): \(entry.key) names no declaration")
}

print("    Declarations not in the iOS 16.5 SDK here, taken from Apple's documentation (\(unconfirmedFile)):")
for entry in unconfirmed { print("      \(entry.key)  \(entry.url)") }
let seconds = String(format: "%.1f", Date().timeIntervalSince(started))
if failures.isEmpty {
    print("    SDK check: \(confirmed) declarations confirmed against the iOS 16.5 SDK, \(listed) listed as unconfirmed (\(seconds) s)")
} else {
    for failure in failures { print(failure) }
    print("check-sdk: \(failures.count) declarations disagree with the SDK (\(confirmed) confirmed, \(listed) listed)")
    exit(1)
}
