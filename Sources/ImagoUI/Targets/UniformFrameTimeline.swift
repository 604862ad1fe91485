/// An animation's frames on one fixed tick, for players that give every frame the
/// same time (UIKit's animated `UIImage`): each frame repeated for as many ticks as
/// its own delay lasts, so that per-frame delays survive.
struct UniformFrameTimeline: Sendable, Equatable {
    /// How long each entry of `frames` stays on screen, in seconds.
    let tick: Double
    /// The frame to show at each tick, by index.
    let frames: [Int]

    /// The timeline of frames lasting `durations` seconds: the tick is the largest
    /// that divides every delay (to the millisecond), made longer while the timeline
    /// would hold more than `maximumTicks` entries (each frame then at least one
    /// tick, its delay rounded to ticks).
    init(durations: [Double], maximumTicks: Int = 1_000) {
        let milliseconds = durations.map { max(1, Int(($0 * 1000).rounded())) }
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        var tick = milliseconds.reduce(0, gcd)
        let total = milliseconds.reduce(0, +)
        if tick > 0, total / tick > maximumTicks { tick = (total + maximumTicks - 1) / maximumTicks }
        tick = max(tick, 1)
        self.tick = Double(tick) / 1000
        frames = milliseconds.enumerated().flatMap { index, delay in
            Array(repeating: index, count: max(1, Int((Double(delay) / Double(tick)).rounded())))
        }
    }

    /// How long one play lasts, in seconds.
    var duration: Double { tick * Double(frames.count) }

    /// The frame to show at tick `tick` of playback (counting across loops) for an
    /// animation that plays `loopCount` times, 0 meaning forever, and whether it is
    /// the last: a finite animation stays on its last frame once its loops are done.
    func frame(atTick tick: Int, loopCount: Int) -> (index: Int, isLast: Bool) {
        let (entry, isLast) = Self.entry(atTick: tick, of: frames.count, loopCount: loopCount)
        return (frames[entry], isLast)
    }

    /// The entry of a timeline of `count` entries, one a tick, to show at tick `tick`
    /// (counting across loops) when it plays `loopCount` times, 0 meaning forever, and
    /// whether it is the last: a finite play stays on its last entry once done. For
    /// players given the entries already laid out, as an animated `UIImage`'s `images`.
    static func entry(atTick tick: Int, of count: Int, loopCount: Int) -> (entry: Int, isLast: Bool) {
        precondition(tick >= 0 && count > 0, "a tick is not negative and a timeline not empty")
        if loopCount > 0, tick >= count * loopCount - 1 { return (count - 1, true) }
        return (tick % count, false)
    }
}
