// The SDK's API notes (`*.apinotes`, YAML): what they say for Swift about a class,
// method, property, function, global, enumerator or type. Clang applies them only when
// it builds modules, which it cannot do for this SDK on Linux, so they are read here.
import Foundation

struct APINotes {
    /// The fields of each entry, keyed by `Section/Name` (`Typedefs/UIViewContentMode`)
    /// or, for members, `Classes/UIView/Methods/bringSubviewToFront:/Instance` and
    /// `Classes/UIActivityIndicatorView/Properties/activityIndicatorViewStyle`.
    private(set) var entries: [String: [String: String]] = [:]

    init(files: [String]) {
        for file in files {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
            read(text)
        }
    }

    private mutating func read(_ text: String) {
        var section = ""
        var entity: [String: String] = [:]
        var entityKey: String?
        var memberList = ""
        var member: [String: String] = [:]
        var inMember = false

        func flushMember() {
            guard inMember, let entityKey else { return }
            let name = member["Selector"] ?? member["Name"] ?? ""
            var key = "\(entityKey)/\(memberList)/\(name)"
            if let kind = member["MethodKind"] { key += "/\(kind)" }
            if let kind = member["PropertyKind"], kind == "Class" { key += "/Class" }
            entries[key] = member
            member = [:]
            inMember = false
        }
        func flushEntity() {
            flushMember()
            if let entityKey { entries[entityKey, default: [:]].merge(entity) { $1 } }
            entity = [:]
            entityKey = nil
        }

        for rawLine in text.components(separatedBy: "\n") {
            let line = rawLine.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty, line != "---" else { continue }
            let indent = line.prefix { $0 == " " }.count
            let content = line.trimmingCharacters(in: .whitespaces)
            if indent == 0, !content.hasPrefix("-") {
                flushEntity()
                section = String(content.prefix { $0 != ":" })
                // Notes for older Swift versions come last and do not apply to Swift 6.
                if section == "SwiftVersions" { return }
                continue
            }
            let isItem = content.hasPrefix("- ")
            let field = isItem ? String(content.dropFirst(2)) : content
            let parts = field.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let key = parts[0]
            let value = parts.count > 1 ? parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"'")) : ""
            if indent == 0 {
                // "- Name: X" starts an entity of the section.
                flushEntity()
                entityKey = "\(section)/\(value)"
                entity[key] = value
            } else if indent == 2, !isItem {
                flushMember()
                if value.isEmpty { memberList = key } else { entity[key] = value }
            } else if isItem, indent == 2 {
                flushMember()
                inMember = true
                member[key] = value
            } else if inMember, indent == 4, !isItem {
                member[key] = value
            }
        }
        flushEntity()
    }

    func entry(_ key: String) -> [String: String]? { entries[key] }
}
