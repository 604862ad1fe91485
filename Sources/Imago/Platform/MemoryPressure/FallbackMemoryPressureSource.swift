#if !os(Linux) && !canImport(Darwin)

/// No memory-pressure signal is known on this platform: the source stays silent.
public final class SystemMemoryPressureSource: MemoryPressureSource {
    /// Makes a silent source.
    public init() {}
    /// Watches nothing: returns nil.
    public func start(_ handler: @escaping @Sendable (MemoryPressureLevel) -> Void) -> MemoryPressureMechanism? { nil }
    /// Does nothing.
    public func stop() {}
}

#endif
