import Foundation

/// One option a command accepts. Options are declared as data, so parsing, `--help`
/// and usage errors come from one table per command and behave alike everywhere.
struct Option: Sendable {
    let name: String
    /// Shown in help as `--name VALUE`; nil for a flag that takes no value.
    let value: String?
    let help: String

    static func flag(_ name: String, _ help: String) -> Option {
        Option(name: name, value: nil, help: help)
    }

    static func value(_ name: String, _ value: String, _ help: String) -> Option {
        Option(name: name, value: value, help: help)
    }
}

/// A subcommand of `imago`.
struct Command: Sendable {
    let name: String
    let synopsis: String
    let summary: String
    let options: [Option]
    let run: @Sendable (Arguments) async -> Int32

    var help: String {
        var text = "usage: imago \(name) \(synopsis)\n\n\(summary)\n\noptions:\n"
        let all = options + [.flag("--help", "show this help")]
        let labels = all.map { "  \($0.name)" + ($0.value.map { " \($0)" } ?? "") }
        let width = labels.map(\.count).max() ?? 0
        for (label, option) in zip(labels, all) {
            text += label.padding(toLength: width + 2, withPad: " ", startingAt: 0) + option.help + "\n"
        }
        return text
    }
}

/// A bad command line: reported on standard error with exit status 2.
struct UsageError: Error {
    let message: String
}

/// The parsed command line of one command.
struct Arguments {
    private(set) var positionals: [String] = []
    private var values: [String: String] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` against `options`: `--name value`, `--name=value`, flags,
    /// and `--` to end options so a file may be called `--out`.
    init(_ arguments: [String], options: [Option]) throws(UsageError) {
        let table = Dictionary(uniqueKeysWithValues: options.map { ($0.name, $0) })
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--" {
                positionals += rest
                break
            }
            guard argument.hasPrefix("-"), argument != "-" else {
                positionals.append(argument)
                continue
            }
            var name = argument
            var inline: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inline = String(argument[argument.index(after: equals)...])
            }
            guard let option = table[name] else {
                throw UsageError(message: "unknown option \(name)")
            }
            if option.value == nil {
                guard inline == nil else { throw UsageError(message: "\(name) takes no value") }
                flags.insert(name)
            } else if let value = inline ?? rest.popFirst() {
                values[name] = value
            } else {
                throw UsageError(message: "\(name) needs a value")
            }
        }
    }

    func flag(_ name: String) -> Bool { flags.contains(name) }

    func string(_ name: String) -> String? { values[name] }

    /// An integer option within `range`, or nil when absent.
    func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = values[name] else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }
}
