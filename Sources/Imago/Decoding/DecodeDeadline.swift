#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The moment a decode must stop, on the monotonic clock the C codec shims read too
/// (`CLOCK_MONOTONIC`), so one figure is checked on both sides of the call.
struct DecodeDeadline {
    /// Nanoseconds on `CLOCK_MONOTONIC`; 0 for none.
    let nanoseconds: UInt64
    /// The limit it was made from, for the error.
    let seconds: Double

    /// A deadline `seconds` from now; none for nil, or for a limit beyond a century
    /// (whose nanoseconds would overflow).
    init(seconds: Double?) {
        guard let seconds, seconds.isFinite, seconds < 3e9 else {
            nanoseconds = 0
            self.seconds = .infinity
            return
        }
        self.seconds = max(0, seconds)
        nanoseconds = Self.now() + UInt64(self.seconds * 1e9) + 1
    }

    /// Whether the time is up.
    var hasPassed: Bool { nanoseconds != 0 && Self.now() >= nanoseconds }

    /// Seconds left, for a decode run inside this one (given as its `timeout`); nil
    /// for no deadline.
    var secondsLeft: Double? {
        guard nanoseconds != 0 else { return nil }
        let now = Self.now()
        return now >= nanoseconds ? 0 : Double(nanoseconds - now) / 1e9
    }

    /// Throws `decodingTimedOut` once the time is up.
    func check(_ format: ImageFormat) throws(ImagoError) {
        if hasPassed { throw .decodingTimedOut(format: format, seconds: seconds) }
    }

    /// A deadline that never passes: for frames decoded after the decode has returned
    /// (an animation played later), which no load is waiting on.
    static let none = DecodeDeadline(seconds: nil)

    /// Rows of `width` pixels to decode between two checks: about a quarter of a million
    /// pixels, well under a millisecond of the slowest row loops, so a wide image is
    /// checked often enough to stop within a few milliseconds and a narrow one does not
    /// read the clock for every row.
    static func rowsPerCheck(width: Int) -> Int { max(1, (1 << 18) / max(width, 1)) }

    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }
}

extension DecodingOptions {
    /// When a decode started now must stop, from `timeout`.
    func deadline() -> DecodeDeadline { DecodeDeadline(seconds: timeout) }
}
