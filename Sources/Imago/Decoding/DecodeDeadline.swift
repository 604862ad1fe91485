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

    /// Throws `decodingTimedOut` once the time is up.
    func check(_ format: ImageFormat) throws(ImagoError) {
        if hasPassed { throw .decodingTimedOut(format: format, seconds: seconds) }
    }

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
