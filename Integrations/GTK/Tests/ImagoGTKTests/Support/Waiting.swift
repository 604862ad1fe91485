import Testing

/// Waits until `condition` holds; returns whether it does, and records an issue at
/// the caller (`comment`, made at that moment, saying what did not happen) when it
/// did not within `seconds` of waiting. It looks every `interval`
/// on the caller's actor, running `whileWaiting` before each look (a GTK test runs
/// GLib's main loop there), so a test on the main actor lets the deliveries it waits
/// for run in between. A hang guard, not a time limit on what is tested: it returns
/// as soon as the condition holds.
///
/// Only waiting the pool and the caller's actor let happen counts, up to a second a
/// look: at the suite's start its CPU-bound tests hold both threads of the
/// concurrency pool for a minute or more, and the loads a condition waits for need
/// that pool as much as this loop does, so a wall clock would fail them for a wait
/// they had no chance to end. Each look is woken in the pool and then on the
/// caller's actor, late when either was taken. Five times `seconds` in all at most,
/// so a pool or an actor that is never freed fails too.
@discardableResult
func waitUntil(
    _ comment: @autoclosure () -> Comment? = nil, seconds: Double = 60, pollingEvery interval: Duration = .milliseconds(10),
    isolation: isolated (any Actor)? = #isolation, sourceLocation: SourceLocation = #_sourceLocation,
    whileWaiting: () -> Void = {}, _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let giveUp = clock.now + .seconds(seconds * 5)
    var waited = Duration.zero
    while true {
        whileWaiting()
        if condition() { return true }
        if waited > .seconds(seconds) || clock.now > giveUp {
            let waiting = "still not so after \(seconds) s of waiting"
            Issue.record(Comment(rawValue: comment().map { "\($0.rawValue): \(waiting)" } ?? waiting), sourceLocation: sourceLocation)
            return false
        }
        let before = clock.now
        await Task.detached { try? await Task.sleep(for: interval) }.value
        waited += min(clock.now - before, .seconds(1))
    }
}
