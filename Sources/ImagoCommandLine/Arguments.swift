import Foundation

/// One option a command accepts. Options are declared as data, so parsing, `--help`
/// and usage errors come from one table per command and behave alike everywhere.
public struct Option: Sendable {
    /// The option as typed, `--name`.
    public let name: String
    /// Shown in help as `--name VALUE`; nil for a flag that takes no value.
    public let value: String?
    /// One line for `--help`.
    public let help: String

    /// An option that takes no value.
    public static func flag(_ name: String, _ help: String) -> Option {
        Option(name: name, value: nil, help: help)
    }

    /// An option followed by a value, shown in help as `value`.
    public static func value(_ name: String, _ value: String, _ help: String) -> Option {
        Option(name: name, value: value, help: help)
    }
}

/// A command: a subcommand of `imago`, or a program of its own.
public struct Command: Sendable {
    /// What the user types to pick the command (`decode`).
    public let name: String
    /// What the help's usage line begins with: `imago NAME` for a subcommand.
    public let invocation: String
    /// The arguments, as the usage line shows them.
    public let synopsis: String
    /// What the command does, in a few sentences.
    public let summary: String
    /// Every option the command accepts.
    public let options: [Option]
    /// Runs the command; returns the exit status.
    public let run: @Sendable (Arguments) async -> Int32

    /// The summary's first sentence, for a list of commands. It ends at a full stop
    /// followed by a space or the end, not at one inside a word (`.jpg`).
    public var firstSentence: Substring {
        var rest = summary[...]
        while let stop = rest.firstIndex(of: ".") {
            let next = summary.index(after: stop)
            if next == summary.endIndex || summary[next].isWhitespace { return summary[..<stop] }
            rest = summary[next...]
        }
        return summary[...]
    }

    /// A command whose usage line begins with `invocation` (by default `imago NAME`).
    public init(
        name: String, invocation: String? = nil, synopsis: String, summary: String, options: [Option],
        run: @escaping @Sendable (Arguments) async -> Int32
    ) {
        self.name = name
        self.invocation = invocation ?? "imago \(name)"
        self.synopsis = synopsis
        self.summary = summary
        self.options = options
        self.run = run
    }

    /// The text of `--help`.
    public var help: String {
        var text = "usage: \(invocation) \(synopsis)\n\n\(summary)\n\noptions:\n"
        let all = options + [.flag("--help", "show this help")]
        let labels = all.map { "  \($0.name)" + ($0.value.map { " \($0)" } ?? "") }
        let width = labels.map(\.count).max() ?? 0
        for (label, option) in zip(labels, all) {
            text += label.padding(toLength: width + 2, withPad: " ", startingAt: 0) + option.help + "\n"
        }
        return text
    }

    /// Runs the command on `argv` (its arguments, without the program and command
    /// names) and exits with its status: `--help` prints the help, a bad command line
    /// the error and the help.
    public func main(_ argv: [String]) async -> Never {
        if argv.contains("--help") || argv.contains("-h") {
            print(help, terminator: "")
            exit(ExitStatus.success)
        }
        do {
            let arguments = try Arguments(argv, options: options)
            exit(await run(arguments))
        } catch {
            Output.error(error.message + "\n\n" + help)
            exit(ExitStatus.usage)
        }
    }
}

/// A bad command line: reported on standard error with exit status 2.
public struct UsageError: Error {
    /// What was wrong, for the user.
    public let message: String

    /// An error saying `message`.
    public init(message: String) {
        self.message = message
    }
}

/// The parsed command line of one command.
public struct Arguments: Sendable {
    /// The arguments that are not options, in order.
    public private(set) var positionals: [String] = []
    /// Every value of each option, in the order given: most options take the last,
    /// a repeatable one (`--header`) all of them.
    private var values: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` against `options`: `--name value`, `--name=value`, flags,
    /// and `--` to end options so a file may be called `--out`.
    public init(_ arguments: [String], options: [Option]) throws(UsageError) {
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
                values[name, default: []].append(value)
            } else {
                throw UsageError(message: "\(name) needs a value")
            }
        }
    }

    /// Whether the flag `name` was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of the option `name` (the last, when it was given more than once),
    /// or nil when absent.
    public func string(_ name: String) -> String? { values[name]?.last }

    /// Every value of the option `name`, in the order given; empty when absent.
    public func strings(_ name: String) -> [String] { values[name] ?? [] }

    /// An integer option within `range`, or nil when absent.
    public func integer(_ name: String, in range: ClosedRange<Int>) throws(UsageError) -> Int? {
        guard let text = string(name) else { return nil }
        guard let number = Int(text), range.contains(number) else {
            throw UsageError(message: "\(name) needs a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }
}
