/// What a stage's work tells the pipeline: the one way back from a stage to the
/// graph. The pipeline applies each piece of news under its lock, then starts what
/// may run and tells the subscribers, after the lock; a stage never takes the lock
/// itself.
enum StageNews<Key: StageKind>: Sendable {
    /// Bytes of the original received so far, for every subscriber.
    case progress(ImageTask.Progress)
    /// A transfer attempt failed and another follows, for every subscriber.
    case retrying(attempt: Int, error: ImagoError, delay: Double)
    /// Partial data or a preview, for the subscribers that want previews, unless the
    /// stage has finished.
    case preview(StageEvent<Key.Value>)
    /// Work that makes a preview: run on a utility thread, one at a time per stage
    /// (the newest asked for waits and replaces any older one waiting); nothing runs
    /// once the stage has finished.
    case previewWork(@Sendable () -> Void)
    /// The task running the stage's transfer, cancelled if the stage is abandoned.
    case transferStarted(Task<Void, Never>)
    /// The stage goes on: the slot of `after` (nil: it held none) is given back and,
    /// unless the stage was abandoned meanwhile, `then` changes the graph (queues
    /// the next piece of work, subscribes to the stage it builds on).
    case next(after: StageRun?, then: @Sendable (inout StageGraph) -> Void)
    /// The stage's outcome, giving back the slot of `after`. `keep` runs first when a
    /// task (not only another stage) waits for it, to put it in the caches before
    /// anyone hears of it; then each subscriber hears the outcome once. An abandoned
    /// stage's outcome is dropped.
    case finished(Result<Key.Value, ImagoError>, after: StageRun?, keep: (@Sendable () -> Void)? = nil)
}

/// Where a stage publishes its news: the pipeline.
protocol StagePublishing: AnyObject, Sendable {
    /// Applies `news` of `stage`; false when the stage has left (for
    /// `transferStarted`: the caller cancels its task then).
    @discardableResult
    func publish<Key: StageKind>(_ news: StageNews<Key>, of stage: StageHandle<Key>) -> Bool
}
