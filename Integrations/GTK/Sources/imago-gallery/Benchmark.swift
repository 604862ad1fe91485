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
    /// Notes what `cell`, bound to `index`, shows from now on.
    func watch(_ cell: ImageView, _ index: Int) {
        shownIndex[ObjectIdentifier(cell)] = nil
        cell.didDisplay = { [unowned cell] content in
            guard content.phase == .success || content.phase == .failure else { return }
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
        if let last, !skipGap { gaps.append(now - last) }
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
