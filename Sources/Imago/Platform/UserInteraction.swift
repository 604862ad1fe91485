import Dispatch

/// Whether the user is interacting with the program now (scrolling, dragging): while
/// so, on Linux, decodes run at the `background` quality of service.
///
/// GCD on Linux gives each quality of service threads of their own at a nice value:
/// `userInitiated` asks for -2 (what a privileged process gets; others stay at 0,
/// the main thread's), `utility` 2, `background` 10. Decodes at `userInitiated`
/// then stand level with the main thread, or above it, and with as many decodes as
/// cores and anything else wanting a core, a GTK program's main thread waits its
/// turn for tens to hundreds of milliseconds and frames are dropped (5,200 photos
/// scrolled in an `ImageGrid` beside one CPU-bound process: two thirds of the time
/// of every frame over 50 ms was its main thread waiting for a CPU, a tenth
/// running). At nice 10 a decode takes what the other threads leave, and a core is
/// the main thread's the moment it wants one. Only while the user interacts: niced
/// decodes yield to every busy thread of the session, a CPU-bound program started
/// from the same terminal included, and a first screen of thumbnails took over
/// twice as long when they always were.
enum UserInteraction {
    /// Until when (`DispatchTime` nanoseconds) the user is taken to be interacting.
    private static let end = Locked<UInt64>(0)

    /// Marks the user as interacting for the next `seconds`.
    static func note(lasting seconds: Double) {
        let until = DispatchTime.now().uptimeNanoseconds &+ UInt64(max(0, seconds) * 1e9)
        end.withLock { $0 = max($0, until) }
    }

    /// Ends the interaction at once (for tests).
    static func endNow() {
        end.withLock { $0 = 0 }
    }

    /// Whether the user is interacting now.
    static var isActive: Bool {
        end.withLock { $0 } > DispatchTime.now().uptimeNanoseconds
    }
}
