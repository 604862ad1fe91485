#if canImport(Darwin)
import Foundation

/// The system's own memory-pressure signal on Apple platforms: the dispatch
/// memory-pressure source (warning and critical), and on UIKit platforms the
/// application's memory warning, reported as critical because iOS sends it just
/// before it terminates apps.
final class SystemMemoryPressureSource: MemoryPressureSource, @unchecked Sendable {
    // Unchecked: `sources` and `observer` are only touched with `lock` held.

    // The UIKit constant's value, spelt out: `UIApplication` is main-actor isolated
    // and `start` may run on any thread.
    private static let memoryWarning = Notification.Name("UIApplicationDidReceiveMemoryWarningNotification")
    private static let mechanism = MemoryPressureMechanism(name: "dispatch-memory-pressure")

    private let lock = Lock()
    private var sources: [any DispatchSourceMemoryPressure] = []
    private var observer: (any NSObjectProtocol)?

    /// Makes a source; nothing is watched until `start`.
    init() {}

    /// Listens to the dispatch source and, with UIKit, the memory warning.
    func start(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism? {
        lock.withLock { startWatching(handler) }
    }

    /// `start`, with the lock held.
    private func startWatching(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism? {
        guard sources.isEmpty else { return Self.mechanism }
        // One dispatch source per level, so the handler needs no access to the
        // source to learn which level fired.
        let levels: [(DispatchSource.MemoryPressureEvent, MemoryPressureMonitor.Level)] = [(.warning, .warning), (.critical, .critical)]
        for (mask, level) in levels {
            let source = DispatchSource.makeMemoryPressureSource(eventMask: mask, queue: .global(qos: .utility))
            source.setEventHandler { handler(level) }
            source.resume()
            sources.append(source)
        }
        #if canImport(UIKit)
        observer = NotificationCenter.default.addObserver(forName: Self.memoryWarning, object: nil, queue: nil) { _ in
            handler(.critical)
        }
        #endif
        return Self.mechanism
    }

    /// Cancels the dispatch sources and the observer.
    func stop() {
        lock.withLock {
            for source in sources { source.cancel() }
            sources = []
            if let observer { NotificationCenter.default.removeObserver(observer) }
            observer = nil
        }
    }
}

#endif
