import Foundation

/// Where Imago's programs write: results on standard output, diagnostics and progress
/// on standard error, so piping the results never mixes in anything else.
public enum Output {
    /// A diagnostic on standard error, after `imago:`.
    public static func error(_ line: String) {
        FileHandle.standardError.write(Data(("imago: " + line + "\n").utf8))
    }

    /// A line of results on standard output.
    public static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// One JSON record on a line of its own (JSON Lines), keys sorted so output is
    /// stable from run to run.
    public static func json(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding plain records of strings and numbers cannot fail.
        line(String(decoding: try! encoder.encode(value), as: UTF8.self))
    }
}

/// Exit statuses shared by every command.
public enum ExitStatus {
    /// Everything asked for was done.
    public static let success: Int32 = 0
    /// Some inputs failed; each said why on standard error.
    public static let someFailed: Int32 = 1
    /// A bad command line.
    public static let usage: Int32 = 2
}

extension Duration {
    /// The duration in seconds, for timings and rates.
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
