/// Work waiting for one of a limited number of slots: highest priority first, then
/// first come, first served. The pipeline has two, one for transfers and one for
/// decoding and processing, each with its own limit.
///
/// Part of the stage graph's state, so changed only under its lock. Leaving the
/// queue (a cancellation, a new priority) only forgets or re-marks the waiting work;
/// its old heap entry stays until popped and is skipped then, which keeps every
/// operation O(log n) in the queue's length.
struct WorkQueue: Sendable {
    /// One heap entry; current while its generation is the waiting work's.
    private struct Entry: Comparable {
        let priority: Int
        let sequence: Int
        let generation: Int

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.priority != rhs.priority ? lhs.priority > rhs.priority : lhs.sequence < rhs.sequence
        }
    }

    /// Work waiting for a slot, by its stage's sequence number.
    private struct Waiting {
        var generation: Int
        let stage: AnyStage
        let work: @Sendable (StageRun) -> Void
    }

    /// How many pieces of work run at once.
    var limit: Int
    /// How many run now.
    private(set) var running = 0
    private var heap = Heap<Entry>()
    private var waitingWork: [Int: Waiting] = [:]
    private var sequence = 0
    private var generation = 0

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// How many stages wait for a slot.
    var waiting: Int { waitingWork.count }

    /// A new place in the order of arrival, for a stage queued for the first time.
    mutating func nextSequence() -> Int {
        sequence += 1
        return sequence
    }

    /// Queues `work` for `stage` at `priority`, in its place among equals: a stage
    /// queued before keeps its `sequence` (a new priority is not a new arrival).
    mutating func enqueue(
        _ stage: AnyStage, priority: ImageRequest.Priority, sequence: Int, work: @escaping @Sendable (StageRun) -> Void
    ) {
        generation += 1
        waitingWork[sequence] = Waiting(generation: generation, stage: stage, work: work)
        push(priority: priority, sequence: sequence)
    }

    /// Moves the work of the stage with `sequence` to its new priority.
    mutating func reprioritize(sequence: Int, to priority: ImageRequest.Priority) {
        guard waitingWork[sequence] != nil else { return }
        generation += 1
        waitingWork[sequence]?.generation = generation
        push(priority: priority, sequence: sequence)
    }

    /// Takes the waiting work of the stage with `sequence` out; it never runs.
    mutating func remove(sequence: Int) {
        waitingWork[sequence] = nil
    }

    /// The next piece of work to run and its stage, if a slot is free; the slot is
    /// taken.
    mutating func next() -> (stage: AnyStage, work: @Sendable (StageRun) -> Void)? {
        guard running < limit else { return nil }
        while let entry = heap.popMin() {
            guard let waiting = waitingWork[entry.sequence], waiting.generation == entry.generation else { continue }
            waitingWork[entry.sequence] = nil
            running += 1
            return (waiting.stage, waiting.work)
        }
        return nil
    }

    /// Gives back a slot taken by `next()`.
    mutating func release() {
        running -= 1
    }

    private mutating func push(priority: ImageRequest.Priority, sequence: Int) {
        heap.insert(Entry(priority: priority.rawValue, sequence: sequence, generation: generation))
        if heap.count > 4 * max(waiting, 256) { compact() }
    }

    /// Drops the entries of work that left or moved, so a long run of cancelled or
    /// re-prioritised work cannot grow the heap without bound.
    private mutating func compact() {
        var kept = Heap<Entry>()
        while let entry = heap.popMin() {
            if waitingWork[entry.sequence]?.generation == entry.generation { kept.insert(entry) }
        }
        heap = kept
    }
}

extension ImageRequest.Priority {
    /// The Swift task priority a transfer at this priority runs at.
    var taskPriority: TaskPriority {
        switch self {
        case .veryLow, .low: .background
        case .normal: .medium
        case .high, .veryHigh: .high
        }
    }
}
