extension MemoryPressureMonitor {
    /// How hard the system is pressed for memory.
    public enum Level: Int, Sendable, Comparable, CustomStringConvertible {
        /// Memory is getting scarce: give back what is cheap to make again.
        case warning
        /// The system is about to kill processes, or has started: give back everything.
        case critical

        /// Orders by severity, so the worse of two events is their `max`.
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The level's name, for logs.
        public var description: String {
            switch self {
            case .warning: "warning"
            case .critical: "critical"
            }
        }
    }
}

/// What a memory-pressure source watches: for logs and tests, so a deployment can tell
/// whether it gets kernel signals or only the polling fallback.
struct MemoryPressureMechanism: Hashable, Sendable, CustomStringConvertible {
    /// A short stable name, such as `psi` or `meminfo`.
    var name: String
    /// What exactly is watched, such as a file and a trigger.
    var detail: String

    /// Makes a description of a mechanism.
    init(name: String, detail: String = "") {
        self.name = name
        self.detail = detail
    }

    /// The name, and the detail in parentheses when there is one.
    var description: String { detail.isEmpty ? name : "\(name) (\(detail))" }
}

/// Where memory-pressure events come from: the operating system's signal, or a test's.
///
/// A ``MemoryPressureMonitor`` starts its source once, when the first subscriber
/// arrives, and stops it when the monitor goes away.
protocol MemoryPressureSource: AnyObject, Sendable {
    /// Begins calling `handler` on each event, from any thread, and says what it
    /// watches; nil when nothing can be watched here (the source then stays silent).
    func start(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism?
    /// Stops the events. When it returns, `handler` is no longer being called, except
    /// when `stop` is itself called from inside `handler`.
    func stop()
}

/// Fans memory-pressure events from one source out to any number of subscribers, such
/// as every ``ImageCache``.
///
/// One source serves them all, so a process watches the kernel once, not once per
/// cache. The source starts with the first subscription and runs until the monitor is
/// released: the shared monitor lives for the whole process, and starting and stopping
/// a kernel watch (a thread, open files) each time a cache comes and goes would cost
/// more than one idle thread.
///
/// An app with a signal of its own (a host's memory limit, a test) tells a monitor of
/// it with ``report(_:)``: the shared one, or one made with ``init()`` and handed to
/// the caches that should hear only that signal.
public final class MemoryPressureMonitor: Sendable {
    /// The monitor on the system's own signal: the memory warning on Apple platforms;
    /// on Linux PSI triggers, the cgroup's memory events, or `MemAvailable`.
    public static let shared = MemoryPressureMonitor(source: SystemMemoryPressureSource())

    private struct Handlers {
        var next = 0
        var all: [Int: @Sendable (MemoryPressureMonitor.Level) -> Void] = [:]
    }

    private struct Lifecycle {
        var started = false
        var mechanism: MemoryPressureMechanism?
    }

    private let source: (any MemoryPressureSource)?
    // Two locks, so that a source reporting while it is being started (from its own
    // thread, or even synchronously) needs only the handlers' lock.
    private let handlers = Locked(Handlers())
    private let lifecycle = Locked(Lifecycle())

    /// A monitor that watches nothing itself and hears only what ``report(_:)`` tells it.
    public init() {
        source = nil
    }

    /// Makes a monitor on `source`.
    init(source: any MemoryPressureSource) {
        self.source = source
    }

    deinit {
        if lifecycle.withLock({ $0.started }) { source?.stop() }
    }

    /// What the source watches; nil before the first subscription, or when nothing
    /// can be watched on this system.
    var mechanism: MemoryPressureMechanism? { lifecycle.withLock { $0.mechanism } }

    /// Calls `handler` on every event until the returned subscription is cancelled or
    /// released. Handlers run on the source's thread: keep them short.
    public func subscribe(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> Subscription {
        let id = handlers.withLock { handlers in
            defer { handlers.next += 1 }
            handlers.all[handlers.next] = handler
            return handlers.next
        }
        lifecycle.withLock { state in
            guard !state.started else { return }
            state.started = true
            // Weak: the source holds this closure, and the monitor holds the source.
            state.mechanism = source?.start { [weak self] level in self?.report(level) }
        }
        return Subscription(monitor: self, id: id)
    }

    fileprivate func unsubscribe(_ id: Int) {
        _ = handlers.withLock { $0.all.removeValue(forKey: id) }
    }

    /// Tells every subscriber of `level`, on the calling thread, as the system's signal
    /// does on its own: for an app's signal of its own, or a test's. Handlers run
    /// outside the monitor's lock, so that one may subscribe or cancel.
    public func report(_ level: MemoryPressureMonitor.Level) {
        let all = handlers.withLock { Array($0.all.values) }
        for handler in all { handler(level) }
    }

    /// A subscriber's place in a monitor; released or cancelled, the handler is called
    /// no more.
    public final class Subscription: Sendable {
        private let monitor: MemoryPressureMonitor
        private let id: Int

        fileprivate init(monitor: MemoryPressureMonitor, id: Int) {
            self.monitor = monitor
            self.id = id
        }

        deinit { monitor.unsubscribe(id) }

        /// Stops the handler now rather than when the subscription is released.
        public func cancel() { monitor.unsubscribe(id) }
    }
}
