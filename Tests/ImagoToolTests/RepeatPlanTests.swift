import Foundation
import ImagoCommandLine
import Testing

/// What `imago fetch` keeps in memory for a repeat further down its list.
@Suite struct RepeatPlanTests {
    /// The previous and next line of each line's URL, as the tool's look through its
    /// input gives them.
    static func uses(_ lines: [String]) -> (previous: [Int32], next: [Int32]) {
        var last: [String: Int32] = [:]
        var previous = [Int32](repeating: -1, count: lines.count), next = previous
        for (index, line) in lines.enumerated() {
            if let before = last.updateValue(Int32(index), forKey: line) {
                previous[index] = before
                next[Int(before)] = Int32(index)
            }
        }
        return (previous, next)
    }

    static func plan(_ lines: [String], window: Int = 4) -> RepeatPlan {
        let (previous, next) = uses(lines)
        // 10 images of 1 MB, or 100 originals of 100 KB.
        return RepeatPlan(
            previous: previous, next: next, images: .init(bytes: 10 << 20, count: 256),
            originals: .init(bytes: 10 << 20, count: 1_000), window: window)
    }

    @Test func aLineWhoseURLDoesNotComeAgainKeepsNothing() {
        let plan = Self.plan(["a", "b", "c"])
        for line in 0..<3 { #expect(plan.keeping(line: line) == .init(image: false, original: false)) }
    }

    @Test func aRepeatIsKeptForOnlyWhileTheStoreHoldsItsEntriesAtTheSizeSeen() {
        // Each URL comes back 50 lines later.
        let lines = (0..<50).map { "u\($0)" } + (0..<50).map { "u\($0)" }
        let plan = Self.plan(lines)
        // Before any load has ended, a store is taken to hold its whole count.
        #expect(plan.keeping(line: 0) == .init(image: true, original: true))
        // Images of 1 MB: ten fit, not fifty; originals of 100 KB: a hundred fit.
        plan.observe(imageBytes: 1 << 20, originalBytes: 100 << 10)
        #expect(plan.keeping(line: 1) == .init(image: false, original: true))
        // Larger originals (400 KB on average now): 25 fit, and the repeat is lost.
        plan.observe(imageBytes: 1 << 20, originalBytes: 700 << 10)
        #expect(plan.keeping(line: 2) == .init(image: false, original: false))
    }

    @Test func aRepeatCloseEnoughToShareTheLoadInFlightKeepsAsItsFirstLine() {
        // "a" comes back 2 lines on (within the window of 4) and again 40 lines on.
        let lines = ["a", "b", "a"] + (0..<40).map { "f\($0)" } + ["a"]
        let plan = Self.plan(lines)
        plan.observe(imageBytes: 1 << 20, originalBytes: 100 << 10)
        let first = plan.keeping(line: 0)
        #expect(first == .init(image: true, original: true))
        _ = plan.keeping(line: 1)
        // Line 2's own next use (41 lines on) is beyond the images' store, but it may
        // join line 0's load, so it keeps as line 0 does.
        #expect(plan.keeping(line: 2) == first)
        for line in 3..<43 { _ = plan.keeping(line: line) }
        #expect(plan.keeping(line: 43) == .init(image: false, original: false))
    }

    @Test func aStoreTheLoaderHasNotIsNeverKeptIn() {
        let (previous, next) = Self.uses(["a", "a"])
        let plan = RepeatPlan(previous: previous, next: next, images: nil, originals: .init(bytes: 1 << 20, count: 10), window: 4)
        #expect(plan.keeping(line: 0) == .init(image: false, original: true))
    }
}
