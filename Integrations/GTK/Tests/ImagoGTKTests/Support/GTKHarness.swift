import Dispatch
import Foundation
import Imago
import ImagoUI
import ImagoGTK
import Synchronization
import Testing
import _ImagoTestSupport

/// GTK for tests. A test is `@MainActor` and GTK is only ever touched from the main
/// actor, so one thread at a time uses it, in order, as in an application. Under
/// `swift test` on Linux the main actor is not the process's first thread: Swift
/// Testing's entry point parks that thread in `dispatch_main()`, and the main queue
/// (the main actor's executor) is served by a thread of libdispatch's pool. So the
/// GLib main loop is not attached to the main queue here (that needs the queue to
/// belong to the first thread); a test runs GLib's iterations itself while it waits,
/// and the main actor's jobs (the views' updates) run whenever the test suspends.
@MainActor
enum GTK {
    private static var initialized = false

    /// Whether there is a display to open windows on. The Makefile runs the tests
    /// under `xvfb-run` when there is none, with the Cairo renderer, whose output is
    /// the same on every machine.
    nonisolated static var hasDisplay: Bool {
        ProcessInfo.processInfo.environment["DISPLAY"] != nil
            || ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil
    }

    /// Initialises GTK once per process.
    static func initialize() {
        guard !initialized else { return }
        setenv("GSK_RENDERER", "cairo", 0)
        gtk_init()
        DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
        initialized = true
    }

    /// Marks the main queue, so that code anywhere can tell whether it runs on the
    /// main actor (`isOnMainActor`).
    nonisolated private static let mainQueueKey = DispatchSpecificKey<Bool>()

    /// Whether the caller runs on the main actor: on the main queue, whichever thread
    /// serves it.
    nonisolated static var isOnMainActor: Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

    /// Runs what the GLib main loop has ready, then lets the main actor's other jobs
    /// run. Neither waits for the concurrency pool, which a test may keep busy
    /// decoding: the main loop keeps its pace, as in an application.
    static func pump() async {
        var dispatched = 0
        while g_main_context_iteration(nil, 0) != 0, dispatched < 100 { dispatched += 1 }
        if dispatched == 0 { usleep(500) }
        await Task.yield()
    }

    /// Runs the main loop, and the main actor's jobs, until `condition` holds; records
    /// `comment` when it does not within `seconds` of waiting (see `waitUntil`).
    @discardableResult
    static func waitUntil(
        _ comment: @autoclosure () -> Comment? = nil, seconds: Double = 60,
        sourceLocation: SourceLocation = #_sourceLocation, _ condition: () -> Bool
    ) async -> Bool {
        await _ImagoTestSupport.waitUntil(comment(), seconds: seconds, sourceLocation: sourceLocation, pause: pump, condition)
    }

    /// Runs the main loop, and the main actor's jobs, for `seconds`.
    static func run(for seconds: Double) async {
        let end = ContinuousClock.now + .seconds(seconds)
        repeat { await pump() } while ContinuousClock.now < end
    }

    /// What `widget` draws now. On a loaded machine a window may not have been
    /// allocated or drawn yet at the moment a test asks (the capture is then nil), so
    /// the main loop runs until it has; a widget that never draws still fails the test.
    static func capture(_ widget: UnsafeMutablePointer<GtkWidget>, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Bitmap {
        var bitmap = WidgetCapture.bitmap(of: widget)
        if bitmap == nil {
            await waitUntil(sourceLocation: sourceLocation) { bitmap = WidgetCapture.bitmap(of: widget); return bitmap != nil }
        }
        return try #require(
            bitmap, "nothing drawn: \(gtk_widget_get_width(widget))×\(gtk_widget_get_height(widget)), mapped \(gtk_widget_get_mapped(widget))",
            sourceLocation: sourceLocation)
    }

    /// A loader of its own for a test, with no disk tier, so nothing is cached between
    /// tests or runs.
    static func targetLoader() -> ImageTargetLoader {
        ImageTargetLoader(loader: ImageLoader(configuration: .init(), cache: ImageCache(memoryPressure: nil)))
    }

    /// A window of `width` × `height` showing `child`, presented and laid out.
    static func window(
        width: Int32, height: Int32, child: UnsafeMutablePointer<GtkWidget>, sourceLocation: SourceLocation = #_sourceLocation
    ) async -> Window {
        let window = gtk_window_new()!
        gtk_window_set_default_size(window.cast(GtkWindow.self), width, height)
        gtk_window_set_child(window.cast(GtkWindow.self), child)
        gtk_window_present(window.cast(GtkWindow.self))
        await waitUntil(sourceLocation: sourceLocation) { gtk_widget_get_mapped(child) != 0 && gtk_widget_get_width(child) > 0 }
        return Window(widget: window)
    }

    /// A window the test closes when it ends.
    @MainActor
    final class Window {
        let widget: UnsafeMutablePointer<GtkWidget>
        init(widget: UnsafeMutablePointer<GtkWidget>) { self.widget = widget }

        /// Destroys the window and lets GLib handle what that set off (a `defer`
        /// cannot wait, so the main actor's jobs run at the next test's first wait).
        func close() {
            gtk_window_destroy(widget.cast(GtkWindow.self))
            var dispatched = 0
            while g_main_context_iteration(nil, 0) != 0, dispatched < 100 { dispatched += 1 }
        }
    }
}

/// The trait of every suite that opens GTK windows: its tests run only where there
/// is a display, one at a time across all such suites (they share GLib's main loop,
/// and one test's windows would draw into another's captures and frame timings),
/// each with GTK initialised.
struct GTKWindows: SuiteTrait, TestTrait, TestScoping {
    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else { return try await function() }
        await Self.turns.take()
        do {
            await GTK.initialize()
            try await function()
        } catch {
            Self.turns.give()
            throw error
        }
        Self.turns.give()
    }

    /// One test at a time: those waiting for their turn, in order.
    private static let turns = Turns()

    final class Turns: Sendable {
        private let state = Mutex((busy: false, waiting: [CheckedContinuation<Void, Never>]()))

        func take() async {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool in
                    if !state.busy {
                        state.busy = true
                        return true
                    }
                    state.waiting.append(continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        }

        func give() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if state.waiting.isEmpty {
                    state.busy = false
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }
}

extension Trait where Self == GTKWindows {
    /// Tests in GTK windows: see `GTKWindows`.
    static var gtkWindows: Self { GTKWindows() }
}

extension Trait where Self == ConditionTrait {
    /// Runs the tests only where there is a display (the Makefile provides Xvfb).
    static var display: Self {
        .enabled(if: GTK.hasDisplay, "no display: run under xvfb-run (make test does)")
    }
}

/// A decoder that notes, around the real ones, whether each decode runs on the main
/// actor, where it would hold up the main loop.
final class MainActorRecordingDecoder: ImageDecoding {
    private let real = ImageDecoders.Registry()
    private let counts = Mutex((decodes: 0, onMainActor: 0))

    func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        real.decoder(for: data) != nil
    }

    func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        let main = GTK.isOnMainActor
        counts.withLock {
            $0.decodes += 1
            if main { $0.onMainActor += 1 }
        }
        return try real.decode(data, options: options)
    }

    /// Decodes so far, and how many of them ran on the main actor.
    var tally: (decodes: Int, onMainActor: Int) { counts.withLock { $0 } }
}
