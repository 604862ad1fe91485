import Foundation
import Imago
import ImagoGTK
import Synchronization
import XCTest

/// GTK for tests: XCTest runs each test on the main thread, which is GTK's thread
/// and the main actor's, so a test drives the GLib main loop itself, one iteration at
/// a time, while it waits. Main-actor jobs (the views' updates) run inside those
/// iterations, through the main queue's GLib source, as in an application.
@MainActor
enum GTK {
    private static var initialized = false

    /// Initialises GTK once per process. GTK needs a display: the Makefile runs the
    /// tests under `xvfb-run` when there is none, with the Cairo renderer, whose
    /// output is the same on every machine.
    static func initialize() throws {
        guard !initialized else { return }
        guard ProcessInfo.processInfo.environment["DISPLAY"] != nil
            || ProcessInfo.processInfo.environment["WAYLAND_DISPLAY"] != nil
        else { throw XCTSkip("no display: run under xvfb-run (make test does)") }
        setenv("GSK_RENDERER", "cairo", 0)
        gtk_init()
        attachMainActorToGLib()
        initialized = true
    }

    /// Runs the main loop until `condition` holds or `timeout` seconds pass; returns
    /// whether it holds. Never blocks in GLib, so a quiet loop cannot hang the test.
    @discardableResult
    static func run(until condition: () -> Bool, timeout: Double) -> Bool {
        let deadline = monotonicSeconds() + timeout
        while !condition() {
            if monotonicSeconds() > deadline { return false }
            if g_main_context_iteration(nil, 0) == 0 { usleep(1000) }
        }
        return true
    }

    /// Runs the main loop for `seconds`.
    static func run(for seconds: Double) {
        run(until: { false }, timeout: seconds)
    }

    /// What `widget` draws now. On a loaded machine a window may not have been
    /// allocated or drawn yet at the moment a test asks (the capture is then nil), so
    /// the main loop runs until it has, for up to ten seconds; a widget that never
    /// draws still fails the test.
    static func capture(_ widget: UnsafeMutablePointer<GtkWidget>, file: StaticString = #filePath, line: UInt = #line) throws -> Bitmap {
        var bitmap = WidgetCapture.bitmap(of: widget)
        if bitmap == nil { run(until: { bitmap = WidgetCapture.bitmap(of: widget); return bitmap != nil }, timeout: 10) }
        return try XCTUnwrap(
            bitmap, "nothing drawn: \(gtk_widget_get_width(widget))×\(gtk_widget_get_height(widget)), mapped \(gtk_widget_get_mapped(widget))",
            file: file, line: line)
    }

    /// A window of `width` × `height` showing `child`, presented and laid out.
    static func window(width: Int32, height: Int32, child: UnsafeMutablePointer<GtkWidget>) -> Window {
        let window = gtk_window_new()!
        gtk_window_set_default_size(window.cast(GtkWindow.self), width, height)
        gtk_window_set_child(window.cast(GtkWindow.self), child)
        gtk_window_present(window.cast(GtkWindow.self))
        run(until: { gtk_widget_get_mapped(child) != 0 && gtk_widget_get_width(child) > 0 }, timeout: 10)
        return Window(widget: window)
    }

    /// A window the test closes when it ends.
    @MainActor
    final class Window {
        let widget: UnsafeMutablePointer<GtkWidget>
        init(widget: UnsafeMutablePointer<GtkWidget>) { self.widget = widget }

        func close() {
            gtk_window_destroy(widget.cast(GtkWindow.self))
            GTK.run(for: 0.05)
        }
    }
}

/// Pixel comparisons with a tolerance: rendering through Cairo may round a
/// premultiplied value by a step or two.
enum Pixels {
    /// The largest difference of any channel between two bitmaps of one size.
    static func maximumDifference(_ a: Bitmap, _ b: Bitmap) -> Int {
        precondition(a.width == b.width && a.height == b.height, "bitmaps of different sizes")
        var worst = 0
        for y in 0..<a.height {
            for x in 0..<a.width {
                let p = a[x, y], q = b[x, y]
                worst = max(
                    worst, abs(Int(p.r) - Int(q.r)), abs(Int(p.g) - Int(q.g)), abs(Int(p.b) - Int(q.b)),
                    abs(Int(p.a) - Int(q.a)))
            }
        }
        return worst
    }

    /// An opaque bitmap of one colour.
    static func solid(width: Int, height: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8) -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for i in stride(from: 0, to: pixels.count, by: 4) {
            pixels[i] = r
            pixels[i + 1] = g
            pixels[i + 2] = b
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// The colour that stands for item `index` (below 216) of a test set: channels
    /// 45 apart, so a scaled or blended pixel is still told apart from its neighbours.
    static func colour(_ index: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        (UInt8(20 + (index % 6) * 45), UInt8(20 + (index / 6 % 6) * 45), UInt8(20 + (index / 36) * 45))
    }

    /// The index whose colour is nearest to `pixel`, and how far it is.
    static func index(of pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8)) -> (index: Int, distance: Int) {
        func channel(_ value: UInt8) -> Int { max(0, min(5, Int(((Double(value) - 20) / 45).rounded()))) }
        let index = channel(pixel.r) + channel(pixel.g) * 6 + channel(pixel.b) * 36
        let c = colour(index)
        let distance = max(abs(Int(c.r) - Int(pixel.r)), abs(Int(c.g) - Int(pixel.g)), abs(Int(c.b) - Int(pixel.b)))
        return (index, distance)
    }

    /// PNG bytes of `bitmap`, made by Imago's encoder (libpng).
    static func png(_ bitmap: Bitmap) throws -> Data {
        try ImageEncoders.encoder(for: .png)!.encode(bitmap)
    }
}

/// The repository's files, found from this source file.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func sample(_ name: String) throws -> Data {
        try Data(contentsOf: root.appendingPathComponent("Samples").appendingPathComponent(name))
    }
}

/// A decoder that notes which thread each decode runs on, around the real ones.
final class ThreadRecordingDecoder: ImageDecoding {
    private let real = ImageDecoderRegistry()
    private let counts = Mutex((decodes: 0, onMainThread: 0))

    func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
        real.decoder(for: data) != nil
    }

    func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        let main = Thread.isMainThread
        counts.withLock {
            $0.decodes += 1
            if main { $0.onMainThread += 1 }
        }
        return try real.decode(data, options: options)
    }

    /// Decodes so far, and how many of them ran on the main thread.
    var tally: (decodes: Int, onMainThread: Int) { counts.withLock { $0 } }
}
