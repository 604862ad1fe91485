/// Waits until `condition` holds, for at most `seconds`; returns whether it holds. It
/// looks every 10 ms on the caller's actor, so a test on the main actor lets the
/// deliveries it waits for run in between. A hang guard, not a time limit on what is
/// tested: it returns as soon as the condition holds, and a minute is longer than a
/// loaded 2-core machine ever needs.
func until(
    _ seconds: Double = 60, isolation: isolated (any Actor)? = #isolation, _ condition: () -> Bool
) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline { return false }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return true
}
