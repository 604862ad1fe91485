// The few GLib and GObject calls Swift cannot make as they are: `g_signal_connect`
// and the cast macros are C macros, and GObject wants C function pointers, which
// cannot capture. Closures travel as retained boxes in the callbacks' user data,
// released by GLib's destroy notifications.

@_exported import CGTK
import CImagoGTK

/// A GTK widget pointer as GTK's functions taking a concrete widget type want it
/// (`GtkPicture *`, `GtkOverlay *`…), which Swift imports as `OpaquePointer`.
extension UnsafeMutablePointer where Pointee == GtkWidget {
    /// The same object, for calls that take an opaque widget subtype.
    public var opaque: OpaquePointer { OpaquePointer(self) }
    /// The same object, for calls that take a `gpointer` (`g_object_ref`, signals).
    public var object: UnsafeMutableRawPointer { UnsafeMutableRawPointer(self) }
    /// The same object as a widget subtype whose struct GTK makes public
    /// (`GtkWindow`, `GtkBox`…): what `GTK_WINDOW (widget)` does in C.
    public func cast<T>(_ type: T.Type) -> UnsafeMutablePointer<T> {
        UnsafeMutableRawPointer(self).assumingMemoryBound(to: T.self)
    }
}

/// Runs `body` on the main actor from a GTK callback. GTK calls back on the main
/// thread only, which is the main actor's thread on Linux; the check still traps if
/// that ever stops being true rather than racing.
@inline(__always)
func onMainActor(_ body: @MainActor () -> Void) {
    MainActor.assumeIsolated(body)
}

/// A Swift closure kept alive for as long as GLib holds its callback.
///
/// `@unchecked Sendable`: the closure is only ever called on the main thread, by GTK.
private final class CallbackBox: @unchecked Sendable {
    let call: @MainActor (UnsafeMutableRawPointer?) -> Void
    init(_ call: @escaping @MainActor (UnsafeMutableRawPointer?) -> Void) { self.call = call }
}

/// Connected with `G_CONNECT_SWAPPED`, a handler gets its user data first and the
/// signal's first argument (or, for signals without any, the instance) second, so one
/// trampoline serves every signal that returns nothing.
private let signalTrampoline: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = { data, argument in
    guard let data else { return }
    let box = Unmanaged<CallbackBox>.fromOpaque(data).takeUnretainedValue()
    // A GObject pointer GTK hands over on the main thread, used there.
    nonisolated(unsafe) let argument = argument
    onMainActor { box.call(argument) }
}

private let releaseBox: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GClosure>?) -> Void = { data, _ in
    if let data { Unmanaged<CallbackBox>.fromOpaque(data).release() }
}

/// Connects `handler` to `signal` of `instance`. The handler receives the signal's
/// first argument (a list item for a factory's `bind`, say), or the instance for
/// signals without arguments. Only for signals whose handlers return nothing.
@MainActor @discardableResult
public func connectSignal(
    _ instance: UnsafeMutableRawPointer, _ signal: String,
    _ handler: @escaping @MainActor (_ argument: UnsafeMutableRawPointer?) -> Void
) -> UInt {
    let box = Unmanaged.passRetained(CallbackBox(handler)).toOpaque()
    return UInt(g_signal_connect_data(
        instance, signal, unsafeBitCast(signalTrampoline, to: GCallback.self), box,
        releaseBox, G_CONNECT_SWAPPED))
}

/// A Swift closure taking a signal's unsigned argument (a position), kept alive for as
/// long as GLib holds its callback.
///
/// `@unchecked Sendable`: the closure is only ever called on the main thread, by GTK.
private final class PositionCallbackBox: @unchecked Sendable {
    let call: @MainActor (UInt32) -> Void
    init(_ call: @escaping @MainActor (UInt32) -> Void) { self.call = call }
}

/// Swapped, a handler of a signal with one `guint` argument gets its user data, the
/// argument, then the instance.
private let positionTrampoline: @convention(c) (UnsafeMutableRawPointer?, UInt32, UnsafeMutableRawPointer?) -> Void = { data, position, _ in
    guard let data else { return }
    let box = Unmanaged<PositionCallbackBox>.fromOpaque(data).takeUnretainedValue()
    onMainActor { box.call(position) }
}

private let releasePositionBox: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<GClosure>?) -> Void = { data, _ in
    if let data { Unmanaged<PositionCallbackBox>.fromOpaque(data).release() }
}

/// Connects `handler` to `signal` of `instance`, a signal whose one argument is a
/// `guint` (a list or grid view's `activate`, say) and whose handlers return nothing.
@MainActor @discardableResult
public func connectPositionSignal(
    _ instance: UnsafeMutableRawPointer, _ signal: String, _ handler: @escaping @MainActor (_ position: UInt32) -> Void
) -> UInt {
    let box = Unmanaged.passRetained(PositionCallbackBox(handler)).toOpaque()
    return UInt(g_signal_connect_data(
        instance, signal, unsafeBitCast(positionTrampoline, to: GCallback.self), box,
        releasePositionBox, G_CONNECT_SWAPPED))
}

/// Makes the GLib main loop run the main actor's jobs (see `imago_gtk_attach_main_queue`):
/// `Task { @MainActor in … }` and Imago's view updates reach widgets only through it.
/// `ImageView` calls it; a program that awaits on the main actor before making one
/// calls it itself. Idempotent; main thread only.
@MainActor
public func attachMainActorToGLib() {
    _ = imago_gtk_attach_main_queue()
}

/// Seconds on GLib's monotonic clock, the clock GTK's frame clock counts in.
public func monotonicSeconds() -> Double {
    Double(g_get_monotonic_time()) / 1_000_000
}

/// One strong reference to a GObject (a widget, a texture), dropped with the value.
///
/// `@unchecked Sendable`: it only holds the pointer, and GObject reference counting is
/// thread-safe, so the last holder may go on any thread.
final class ObjectReference: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer

    /// Takes over a reference the caller owns.
    init(taking pointer: UnsafeMutableRawPointer) {
        self.pointer = pointer
    }

    /// Adds a reference of its own.
    init(retaining pointer: UnsafeMutableRawPointer) {
        self.pointer = g_object_ref(pointer)
    }

    deinit {
        g_object_unref(pointer)
    }
}

/// A Swift closure run on each frame of a widget's frame clock.
///
/// `@unchecked Sendable`: GTK calls it on the main thread only.
private final class TickBox: @unchecked Sendable {
    let call: @MainActor (Double) -> Bool
    init(_ call: @escaping @MainActor (Double) -> Bool) { self.call = call }
}

private let tickBoxTrampoline: GtkTickCallback = { _, clock, data in
    guard let data else { return 0 }
    let box = Unmanaged<TickBox>.fromOpaque(data).takeUnretainedValue()
    let time = Double(gdk_frame_clock_get_frame_time(clock)) / 1_000_000
    return MainActor.assumeIsolated { box.call(time) } ? 1 : 0
}

private let releaseTickBox: GDestroyNotify = { data in
    if let data { Unmanaged<TickBox>.fromOpaque(data).release() }
}

/// Runs `body` on every frame of `widget`'s frame clock while the widget is mapped,
/// with the frame's time in seconds (`monotonicSeconds()`'s clock), until it returns
/// false. Returns the id `gtk_widget_remove_tick_callback` takes.
@MainActor @discardableResult
public func addTickCallback(
    to widget: UnsafeMutablePointer<GtkWidget>, _ body: @escaping @MainActor (_ frameTime: Double) -> Bool
) -> UInt32 {
    let box = Unmanaged.passRetained(TickBox(body)).toOpaque()
    return gtk_widget_add_tick_callback(widget, tickBoxTrampoline, box, releaseTickBox)
}
