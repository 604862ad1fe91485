import Foundation
import Imago
import ImagoUI
import ImagoGTK
import Testing
import _ImagoTestSupport

/// The grid over a `GListModel` in a real window, against a real server: items spliced
/// in and out while it is shown, captions, accessible labels, activation.
@MainActor @Suite(.display, .gtkWindows)
struct ImageGridModelTests {
    /// A server with a 24×24 PNG of colour `k` at `/img/<k>` for each `k` below 216.
    private static func colourServer() throws -> TestServer {
        try TestServer.colours(216)
    }

    /// The colour index a URL of `colourServer()` stands for.
    private static func colour(of url: URL?) -> Int? {
        url.flatMap { Int($0.lastPathComponent) }
    }

    /// Whether every cell on screen shows its item's image, faded in.
    private static func settled(_ grid: ImageGrid) -> Bool {
        let visible = grid.visibleRange
        let shown = grid.boundCells.filter { visible.contains($0.index) }
        return !visible.isEmpty && grid.statistics.inFlight == 0 && shown.count == visible.count
            && shown.allSatisfy { $0.view.loadingState.image != nil && !$0.view.loadingState.isCrossfading }
    }

    /// The cells on screen, each its item's index and the middle pixel it draws.
    private func pixelsOnScreen(_ grid: ImageGrid, in window: GTK.Window) async throws -> [(index: Int, pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8))] {
        let capture = try await GTK.capture(window.widget)
        var viewport = graphene_rect_t()
        #expect(gtk_widget_compute_bounds(grid.widget, window.widget, &viewport) != 0)
        return grid.boundCells.compactMap { index, view in
            var bounds = graphene_rect_t()
            guard gtk_widget_get_mapped(view.widget) != 0, gtk_widget_compute_bounds(view.widget, window.widget, &bounds) != 0,
                graphene_rect_contains_rect(&viewport, &bounds)
            else { return nil }
            return (index, capture[Int(bounds.origin.x + bounds.size.width / 2), Int(bounds.origin.y + bounds.size.height / 2)])
        }
    }

    /// Items spliced into and out of the model while the grid shows it: cells follow
    /// their items, new items load, and no cell ever shows an image other than that
    /// of the item it shows at that moment, before or after the splices.
    @Test func cellsFollowTheModelAsItemsAreAddedAndRemoved() async throws {
        let server = try Self.colourServer()
        defer { server.stop() }
        let list = gtk_string_list_new(nil)!
        defer { g_object_unref(UnsafeMutableRawPointer(list)) }
        for k in 0..<60 { gtk_string_list_append(list, server.url("/img/\(k)").absoluteString) }
        let grid = ImageGrid(model: list, cellSize: 40, targetLoader: GTK.targetLoader())
        grid.options.crossfadeDuration = 0

        // Every image shown is checked against the item its cell shows at that moment.
        var wrong: [String] = []
        var shown = 0
        grid.didBind = { view, _ in
            view.didDisplay = { [unowned view] content in
                guard content.phase == .success, let image = content.image else { return }
                shown += 1
                let found = Pixels.index(of: image.bitmap[image.width / 2, image.height / 2])
                guard let index = grid.boundCells.first(where: { $0.view === view })?.index else {
                    wrong.append("a cell with no item showed colour \(found.index)")
                    return
                }
                if found.index != Self.colour(of: grid.url(at: index)) || found.distance > 6 {
                    wrong.append("item \(index) (\(grid.url(at: index)?.lastPathComponent ?? "-")) showed colour \(found.index)")
                }
            }
        }
        let window = await GTK.window(width: 200, height: 300, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil("the first screen loaded: \(grid.statistics)") { grid.columns == 4 && Self.settled(grid) }

        // Eight items out at 2, five new ones in their place; then the first item out,
        // and two more at the end of the screen.
        let added = (100..<105).map { server.url("/img/\($0)").absoluteString }
        added.withCStringArray { gtk_string_list_splice(list, 2, 8, $0) }
        gtk_string_list_remove(list, 0)
        [150, 151].map { server.url("/img/\($0)").absoluteString }.withCStringArray { gtk_string_list_splice(list, 20, 0, $0) }
        #expect(grid.count == 60 - 8 + 5 - 1 + 2)
        let expected = [1] + Array(100..<105) + Array(10..<24) + [150, 151] + Array(24..<60)
        #expect((0..<grid.count).map { Self.colour(of: grid.url(at: $0)) } == expected)

        await GTK.waitUntil("the screen loaded again: \(grid.statistics)") { Self.settled(grid) }
        await GTK.run(for: 0.2)
        let cells = try await pixelsOnScreen(grid, in: window)
        #expect(cells.count >= 16, "the window shows several rows of cells")
        for (index, pixel) in cells {
            let found = Pixels.index(of: pixel)
            #expect(found.index == expected[index] && found.distance <= 6, "the cell of item \(index) draws its own image, colour \(expected[index]), not \(found.index)")
        }
        #expect(shown > 0)
        #expect(wrong == [], "no cell showed another item's image")
        for k in 100..<105 { #expect(server.count(for: "/img/\(k)") == 1, "the new item \(k) was asked for once") }
    }

    /// Items of any model, their URLs and captions read by closures: each cell shows
    /// its caption under its image and has it as its accessible label; Enter on a
    /// focused cell activates it as a click does, with its item's index.
    @Test func captionsAccessibleLabelsAndActivation() async throws {
        let server = try Self.colourServer()
        defer { server.stop() }
        // The items are names; the closures make them URLs and captions.
        let names = (0..<30).map { String(($0 * 7) % 216) }
        let list = gtk_string_list_new(nil)!
        defer { g_object_unref(UnsafeMutableRawPointer(list)) }
        for name in names { gtk_string_list_append(list, name) }
        let name = ImageGrid.stringProperty("string")
        let grid = ImageGrid(
            model: list, cellSize: 48, targetLoader: GTK.targetLoader(),
            url: { item in name(item).map { server.url("/img/\($0)") } },
            caption: { item in name(item).map { "Colour \($0)" } })
        var activated: [(Int, ImageView)] = []
        grid.didActivate = { index, view in activated.append((index, view)) }
        let window = await GTK.window(width: 300, height: 300, child: grid.widget)
        defer { window.close() }
        await GTK.waitUntil("the first screen loaded: \(grid.statistics)") { Self.settled(grid) }

        #expect(grid.accessibleLabel(at: 3) == "Colour \(names[3])")
        #expect(grid.url(at: 3) == server.url("/img/\(names[3])"))
        let bound = grid.boundCells.filter { grid.visibleRange.contains($0.index) }
        #expect(bound.count >= 8)
        for (index, view) in bound {
            let label = gtk_widget_get_next_sibling(view.widget)
            #expect(label.map { String(cString: gtk_label_get_text($0.opaque)) } == "Colour \(names[index])", "item \(index)'s caption")
            // The focusable list item's widget carries the label for screen readers.
            let item = try #require(gtk_widget_get_parent(gtk_widget_get_parent(view.widget)))
            #expect(gtk_test_accessible_has_property(OpaquePointer(item), GTK_ACCESSIBLE_PROPERTY_LABEL) != 0)
        }

        // Enter on a focused cell: GTK's key binding for it is the list item's activate signal.
        let (index, view) = try #require(bound.first { $0.index == 5 })
        let item = try #require(gtk_widget_get_parent(gtk_widget_get_parent(view.widget)))
        #expect(gtk_widget_grab_focus(item) != 0, "the cell takes the focus")
        #expect(gtk_widget_activate(item) != 0, "the cell has an activation")
        await GTK.run(for: 0.1)
        #expect(activated.count == 1)
        #expect(activated.first?.0 == index)
        #expect(activated.first?.1 === view)

        // A model without captions: the label is the last part of the URL's path.
        let plain = ImageGrid(urls: [server.url("/img/4"), server.url("/photos/beach.jpg?size=2")], cellSize: 40, targetLoader: GTK.targetLoader())
        #expect(plain.accessibleLabel(at: 1) == "beach.jpg")
        #expect(plain.caption(at: 1) == nil)
        #expect(plain.url(at: 2) == nil)
    }

    /// A cell unbound before its image came lets its load go on: a jump far down while
    /// the first screen loads, and back, asks for each item of the first screen once,
    /// however many of their cells GTK unbound in between; with no loads kept, the
    /// items whose transfers were cut off are asked for again.
    @Test func loadsOfUnboundCellsGoOnAndScrollingBackAsksNothingAgain() async throws {
        func run(keeping limit: Int) async throws -> (once: Int, again: Int) {
            let server = TestServer()
            try server.start()
            defer { server.stop() }
            let png = try Pixels.png(Pixels.solid(width: 24, height: 24, 10, 20, 30))
            for n in 0..<2000 {
                server.route("/slow/\(n)") { _ in
                    Thread.sleep(forTimeInterval: 0.2)
                    return .ok(png, headers: ["Content-Type": "image/png"])
                }
            }
            let targets = GTK.targetLoader()
            let grid = ImageGrid(urls: (0..<2000).map { server.url("/slow/\($0)") }, cellSize: 40, targetLoader: targets)
            grid.keptLoadLimit = limit
            let window = await GTK.window(width: 400, height: 300, child: grid.widget)
            defer { window.close() }
            await GTK.waitUntil("the first screen is loading") { grid.statistics.inFlight > 20 }
            // A little first: GTK 4.8's grid may leave its cells where they are after
            // the first move of a grid that has not scrolled yet.
            let adjustment = grid.verticalAdjustment
            gtk_adjustment_set_value(adjustment, 50)
            await GTK.run(for: 0.1)
            let firstScreen = grid.visibleRange
            // Far enough that GTK unbinds the first screen's cells.
            gtk_adjustment_set_value(adjustment, gtk_adjustment_get_upper(adjustment) / 2)
            await GTK.waitUntil("the middle of the grid loaded") {
                !grid.boundCells.contains { firstScreen.contains($0.index) } && Self.settled(grid)
            }
            // Every kept load has landed by now: the last ones queued behind the middle.
            await GTK.waitUntil { targets.loader.queuedCount == 0 }
            await GTK.run(for: 0.6)
            gtk_adjustment_set_value(adjustment, 50)
            await GTK.waitUntil("back at the top") { grid.visibleRange == firstScreen && Self.settled(grid) }
            let counts = firstScreen.map { server.count(for: "/slow/\($0)") }
            return (counts.filter { $0 == 1 }.count, counts.filter { $0 > 1 }.count)
        }
        let kept = try await run(keeping: 200)
        #expect(kept.again == 0, "with loads kept, nothing of the first screen was asked for twice: \(kept)")
        let cancelled = try await run(keeping: 0)
        #expect(cancelled.again > 0, "without, the cut-off transfers are asked for again: \(cancelled)")
    }
}

extension Array where Element == String {
    /// The strings as a NULL-terminated C array, for the duration of `body`.
    fileprivate func withCStringArray<R>(_ body: (UnsafePointer<UnsafePointer<CChar>?>) -> R) -> R {
        let copies = map { strdup($0) }
        defer { for copy in copies { free(copy) } }
        let array = copies.map { UnsafePointer($0) } + [nil]
        return array.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
