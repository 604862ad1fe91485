import Foundation
import ImagoCommandLine

// What `imago-bench` measures, its goals, and how the results are
// printed: a table of medians and ratios, or JSON records.

/// One line of the benchmark table: what is measured, against which baseline, and the goal.
struct Measure: Sendable {
    enum Unit: String, Sendable {
        case seconds = "s"
        case megabytes = "MB"
    }

    /// A goal as a bound on Imago's figure divided by the baseline's (lower is better).
    struct Goal: Sendable {
        let text: String
        let maximumRatio: Double

        /// Judged on the factor as the table prints it, to two decimals ("2.00×
        /// faster" meets "≥ 2× faster"): the noise of a median is larger than that.
        func isMet(by ratio: Double) -> Bool {
            func printed(_ factor: Double) -> Double { (factor * 100).rounded() / 100 }
            return maximumRatio < 1 ? printed(1 / ratio) >= 1 / maximumRatio : printed(ratio) <= maximumRatio
        }
    }

    let name: String
    let unit: Unit
    let baseline: String?
    let goal: Goal?

    static func fullDecodeVersusLibjpeg(_ photos: Int) -> Measure {
        Measure(name: "full decode, \(photos) photos", unit: .seconds, baseline: "libjpeg-turbo",
                goal: Goal(text: "≤ 1.05× libjpeg-turbo", maximumRatio: 1.05))
    }

    static func fullDecodeVersusPillow(_ photos: Int) -> Measure {
        Measure(name: "full decode, \(photos) photos", unit: .seconds, baseline: "Pillow",
                goal: Goal(text: "no slower than Pillow", maximumRatio: 1))
    }

    static func thumbnailsVersusPillow(_ photos: Int) -> Measure {
        Measure(name: "thumbnails \(benchThumbnailSize) px, \(photos) photos", unit: .seconds, baseline: "Pillow",
                goal: Goal(text: "≥ 2× faster than Pillow", maximumRatio: 0.5))
    }

    static func avifFullDecodeVersusPillow(_ photos: Int) -> Measure {
        Measure(name: "AVIF full decode, \(photos) photos", unit: .seconds, baseline: "Pillow",
                goal: Goal(text: "no slower than Pillow", maximumRatio: 1))
    }

    static func avifThumbnailsVersusPillow(_ photos: Int) -> Measure {
        Measure(name: "AVIF thumbnails \(benchThumbnailSize) px, \(photos) photos", unit: .seconds, baseline: "Pillow",
                goal: Goal(text: "no slower than Pillow", maximumRatio: 1))
    }

    static func taggedFullDecode(_ photos: Int, profile: String) -> Measure {
        Measure(name: "full decode, \(photos) photos tagged \(profile)", unit: .seconds, baseline: "untagged",
                goal: Goal(text: "≤ 1.15× untagged", maximumRatio: 1.15))
    }

    static func taggedThumbnails(_ photos: Int, profile: String) -> Measure {
        Measure(name: "thumbnails \(benchThumbnailSize) px, \(photos) photos tagged \(profile)", unit: .seconds,
                baseline: "untagged", goal: Goal(text: "≤ 1.15× untagged", maximumRatio: 1.15))
    }

    static func fullDecode(_ photos: Int) -> Measure {
        Measure(name: "full decode, \(photos) photos", unit: .seconds, baseline: nil, goal: nil)
    }

    static func thumbnails(_ photos: Int) -> Measure {
        Measure(name: "thumbnails \(benchThumbnailSize) px, \(photos) photos", unit: .seconds, baseline: nil, goal: nil)
    }

    /// Each process before it decodes anything: the runtime and libraries loaded.
    static func memoryAtRest(versusPillow: Bool) -> Measure {
        Measure(name: "peak RSS at rest (no decode)", unit: .megabytes,
                baseline: versusPillow ? "Pillow" : nil, goal: nil)
    }

    /// The memory of one thumbnail against the same file decoded at full size: with
    /// downsampling while decoding, memory follows the output size.
    static let oneLargeThumbnailMemory = Measure(
        name: "peak RSS, one 4000 px JPEG to \(benchThumbnailSize) px", unit: .megabytes,
        baseline: "Imago full size", goal: nil)

    static func largeThumbnailsMemory(_ files: Int, versusPillow: Bool) -> Measure {
        Measure(name: "peak RSS, \(files) 4000 px JPEGs to \(benchThumbnailSize) px", unit: .megabytes,
                baseline: versusPillow ? "Pillow" : nil,
                goal: versusPillow ? Goal(text: "below Pillow", maximumRatio: 1) : nil)
    }
}

/// The samples of one statistic over the rounds.
struct Samples: Encodable {
    private(set) var values: [Double] = []

    mutating func add(_ value: Double) { values.append(value) }

    var median: Double {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }

    var minimum: Double { values.min() ?? 0 }

    private enum CodingKeys: String, CodingKey { case median, minimum, samples }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(median, forKey: .median)
        try container.encode(minimum, forKey: .minimum)
        try container.encode(values, forKey: .samples)
    }
}

/// Everything one `imago-bench` run found.
struct BenchReport {
    struct Row {
        let measure: Measure
        var imago = Samples()
        var baseline = Samples()

        mutating func add(imago value: Double, baseline baselineValue: Double?) {
            imago.add(value)
            if let baselineValue { baseline.add(baselineValue) }
        }

        /// Imago's median over the baseline's; nil without a baseline.
        var ratio: Double? {
            baseline.values.isEmpty ? nil : imago.median / baseline.median
        }

        var goalMet: Bool? {
            guard let goal = measure.goal, let ratio else { return nil }
            return goal.isMet(by: ratio)
        }
    }

    let photoCount: Int
    let photoMegabytes: Double
    let runs: Int
    let cores = ProcessInfo.processInfo.activeProcessorCount
    var thumbnailsAreDownsampled = true
    var loadAverageAtStart = 0.0
    var othersCPUShare: Double?
    var rows: [Row] = []
}

// MARK: - The table

extension BenchReport {
    func printTable() {
        Output.line(String(format: "Imago bench: %d web-size JPEGs (%.1f MB), %d cores, median (minimum) of %d rounds",
                           photoCount, photoMegabytes, cores, runs))
        Output.line(machineNote)
        Output.line("")
        let header = ["measure", "Imago", "baseline", "ratio", "goal"]
        Output.line(alignedColumns([header] + rows.map(cells)).joined(separator: "\n"))
        if !thumbnailsAreDownsampled {
            Output.line("\nnote: the thumbnail path still decodes at full size (the library does not downsample yet).")
        }
    }

    private var machineNote: String {
        let load = String(format: "load average %.2f at the start", loadAverageAtStart)
        guard let othersCPUShare else { return load }
        let share = String(format: "other processes took %.0f%% of the CPU during the run (%@)", othersCPUShare * 100, load)
        return share + (othersCPUShare > 0.1 ? ": the machine was busy, figures are noisy" : ": the machine was quiet")
    }

    private func cells(_ row: Row) -> [String] {
        let unit = row.measure.unit
        let imago = figure(row.imago, unit)
        let baseline = row.measure.baseline.map { name in row.baseline.values.isEmpty ? "" : "\(name) \(figure(row.baseline, unit))" } ?? "—"
        let goal = row.measure.goal.map { goal in goal.text + ": " + (row.goalMet == true ? "met" : "NOT met") } ?? ""
        return [row.measure.name, imago, baseline, row.ratio.map { describe(ratio: $0, unit) } ?? "", goal]
    }

    private func figure(_ samples: Samples, _ unit: Measure.Unit) -> String {
        let format = unit == .seconds ? "%.2f %@ (%.2f)" : "%.1f %@ (%.1f)"
        return String(format: format, samples.median, unit.rawValue, samples.minimum)
    }

    /// "2.31× faster" or "1.04× slower"; "3.10× less" or "1.20× more" for memory.
    private func describe(ratio: Double, _ unit: Measure.Unit) -> String {
        let better = ratio <= 1
        let factor = better ? 1 / ratio : ratio
        let words = unit == .seconds ? (better ? "faster" : "slower") : (better ? "less" : "more")
        return String(format: "%.2f× %@", factor, words)
    }

    /// The rows as text, each column as wide as its widest cell.
    private func alignedColumns(_ table: [[String]]) -> [String] {
        let widths = table[0].indices.map { column in table.map { $0[column].count }.max() ?? 0 }
        return table.map { row in
            zip(row, widths).map { cell, width in cell + String(repeating: " ", count: width - cell.count) }
                .joined(separator: "   ").trimmingCharacters(in: .whitespaces)
        }
    }
}

// MARK: - JSON

extension BenchReport {
    private struct RunRecord: Encodable {
        let photos: Int
        let photoMegabytes: Double
        let runs: Int
        let cores: Int
        let thumbnailPixels: Int
        let thumbnailsDownsampled: Bool
        let loadAverageAtStart: Double
        let othersCPUShare: Double?
    }

    private struct MeasureRecord: Encodable {
        struct Baseline: Encodable {
            let name: String
            let median: Double
            let minimum: Double
            let samples: [Double]
        }
        let measure: String
        let unit: String
        let imago: Samples
        let baseline: Baseline?
        let ratio: Double?
        let goal: String?
        let goalMet: Bool?
    }

    /// One record describing the run, then one per measure.
    func printJSON() {
        Output.json(["bench": RunRecord(
            photos: photoCount, photoMegabytes: photoMegabytes, runs: runs, cores: cores,
            thumbnailPixels: benchThumbnailSize, thumbnailsDownsampled: thumbnailsAreDownsampled,
            loadAverageAtStart: loadAverageAtStart, othersCPUShare: othersCPUShare)])
        for row in rows {
            let baseline = row.measure.baseline.flatMap { name in
                row.baseline.values.isEmpty ? nil : MeasureRecord.Baseline(
                    name: name, median: row.baseline.median, minimum: row.baseline.minimum, samples: row.baseline.values)
            }
            Output.json(MeasureRecord(
                measure: row.measure.name, unit: row.measure.unit.rawValue, imago: row.imago, baseline: baseline,
                ratio: row.ratio, goal: row.measure.goal?.text, goalMet: row.goalMet))
        }
    }
}
