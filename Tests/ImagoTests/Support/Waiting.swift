/// Waits until `condition` holds; returns whether it holds. It looks every 10 ms on
/// the caller's actor, so a test on the main actor lets the deliveries it waits for
/// run in between. A hang guard, not a time limit on what is tested: it returns as
/// soon as the condition holds, and fails once `seconds` of waiting have passed
/// without it.
///
/// Only waiting the pool and the caller's actor let happen counts, up to a second a
/// look: at the suite's start its CPU-bound tests hold both threads of the
/// concurrency pool for a minute or more, and the loads a condition waits for need
/// that pool as much as this loop does, so a wall clock would fail them for a wait
/// they had no chance to end. Each look is woken in the pool and then on the
/// caller's actor, late when either was taken. Five times `seconds` in all at most,
/// so a pool or an actor that is never freed fails too.
func until(
    _ seconds: Double = 60, isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let giveUp = clock.now + .seconds(seconds * 5)
    var waited = Duration.zero
    while !condition() {
        if waited > .seconds(seconds) || clock.now > giveUp { return false }
        let before = clock.now
        await Task.detached { try? await Task.sleep(for: .milliseconds(10)) }.value
        waited += min(clock.now - before, .seconds(1))
    }
    return true
}
