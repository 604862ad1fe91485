import Foundation

/// A value only reachable with its lock held. The library's own `Locked` is visible
/// only inside Imago's package, and the GTK package compiles these sources too.
///
/// `@unchecked Sendable`: the value is only reached through `withLock`.
final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` on the value with the lock held.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
