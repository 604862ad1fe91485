import Foundation
import Testing

/// Waits until `condition` holds; returns whether it does, and records an issue at
/// the caller (with `comment`, made at that moment, saying what did not happen) when
/// it did not within `seconds` of waiting. It looks every 10 ms on the caller's
/// actor, so a test on the main actor lets the deliveries it waits for run in
/// between; `pause`, when given, is what it does between looks instead (a GTK test
/// runs GLib's main loop there, and yields to the main actor's other jobs). A hang
/// guard, not a time limit on what is tested: it returns as soon as the condition
/// holds.
///
/// Only waiting the pool and the caller's actor let happen counts, up to a second a
/// look: at the suite's start its CPU-bound tests hold both threads of the
/// concurrency pool for a minute or more, and the loads a condition waits for need
/// that pool as much as this loop does, so a wall clock would fail them for a wait
/// they had no chance to end. Each look is woken in the pool and then on the
/// caller's actor, late when either was taken. Five times `seconds` in all at most,
/// so a pool or an actor that is never freed fails too.
@discardableResult
public func waitUntil(
    _ comment: @autoclosure () -> Comment? = nil, seconds: Double = 60,
    isolation: isolated (any Actor)? = #isolation, sourceLocation: SourceLocation = #_sourceLocation,
    pause: (() async -> Void)? = nil, _ condition: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let giveUp = clock.now + .seconds(seconds * 5)
    var waited = Duration.zero
    while true {
        if condition() { return true }
        if waited > .seconds(seconds) || clock.now > giveUp {
            let waiting = "still not so after \(seconds) s of waiting"
            Issue.record(Comment(rawValue: comment().map { "\($0.rawValue): \(waiting)" } ?? waiting), sourceLocation: sourceLocation)
            return false
        }
        let before = clock.now
        if let pause {
            await pause()
        } else {
            await Task.detached { try? await Task.sleep(for: .milliseconds(10)) }.value
        }
        waited += min(clock.now - before, .seconds(1))
    }
}

/// Keeps the calling thread busy, as a layout pass on a main thread does, until
/// `condition` holds, then for `extra` seconds more; records an issue at the caller
/// when it did not within `seconds`. Nothing else runs on the caller's actor
/// meanwhile: that is the point.
public func keepBusy(
    until condition: () -> Bool, extra: Double = 0, seconds: Double = 60,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("still not so after \(seconds) s of keeping busy", sourceLocation: sourceLocation)
            break
        }
        usleep(1000)
    }
    if extra > 0 { usleep(UInt32(extra * 1_000_000)) }
}
