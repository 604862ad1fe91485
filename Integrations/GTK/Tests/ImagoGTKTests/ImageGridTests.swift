import Foundation
import Imago
import ImagoUI
import ImagoGTK
import _ImagoTestSupport
import Testing

/// The grid of recycled cells in a real GTK window, scrolled programmatically from
/// top to bottom and back at a fixed rate while a real server answers with random
/// delays.
@MainActor @Suite(.display, .gtkWindows) struct ImageGridTests {
    /// Scrolls `grid` to the bottom and back to the top at `pixelsPerSecond`, on the
    /// frame clock; returns the gaps between frames, in seconds. With `busyTicks`,
    /// that share of the frames is held up 5–15 ms first, as a layout pass elsewhere
    /// in the window would.
    private static func scrollDownAndBack(_ grid: ImageGrid, pixelsPerSecond: Double, busyTicks: Double = 0) async -> [Double] {
        let adjustment = grid.verticalAdjustment
        var gaps: [Double] = []
        var last: Double?
        var downwards = true
        var done = false
        addTickCallback(to: grid.widget) { _ in
            // The wall clock, not the frame time: a late frame must show as a long gap.
            if busyTicks > 0, Double.random(in: 0..<1) < busyTicks { usleep(UInt32.random(in: 5_000...15_000)) }
            let now = monotonicSeconds()
            let step = (last.map { now - $0 } ?? 0) * pixelsPerSecond
            if let last { gaps.append(now - last) }
            last = now
            let bottom = gtk_adjustment_get_upper(adjustment) - gtk_adjustment_get_page_size(adjustment)
            let value = gtk_adjustment_get_value(adjustment)
            if downwards {
                gtk_adjustment_set_value(adjustment, min(bottom, value + step))
                if value + step >= bottom { downwards = false }
            } else {
                gtk_adjustment_set_value(adjustment, max(0, value - step))
                if value - step <= 0 { done = true }
            }
            return !done
        }
        await GTK.waitUntil("the scroll finished", seconds: 120) { done }
        return gaps
    }

    private static func loader(decoder: MainActorRecordingDecoder) -> ImageTargetLoader {
        let loader = ImageLoader(
            configuration: .init(decoders: ImageDecoders.Registry(decoders: [decoder])),
            cache: ImageCache(memoryPressure: nil))
        loader.concurrentLoads = 6
        return ImageTargetLoader(loader: loader)
    }

    /// A grid that really recycles: four columns (the 200-point window holds four
    /// 40-point cells), so GTK keeps about a hundred and thirty cells for 2,000 items and binds each many times over while it scrolls down and back,
    /// the server answering after random delays and one frame in twenty held up, so
    /// that images land on cells already rebound. Every image a cell is given is
    /// checked against the item it is bound to at that moment, and the cells on screen
    /// at the end by their pixels.
    @Test func recycledCellsShowOnlyTheirOwnItemsImages() async throws {
        let server = try TestServer.colours(200) { Double.random(in: 0...0.08) }
        defer { server.stop() }
        let decoder = MainActorRecordingDecoder()
        let urls = (0..<2000).map { server.url("/img/\($0 % 200)?item=\($0)") }
        let grid = ImageGrid(urls: urls, cellSize: 40, targetLoader: Self.loader(decoder: decoder))
        grid.options.crossfadeDuration = 0.2

        // Which item each cell is bound to, how often each was bound, and every
        // image it showed that was not its item's.
        var bound: [ObjectIdentifier: Int] = [:]
        var binds: [ObjectIdentifier: Int] = [:]
        var wrong: [String] = []
        var shown = 0
        grid.didBind = { view, index in
            bound[ObjectIdentifier(view)] = index
            binds[ObjectIdentifier(view), default: 0] += 1
            view.didDisplay = { [unowned view] content in
                guard content.phase == .success, let image = content.image else { return }
                shown += 1
                let found = Pixels.index(of: image.bitmap[image.width / 2, image.height / 2])
                guard let item = bound[ObjectIdentifier(view)] else {
                    wrong.append("an unbound cell showed the image of URL \(found.index)")
                    return
                }
                if found.index != item % 200 || found.distance > 6 {
                    wrong.append("item \(item) showed the image of URL \(found.index)")
                }
            }
        }
        grid.didUnbind = { view, _ in bound[ObjectIdentifier(view)] = nil }

        let window = await GTK.window(width: 200, height: 300, child: grid.widget)
        defer { window.close() }
        let gaps = await Self.scrollDownAndBack(grid, pixelsPerSecond: 3000, busyTicks: 0.05)
        let cellCount = binds.count, mostBinds = binds.values.max() ?? 0
        #expect(grid.columns == 4, "as many columns as the width holds")
        #expect(cellCount < 400, "the grid recycles: \(cellCount) cells for 2,000 items")
        #expect(mostBinds >= 5, "cells are bound again and again as the grid scrolls")

        // Settled: every cell on screen has its image, fully faded in (cells bound
        // off screen load only when they scroll near).
        await GTK.waitUntil("every cell on screen finished loading: \(grid.statistics)") {
            let visible = grid.visibleRange
            return grid.statistics.inFlight == 0 && grid.boundCells.filter { visible.contains($0.index) }.allSatisfy {
                $0.view.loadingState.image != nil && !$0.view.loadingState.isCrossfading
            }
        }
        await GTK.run(for: 0.1)
        let captureStarted = monotonicSeconds()
        let capture = try await GTK.capture(window.widget)
        let captureTime = monotonicSeconds() - captureStarted
        var viewport = graphene_rect_t()
        #expect(gtk_widget_compute_bounds(grid.widget, window.widget, &viewport) != 0)
        var checked = 0
        for (index, view) in grid.boundCells {
            var bounds = graphene_rect_t()
            // Cells scrolled out of view stay bound for a while, unmapped, at their
            // old places: only those on screen are looked at.
            guard gtk_widget_get_mapped(view.widget) != 0,
                gtk_widget_compute_bounds(view.widget, window.widget, &bounds) != 0,
                graphene_rect_contains_rect(&viewport, &bounds)
            else { continue }
            let x = Int(bounds.origin.x + bounds.size.width / 2), y = Int(bounds.origin.y + bounds.size.height / 2)
            let found = Pixels.index(of: capture[x, y])
            #expect(found.index == index % 200, "the cell of item \(index) at (\(x), \(y)) shows its own image")
            #expect(found.distance <= 6)
            checked += 1
        }
        print(String(
            format: "grid reuse: %d frames scrolled (one in twenty held 5–15 ms), %d cells bound %d times in all (at most %d each), %d images shown, %d wrong, %d visible cells checked, capture %.1f ms; %@",
            gaps.count, cellCount, binds.values.reduce(0, +), mostBinds, shown, wrong.count, checked, captureTime * 1000,
            String(describing: grid.statistics)))
        #expect(checked >= 12, "the window shows several rows of cells")
        #expect(wrong == [], "no cell ever showed another item's image")
        #expect(decoder.tally.onMainActor == 0, "no decode on the main loop")
    }

    /// Columns from the width and the cell size, square cells of the size asked for,
    /// and only the rows about the screen bound.
    @Test func columnsComeFromTheWidthAndCellsAreSquare() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
        server.route("/item", data: png, headers: ["Content-Type": "image/png"])
        let urls = (0..<5200).map { server.url("/item?n=\($0)") }
        let grid = ImageGrid(urls: urls, cellSize: 160, targetLoader: Self.loader(decoder: MainActorRecordingDecoder()))
        let window = await GTK.window(width: 900, height: 640, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil { grid.columns == 5 && grid.statistics.inFlight == 0 && !grid.boundCells.isEmpty }
        await GTK.run(for: 0.2)
        let bound = grid.boundCells
        // GTK binds about thirty rows of the most columns it may show.
        #expect(bound.count <= 5 * 40, "\(bound.count) cells bound for 5,200 items")
        for (index, view) in bound where gtk_widget_get_mapped(view.widget) != 0 {
            #expect(gtk_widget_get_width(view.widget) == 160, "cell \(index) is 160 wide")
            #expect(gtk_widget_get_height(view.widget) == 160, "cell \(index) is 160 high")
        }
        #expect(grid.visibleRange == 0..<20, "four rows of five show in 640 points")
    }

    /// A grid made in a function that hands back only its widget, as a GtkApplication's
    /// "activate" handler makes one, lives as long as the widget: its cells show their
    /// own images, in as many columns as the width holds; destroying the window lets
    /// the grid go.
    @Test func aGridKeptOnlyByItsWidgetLoadsAndGoesWithItsWindow() async throws {
        let server = try TestServer.colours(60)
        defer { server.stop() }
        weak var made: ImageGrid?
        func makeGrid() -> UnsafeMutablePointer<GtkWidget> {
            let grid = ImageGrid(
                urls: (0..<60).map { server.url("/img/\($0)") }, cellSize: 40,
                targetLoader: Self.loader(decoder: MainActorRecordingDecoder()))
            made = grid
            return grid.widget
        }
        let window = await GTK.window(width: 200, height: 300, child: makeGrid())
        await GTK.waitUntil("the cells on screen showed their images", seconds: 20) {
            guard let grid = made, grid.columns > 1, grid.statistics.inFlight == 0 else { return false }
            let visible = grid.visibleRange
            return !visible.isEmpty && grid.boundCells.filter { visible.contains($0.index) }.allSatisfy {
                $0.view.loadingState.image != nil && !$0.view.loadingState.isCrossfading
            }
        }
        await GTK.run(for: 0.1)
        let capture = try await GTK.capture(window.widget)
        var columns = Set<Int>(), checked = 0
        for (index, x, y) in try #require(made).cellCentresOnScreen(in: window) {
            let found = Pixels.index(of: capture[x, y])
            #expect(found.index == index && found.distance <= 6, "the cell of item \(index) at (\(x), \(y)) shows its own image")
            columns.insert(x)
            checked += 1
        }
        #expect(made?.columns == 4 && columns.count == 4, "four columns in 200 points: \(columns.sorted())")
        #expect(checked >= 12, "several rows of cells show")

        window.close()
        await GTK.waitUntil("the grid went with its window", seconds: 10) { made == nil }
    }

    /// Bound is not loaded: scrolled down and left there, the grid has loaded the rows
    /// on screen and asked for the rows below them at low priority, and nothing for
    /// the cells GTK keeps bound beyond them.
    @Test func onlyTheRowsOnScreenLoadAndTheRowsAheadArePrefetched() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let count = 3000
        let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
        for n in 0..<count { server.route("/item/\(n)", data: png, headers: ["Content-Type": "image/png"]) }
        let urls = (0..<count).map { server.url("/item/\($0)") }
        let grid = ImageGrid(urls: urls, cellSize: 40, targetLoader: Self.loader(decoder: MainActorRecordingDecoder()))
        let window = await GTK.window(width: 400, height: 300, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil {
            !grid.boundCells.isEmpty && grid.statistics.inFlight == 0 && gtk_grid_view_get_max_columns(grid.gridView.opaque) > 1
        }
        await GTK.run(for: 0.1)
        // A little, then far down. (GTK 4.8's grid may leave its cells where they
        // are after the first move of a grid that has not scrolled yet.)
        let adjustment = grid.verticalAdjustment
        gtk_adjustment_set_value(adjustment, 100)
        await GTK.run(for: 0.2)
        await GTK.waitUntil { grid.statistics.inFlight == 0 }
        let countsBefore = (0..<count).map { server.count(for: "/item/\($0)") }
        gtk_adjustment_set_value(adjustment, gtk_adjustment_get_upper(adjustment) / 3)
        await GTK.waitUntil {
            let bound = Set(grid.boundCells.map(\.index))
            return !grid.visibleRange.isEmpty && grid.visibleRange.allSatisfy(bound.contains) && grid.statistics.inFlight == 0
        }
        let columns = grid.columns
        let visible = grid.visibleRange
        #expect(!visible.isEmpty)
        #expect(visible.allSatisfy { server.count(for: "/item/\($0)") == 1 }, "the cells on screen loaded, once")
        // One row either side loads as if on screen; the rows after it are prefetched.
        let ahead = (visible.upperBound + columns)..<(visible.upperBound + columns * (1 + grid.prefetchRows))
        await GTK.waitUntil("the rows after those on screen (\(visible)) were fetched ahead") { ahead.allSatisfy { server.count(for: "/item/\($0)") == 1 } }
        await GTK.run(for: 0.3)
        let beyond = visible.upperBound + columns * (1 + grid.prefetchRows)
        let boundBeyond = grid.boundCells.map(\.index).filter { $0 >= beyond }
        #expect(boundBeyond.count > columns * 4, "GTK keeps cells bound beyond the rows ahead")
        for index in boundBeyond {
            #expect(server.count(for: "/item/\(index)") == 0, "item \(index), bound off screen, was not asked for")
        }
        let above = grid.boundCells.map(\.index).filter { $0 < visible.lowerBound - columns }
        for index in above {
            #expect(server.count(for: "/item/\(index)") == countsBefore[index], "item \(index), above the screen, was not asked for")
        }
    }

    /// Made with the library's defaults, the grid keeps its thumbnails in a memory
    /// tier of its own whose limits follow its geometry: jumped through many screens,
    /// it has loaded far more images than its budget, and holds no more than the
    /// budget; more rows prefetched raise the budget, fewer trim the tier at once.
    /// Its thumbnails go to `DiskCache.shared`, which `make test` points at a folder
    /// of the build's own (`XDG_CACHE_HOME`); setting the variable here, with other
    /// threads reading the environment, would race them.
    @Test func withTheDefaultsTheMemoryTierIsBoundedByTheGridsGeometry() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let count = 3000
        let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
        for n in 0..<count { server.route("/item/\(n)", data: png, headers: ["Content-Type": "image/png"]) }
        let grid = ImageGrid(urls: (0..<count).map { server.url("/item/\($0)") }, cellSize: 40)
        let cache = try #require(grid.memoryCache, "a grid with the default target loader has a memory tier of its own")
        #expect(grid.targetLoader !== ImageTargetLoader.shared)
        #expect(grid.targetLoader.loader.cache === cache && cache !== ImageCache.shared)
        #expect(ImageGrid(urls: [], cellSize: 40, targetLoader: GTK.targetLoader()).memoryCache == nil)
        let window = await GTK.window(width: 400, height: 300, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil { !grid.boundCells.isEmpty && grid.statistics.inFlight == 0 && grid.columns > 1 }
        await GTK.run(for: 0.1)

        // The budget: a cell's worth for the rows on screen, the rows next to them
        // and ahead, and two screens behind.
        let budget = grid.memoryBudget
        let columns = grid.columns
        let rowsOnScreen = (grid.visibleRange.count + columns - 1) / columns
        let screens = columns * rowsOnScreen * 3
        #expect(budget.count >= screens && budget.count <= screens + columns * (grid.prefetchRows + 6), "\(budget) for \(columns) × \(rowsOnScreen) cells")
        #expect(cache.countLimit == budget.count && cache.costLimit == budget.cost)
        #expect(budget.cost >= budget.count * 40 * 40 * 4, "a cell's pixels each")

        let adjustment = grid.verticalAdjustment
        let upper = gtk_adjustment_get_upper(adjustment)
        for step in 1...8 {
            gtk_adjustment_set_value(adjustment, upper * Double(step) / 10)
            await GTK.run(for: 0.1)
            await GTK.waitUntil { grid.statistics.inFlight == 0 }
            #expect(cache.count <= budget.count && cache.totalCost <= budget.cost, "\(cache.count) images, \(cache.totalCost) bytes")
        }
        #expect(grid.statistics.loaded > 2 * budget.count, "loaded \(grid.statistics.loaded), more than the tier holds")
        #expect(cache.count > budget.count / 2, "the tier is used: \(cache.count) images")

        grid.prefetchRows += 4
        #expect(grid.memoryBudget.count == budget.count + 4 * columns && cache.countLimit == budget.count + 4 * columns)
        grid.prefetchRows = 0
        #expect(cache.countLimit == budget.count - 3 * columns && cache.count <= cache.countLimit)
    }

    /// After a jump to the end, the cells on screen load before anything queued
    /// earlier: the loads of the cells that left the screen are put behind them.
    @Test func afterAJumpTheCellsOnScreenAreNextInLine() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
        // Slow enough that the first screen is still loading at the jump.
        for n in 0..<2000 {
            server.route("/slow/\(n)") { _ in
                Thread.sleep(forTimeInterval: 0.3)
                return .ok(png, headers: ["Content-Type": "image/png"])
            }
        }
        let urls = (0..<2000).map { server.url("/slow/\($0)") }
        let targetLoader = Self.loader(decoder: MainActorRecordingDecoder())
        targetLoader.loader.concurrentLoads = 2
        let grid = ImageGrid(urls: urls, cellSize: 40, targetLoader: targetLoader)
        let window = await GTK.window(width: 400, height: 300, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil("the first screen is loading") { grid.statistics.inFlight > 20 }
        func counts() -> [Int] { (0..<2000).map { server.count(for: "/slow/\($0)") } }
        let atJump = counts()
        let adjustment = grid.verticalAdjustment
        gtk_adjustment_set_value(adjustment, gtk_adjustment_get_upper(adjustment) - gtk_adjustment_get_page_size(adjustment))
        await GTK.run(for: 0.1)
        let visible = grid.visibleRange
        #expect(visible.upperBound == 2000)
        await GTK.waitUntil("the cells at the end loaded") {
            grid.boundCells.filter { visible.contains($0.index) }.allSatisfy { $0.view.loadingState.image != nil }
        }
        // Two transfers at a time: what was already on the wire finishes, then the
        // end of the grid; nothing else queued at the top goes before it.
        let near = (visible.lowerBound - grid.columns)..<2000
        let now = counts()
        let elsewhere = (0..<2000).filter { !near.contains($0) && now[$0] > atJump[$0] }
        #expect(elsewhere.count <= 2, "items requested after the jump away from the end: \(elsewhere)")
    }

    /// A missing image is not asked for again while its failure is remembered
    /// (the loader's `ImageLoader.RecentFailures`), however often its cell is bound again as the
    /// grid scrolls; the cell is told why it failed.
    @Test func aMissingImageIsNotAskedForAgainWhenItsCellIsRebound() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
        let count = 520
        let missing = Set(stride(from: 3, to: count, by: 8))
        for n in 0..<count where !missing.contains(n) {
            server.route("/item/\(n)", data: png, headers: ["Content-Type": "image/png"])
        }
        let urls = (0..<count).map { server.url("/item/\($0)") }
        let grid = ImageGrid(urls: urls, cellSize: 40, targetLoader: Self.loader(decoder: MainActorRecordingDecoder()))
        var failures: [Int: ImagoError] = [:]
        grid.didFail = { _, index, error in failures[index] = error }
        let window = await GTK.window(width: 200, height: 300, child: grid.widget)
        defer { window.close() }

        _ = await Self.scrollDownAndBack(grid, pixelsPerSecond: 3000)
        await GTK.waitUntil { grid.statistics.inFlight == 0 }
        #expect(!failures.isEmpty, "cells of missing images were told")
        for (index, error) in failures {
            #expect(missing.contains(index), "only missing images fail: item \(index)")
            if case .httpStatus(let status, _) = error { #expect(status == 404) } else { Issue.record("item \(index): \(error)") }
        }
        // By item: the failures of the second pass join the dictionary, which may
        // reorder its keys.
        let seen = Dictionary(uniqueKeysWithValues: failures.keys.map { ($0, server.count(for: "/item/\($0)")) })
        _ = await Self.scrollDownAndBack(grid, pixelsPerSecond: 3000)
        await GTK.waitUntil { grid.statistics.inFlight == 0 }
        let again = seen.filter { server.count(for: "/item/\($0.key)") != $0.value }.keys.sorted()
        #expect(again == [], "no failed image was asked for again on the second pass")
        let total = missing.map { server.count(for: "/item/\($0)") }.reduce(0, +)
        print("missing images: \(missing.count), asked for \(total) times over two passes; \(failures.count) failures told")
    }

    @Test func theMainLoopStaysResponsiveWhileColdImagesDecode() async throws {
        let server = TestServer()
        try server.start()
        defer { server.stop() }
        // Fifty 640×640 photos-to-be (gradients and texture, JPEG through libjpeg);
        // each of the 1,000 items asks for one under a URL of its own, so every
        // image is transferred and decoded cold.
        let jpeg = ImageEncoders.encoder(for: .jpeg)!
        for k in 0..<50 {
            var pixels = [UInt8](repeating: 255, count: 640 * 640 * 4)
            for y in 0..<640 {
                for x in 0..<640 {
                    let i = (y * 640 + x) * 4
                    pixels[i] = UInt8((x + k * 5) & 255)
                    pixels[i + 1] = UInt8((y * 3 + k * 11) & 255)
                    pixels[i + 2] = UInt8(((x ^ y) * (k + 1)) & 255)
                }
            }
            let data = try jpeg.encode(Bitmap(width: 640, height: 640, pixels: pixels))
            server.route("/photo/\(k)", data: data, headers: ["Content-Type": "image/jpeg"])
        }
        let decoder = MainActorRecordingDecoder()
        let urls = (0..<1000).map { server.url("/photo/\($0 % 50)?item=\($0)") }
        let grid = ImageGrid(urls: urls, cellSize: 40, targetLoader: Self.loader(decoder: decoder))
        let window = await GTK.window(width: 400, height: 300, child: grid.widget)
        defer { window.close() }

        let gaps = await Self.scrollDownAndBack(grid, pixelsPerSecond: 3000).sorted()
        #expect(gaps.count > 20)
        func percentile(_ p: Double) -> Double { gaps[min(gaps.count - 1, Int(Double(gaps.count) * p))] * 1000 }
        let tally = decoder.tally
        print(String(
            format: "frame gaps while scrolling 1,000 cold items: %d frames, median %.1f ms, p90 %.1f ms, p99 %.1f ms, max %.1f ms; %d decodes, %d on the main actor; %@",
            gaps.count, percentile(0.5), percentile(0.9), percentile(0.99), (gaps.last ?? 0) * 1000,
            tally.decodes, tally.onMainActor, String(describing: grid.statistics)))
        #expect(tally.decodes > 50, "images were decoded while scrolling")
        #expect(tally.onMainActor == 0, "no decode ran on the main loop")
        // 50 ms is the aim. The bounds allow for a loaded 2-core machine: with other
        // builds running beside it (load average 7), one gap of 440 ms was seen while
        // nine in ten stayed under 90 ms.
        #expect(percentile(0.9) < 250, "nine frame gaps in ten")
        #expect(gaps.last ?? 0 < 1.0, "the longest frame gap")
    }
}
