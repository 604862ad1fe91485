#if os(Linux)
import Foundation
import Glibc

/// One mechanism's descriptors, and how to read what `poll` says about them. Owned by
/// the watcher thread once it starts; closes its descriptors when released.
class PressureProbe {
    let mechanism: MemoryPressureMechanism
    /// What to poll; a negative `fd` is skipped by `poll`, which retires a dead one.
    var watched: [pollfd] = []
    /// Milliseconds between calls without an event; -1 to wait for events only.
    var timeout: Int32 { -1 }
    private var owned: [Int32] = []

    init(mechanism: MemoryPressureMechanism) {
        self.mechanism = mechanism
    }

    deinit {
        for fd in owned { close(fd) }
    }

    func watch(_ fd: Int32, for events: Int32) {
        owned.append(fd)
        watched.append(pollfd(fd: fd, events: Int16(events), revents: 0))
    }

    func own(_ fd: Int32) { owned.append(fd) }

    /// The event `polled` (aligned with ``watched``) amounts to, if any.
    func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureLevel? { nil }
}

/// The thread that waits on a probe. Shared by the source (until `stop`) and the
/// thread (until it ends); whichever lets go last closes the descriptors.
final class PressureWatcher: @unchecked Sendable {
    // Unchecked: `probe` is only touched by the watcher thread, `thread` only by the
    // source under its lock; the rest is immutable or `Locked`.

    // Touched only by the watcher thread once it runs.
    private let probe: PressureProbe
    private let report: @Sendable (MemoryPressureLevel) -> Void
    private let wake: Int32
    // Written by `start` and read by `stop`, which the source's lock orders.
    private var thread = pthread_t()
    private let runningThreadID = Locked<pid_t?>(nil)

    init?(probe: PressureProbe, report: @escaping @Sendable (MemoryPressureLevel) -> Void) {
        guard let wake = GNU.makeEventFD() else { return nil }
        self.wake = wake
        self.probe = probe
        self.report = report
    }

    deinit { close(wake) }

    var threadID: pid_t? { runningThreadID.withLock { $0 } }

    func start() -> Bool {
        let context = Unmanaged.passRetained(self).toOpaque()
        let result = pthread_create(&thread, nil, { context in
            let watcher = Unmanaged<PressureWatcher>.fromOpaque(context!).takeRetainedValue()
            watcher.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<PressureWatcher>.fromOpaque(context).release()
            return false
        }
        return true
    }

    func stop() {
        var one: UInt64 = 1
        _ = write(wake, &one, MemoryLayout<UInt64>.size)
        // From inside a handler (a subscriber releasing the last reference to the
        // monitor, say) the thread cannot wait for itself: it is left to end on its
        // own once the handler returns and it sees the wake-up.
        if pthread_equal(pthread_self(), thread) != 0 {
            pthread_detach(thread)
        } else {
            pthread_join(thread, nil)
        }
    }

    private func run() {
        _ = GNU.setThreadName?(pthread_self(), "imago-pressure")
        runningThreadID.withLock { $0 = GNU.threadID?() }
        defer { runningThreadID.withLock { $0 = nil } }
        while true {
            var polled = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)] + probe.watched
            let ready = poll(&polled, nfds_t(polled.count), probe.timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if polled[0].revents != 0 { return }
            if let level = probe.handle(Array(polled.dropFirst()), timedOut: ready == 0) {
                report(level)
            }
        }
    }
}

/// glibc functions the Swift Glibc module leaves out (glibc declares them only under
/// `_GNU_SOURCE`), looked up once at run time instead of adding C to the package.
enum GNU {
    private static func function<F>(_ name: String, as type: F.Type) -> F? {
        // The handle of the program itself searches every library loaded with it,
        // libc included; it is never closed, so it can be opened per look-up.
        dlsym(dlopen(nil, RTLD_NOW), name).map { unsafeBitCast($0, to: type) }
    }

    private static let eventfd = function("eventfd", as: (@convention(c) (UInt32, Int32) -> Int32).self)
    /// `gettid`: the kernel's id of the calling thread (glibc 2.30 and later).
    static let threadID = function("gettid", as: (@convention(c) () -> pid_t).self)
    /// `pthread_setname_np`, so the thread is recognisable in `top -H` and debuggers.
    static let setThreadName = function(
        "pthread_setname_np", as: (@convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32).self)

    /// A new non-blocking, close-on-exec eventfd (its flags equal O_NONBLOCK and
    /// O_CLOEXEC by definition).
    static func makeEventFD() -> Int32? {
        guard let fd = eventfd?(0, O_NONBLOCK | O_CLOEXEC), fd >= 0 else { return nil }
        return fd
    }
}

#endif
