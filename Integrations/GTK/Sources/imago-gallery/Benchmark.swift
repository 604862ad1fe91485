// The gallery measuring itself (`--benchmark`): what a user feels, as numbers. The
// first frame and the first screen of thumbnails, the main loop while the grid
// scrolls end to end at 3,000 points a second as images load, every cell on screen
// checked by its pixels against its own item's thumbnail, the peak memory, and the
// size thumbnails are decoded at.

import Foundation
import Imago
import ImagoGTK

/// Scrolls `grid` down to its end and back `passes` times once its first screen has
/// loaded, then prints the figures and quits the program.
@MainActor
func runBenchmark(
    grid: ImageGrid, window: UnsafeMutablePointer<GtkWidget>, loader: ImageLoader, passes: Int, started: Double
) {
    var shownIndex: [ObjectIdentifier: Int] = [:]
    var wrongDeliveries = 0
    /// Images and failures shown since the last frame.
    var deliveriesThisFrame = 0
    /// Notes what `cell`, bound to `index`, shows from now on.
    func watch(_ cell: ImageView, _ index: Int) {
        shownIndex[ObjectIdentifier(cell)] = nil
        cell.didDisplay = { [unowned cell] content in
            guard content.phase == .success || content.phase == .failure else { return }
            deliveriesThisFrame += 1
            shownIndex[ObjectIdentifier(cell)] = index
            // The image shown must be the one the memory cache holds for this item.
            if content.phase == .success, let image = content.image,
                let request = grid.request(for: index), let expected = loader.cachedImage(for: request), expected.bitmap.pixels != image.bitmap.pixels
            {
                wrongDeliveries += 1
            }
        }
    }
    // GTK binds the first cells as soon as the grid has its model.
    for (index, cell) in grid.boundCells { watch(cell, index) }
    let bind = grid.didBind
    grid.didBind = { cell, index in
        bind?(cell, index)
        watch(cell, index)
    }

    func visibleLoaded() -> Bool {
        let visible = grid.visibleRange
        guard !visible.isEmpty else { return false }
        let shown = grid.boundCells.filter { visible.contains($0.index) && shownIndex[ObjectIdentifier($0.view)] == $0.index }
        return shown.count == visible.count
    }

    var firstFrame: Double?
    var firstScreen: Double?
    var gaps: [Double] = []
    /// Each gap's main thread: seconds running, seconds waiting for a CPU, images shown.
    var gapDetails: [(gap: Double, running: Double, waiting: Double, deliveries: Int)] = []
    var lastSchedule = MainThreadSchedule.now()
    var last: Double?
    var skipGap = false
    var pass = 0, downwards = true, frame = 0
    var checked = 0, wrongPixels = 0
    var finishedAt: Double?

    /// Every cell on screen that shows its image, its middle pixel against the middle
    /// of its item's thumbnail.
    func checkPixels() {
        guard let capture = WidgetCapture.bitmap(of: window) else { return }
        var viewport = graphene_rect_t()
        guard gtk_widget_compute_bounds(grid.widget, window, &viewport) != 0 else { return }
        // The capture's pixels per point (the renderer's, not necessarily the screen's).
        let scale = Double(capture.width) / Double(max(1, gtk_widget_get_width(window)))
        for (index, view) in grid.boundCells where shownIndex[ObjectIdentifier(view)] == index {
            var bounds = graphene_rect_t()
            guard gtk_widget_get_mapped(view.widget) != 0, gtk_widget_compute_bounds(view.widget, window, &bounds) != 0,
                graphene_rect_contains_rect(&viewport, &bounds), let request = grid.request(for: index),
                let expected = loader.cachedImage(for: request),
                !view.loadingState.isCrossfading
            else { continue }
            let x = Int(Double(bounds.origin.x + bounds.size.width / 2) * scale)
            let y = Int(Double(bounds.origin.y + bounds.size.height / 2) * scale)
            guard x < capture.width, y < capture.height else { continue }
            let a = capture[x, y], b = expected.bitmap[expected.width / 2, expected.height / 2]
            let difference = max(abs(Int(a.r) - Int(b.r)), abs(Int(a.g) - Int(b.g)), abs(Int(a.b) - Int(b.b)))
            checked += 1
            if difference > 24 { wrongPixels += 1 }
        }
    }

    let adjustment = grid.verticalAdjustment
    addTickCallback(to: window) { _ in
        let now = monotonicSeconds()
        if firstFrame == nil { firstFrame = now - started }
        if firstScreen == nil {
            if visibleLoaded() { firstScreen = now - started }
            return true
        }
        if let finishedAt {
            guard visibleLoaded() || now - finishedAt > 30 else { return true }
            report()
            return false
        }
        let schedule = MainThreadSchedule.now()
        if let last, !skipGap {
            gaps.append(now - last)
            gapDetails.append((
                now - last, schedule.running - lastSchedule.running, schedule.waiting - lastSchedule.waiting,
                deliveriesThisFrame))
        }
        lastSchedule = schedule
        deliveriesThisFrame = 0
        skipGap = false
        let step = (last.map { now - $0 } ?? 0) * 3000
        last = now
        let bottom = gtk_adjustment_get_upper(adjustment) - gtk_adjustment_get_page_size(adjustment)
        let value = gtk_adjustment_get_value(adjustment)
        if downwards {
            gtk_adjustment_set_value(adjustment, min(bottom, value + step))
            if value + step >= bottom { downwards = false }
        } else {
            gtk_adjustment_set_value(adjustment, max(0, value - step))
            if value - step <= 0 {
                pass += 1
                downwards = true
                if pass == passes { finishedAt = now }
            }
        }
        frame += 1
        if frame % 30 == 0 {
            checkPixels()
            // The capture's own time is not the grid's.
            skipGap = true
        }
        return true
    }

    func report() {
        checkPixels()
        let sorted = gaps.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] * 1000 }
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let peak = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }.map {
            $0.split(separator: " ").dropFirst().first.map(String.init) ?? "?"
        } ?? "?"
        let s = grid.statistics
        print(String(
            format: "benchmark: %d images, %d columns, scale %d; first frame %.2f s, first screen loaded %.2f s",
            grid.count, grid.columns, Int(gtk_widget_get_scale_factor(window)), firstFrame ?? -1, firstScreen ?? -1))
        print(String(
            format: "benchmark: %d passes end to end at 3000 pt/s: %d frames, gaps median %.1f ms, p99 %.1f ms, max %.1f ms",
            passes, sorted.count, percentile(0.5), percentile(0.99), (sorted.last ?? 0) * 1000))
        let long = gapDetails.filter { $0.gap > 0.05 }
        if !long.isEmpty {
            let total = long.reduce(0) { $0 + $1.gap }
            let running = long.reduce(0) { $0 + $1.running }, waiting = long.reduce(0) { $0 + $1.waiting }
            print(String(
                format: "benchmark: gaps over 50 ms: %d, %.0f ms in all: main thread running %.0f %%, waiting for a CPU %.0f %%, asleep %.0f %%; images shown in them: median %d, max %d",
                long.count, total * 1000, 100 * running / total, 100 * waiting / total, 100 * max(0, total - running - waiting) / total,
                long.map(\.deliveries).sorted()[long.count / 2], long.map(\.deliveries).max() ?? 0))
        }
        if ProcessInfo.processInfo.environment["IMAGO_GALLERY_GAPS"] != nil {
            for detail in gapDetails where detail.gap > 0.05 {
                print(String(
                    format: "benchmark: gap %.1f ms: running %.1f ms, waiting %.1f ms, %d images shown",
                    detail.gap * 1000, detail.running * 1000, detail.waiting * 1000, detail.deliveries))
            }
        }
        print("benchmark: cells on screen checked by pixels \(checked), wrong \(wrongPixels); deliveries not the item's own \(wrongDeliveries)")
        print("benchmark: loaded \(s.loaded), failed \(s.failed), memory hits \(s.memoryHits), disk hits \(s.diskHits); peak RSS \(Int(peak).map { "\($0 / 1024) MB" } ?? peak)")
        if let (index, view) = grid.boundCells.first(where: { grid.visibleRange.contains($0.index) }), let shown = view.image,
            let request = grid.request(for: index), let target = request.targetSize
        {
            // The same photo decoded straight at the cell's pixel size, with no cache.
            let direct = ImageLoader(configuration: .init(recentOriginals: nil, recentFailures: nil), cache: nil)
            let url = request.url
            Task { @MainActor in
                let fresh = try? await direct.image(for: ImageRequest(url: url, targetSize: target)).image
                var difference = -1
                if let fresh, fresh.width == shown.width, fresh.height == shown.height {
                    difference = zip(fresh.bitmap.pixels, shown.bitmap.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
                }
                print("benchmark: cell \(index) shows \(shown.width)×\(shown.height) pixels for a \(target.width)×\(target.height) target; max difference from a direct decode at that size \(difference)")
                gtk_window_destroy(window.cast(GtkWindow.self))
            }
        } else {
            gtk_window_destroy(window.cast(GtkWindow.self))
        }
    }
}

/// The main thread's time on a CPU and waiting for one, from the kernel's scheduler
/// statistics (zero where there are none): what tells a frame that took long because
/// of the main thread's own work from one that was kept off the CPUs by other threads.
struct MainThreadSchedule {
    var running = 0.0
    var waiting = 0.0

    /// Read on the main thread, which the benchmark's frames run on.
    @MainActor
    static func now() -> MainThreadSchedule {
        var buffer = [UInt8](repeating: 0, count: 128)
        let fd = open("/proc/thread-self/schedstat", O_RDONLY)
        guard fd >= 0 else { return .init() }
        defer { close(fd) }
        let count = read(fd, &buffer, buffer.count)
        guard count > 0 else { return .init() }
        let fields = String(decoding: buffer[..<count], as: UTF8.self).split(separator: " ").compactMap { Double($0) }
        guard fields.count >= 2 else { return .init() }
        return MainThreadSchedule(running: fields[0] / 1e9, waiting: fields[1] / 1e9)
    }
}
