#if !os(Linux) && !canImport(Darwin)

/// No memory-pressure signal is known on this platform: the source stays silent.
final class SystemMemoryPressureSource: MemoryPressureSource {
    /// Makes a silent source.
    init() {}
    /// Watches nothing: returns nil.
    func start(_ handler: @escaping @Sendable (MemoryPressureMonitor.Level) -> Void) -> MemoryPressureMechanism? { nil }
    /// Does nothing.
    func stop() {}
}

#endif
