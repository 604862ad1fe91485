#if os(Linux)
import CImagoSystem
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
    func handle(_ polled: [pollfd], timedOut: Bool) -> MemoryPressureMonitor.Level? { nil }
}

/// The thread that waits on a probe. Shared by the source (until `stop`) and the
/// thread (until it ends); whichever lets go last closes the descriptors.
final class PressureWatcher: @unchecked Sendable {
    // Unchecked: `probe` is used only on the watcher thread, `thread` only under the source's lock.

    // Touched only by the watcher thread once it runs.
    private let probe: PressureProbe
    private let report: @Sendable (MemoryPressureMonitor.Level) -> Void
    private let wake: Int32
    // Written by `start` and read by `stop`, which the source's lock orders.
    private var thread = pthread_t()
    private let runningThreadID = Locked<pid_t?>(nil)

    init?(probe: PressureProbe, report: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) {
        guard let wake = LinuxThreads.makeEventFD() else { return nil }
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
        LinuxThreads.nameCurrent("imago-pressure")
        runningThreadID.withLock { $0 = LinuxThreads.currentID }
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

/// The calls on threads and eventfds the watcher needs, which glibc declares only
/// under `_GNU_SOURCE` and which come through the `CImagoSystem` module.
enum LinuxThreads {
    /// The kernel's id of the calling thread, as in /proc/self/task.
    static var currentID: pid_t { gettid() }

    /// Names the calling thread, so it is recognisable in `top -H` and debuggers (at
    /// most 15 bytes).
    static func nameCurrent(_ name: String) {
        _ = pthread_setname_np(pthread_self(), name)
    }

    /// A new non-blocking, close-on-exec eventfd.
    static func makeEventFD() -> Int32? {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        return fd >= 0 ? fd : nil
    }
}

#endif
