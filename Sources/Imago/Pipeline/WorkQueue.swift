/// Work waiting for one of a limited number of slots: highest priority first, then
/// first come, first served. The pipeline has two, one for transfers and one for
/// decoding and processing, each with its own limit.
///
/// A value guarded by the pipeline's lock. Leaving the queue (a cancellation, a new
/// priority) only marks the stage; its old entry stays in the heap until popped and
/// is skipped then, which keeps every operation O(log n) in the queue's length.
struct WorkQueue {
    /// One piece of work, runnable once it has a slot.
    private struct Entry: Comparable {
        let priority: Int
        let sequence: Int
        let generation: Int
        let stage: StageCore

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.priority != rhs.priority ? lhs.priority > rhs.priority : lhs.sequence < rhs.sequence
        }

        static func == (lhs: Entry, rhs: Entry) -> Bool {
            lhs.priority == rhs.priority && lhs.sequence == rhs.sequence && lhs.generation == rhs.generation
        }
    }

    /// How many pieces of work run at once.
    var limit: Int
    /// How many run now.
    private(set) var running = 0
    /// How many stages wait for a slot.
    private(set) var waiting = 0
    private var heap = Heap<Entry>()
    private var sequence = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Queues `work` for `stage` at the stage's priority; the stage keeps its place
    /// among equals if it was queued before (a new priority is not a new arrival).
    mutating func enqueue(_ stage: StageCore, work: @escaping @Sendable () -> Void) {
        if stage.sequence == 0 {
            sequence += 1
            stage.sequence = sequence
        }
        stage.queuedWork = work
        waiting += 1
        push(stage)
    }

    /// Moves a queued stage to its new priority.
    mutating func reprioritize(_ stage: StageCore) {
        guard stage.queuedWork != nil else { return }
        push(stage)
    }

    /// Takes a queued stage out; its work never runs.
    mutating func remove(_ stage: StageCore) {
        guard stage.queuedWork != nil else { return }
        stage.queuedWork = nil
        stage.queueGeneration += 1
        waiting -= 1
    }

    /// The next piece of work to run, if a slot is free; the slot is taken.
    mutating func next() -> (@Sendable () -> Void)? {
        guard running < limit else { return nil }
        while let entry = heap.popMin() {
            let stage = entry.stage
            guard let work = stage.queuedWork, entry.generation == stage.queueGeneration else { continue }
            stage.queuedWork = nil
            waiting -= 1
            running += 1
            return work
        }
        return nil
    }

    /// Gives back a slot taken by `next()`.
    mutating func release() {
        running -= 1
    }

    private mutating func push(_ stage: StageCore) {
        stage.queueGeneration += 1
        heap.insert(Entry(
            priority: stage.priority.rawValue, sequence: stage.sequence, generation: stage.queueGeneration, stage: stage))
        if heap.count > 4 * max(waiting, 256) { compact() }
    }

    /// Drops the entries of stages that left or moved, so a long run of cancelled or
    /// re-prioritised work cannot grow the heap without bound.
    private mutating func compact() {
        var kept = Heap<Entry>()
        while let entry = heap.popMin() {
            if entry.stage.queuedWork != nil && entry.generation == entry.stage.queueGeneration { kept.insert(entry) }
        }
        heap = kept
    }
}
