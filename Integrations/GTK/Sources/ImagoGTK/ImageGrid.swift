import Foundation
import Imago

/// A scrolling grid of image thumbnails: a `GtkGridView` whose recycled cells are
/// `ImageView`s, square cells of `cellSize` points, as many columns as the width holds.
///
/// Binding a cell is cheap: it only loads when its row is on screen (or next to it),
/// and a cell scrolled away before its image arrived has its load put behind all
/// others (cancelled once GTK unbinds it), so what is on screen is always next in
/// line, after a jump (End, a scrollbar drag) as much as while scrolling. The rows
/// just ahead in the direction of scrolling are prefetched at low priority, so they
/// are usually in the memory cache by the time they scroll in.
/// A reused cell can never show an image of the item it showed before.
@MainActor
public final class ImageGrid {
    /// What the grid's loads came to so far.
    public struct Statistics: Sendable, Equatable {
        /// Images shown, from any source.
        public var loaded = 0
        /// Loads that failed.
        public var failed = 0
        /// Loads running or queued for cells on screen or next to it.
        public var inFlight = 0
        /// Images found in the memory cache.
        public var memoryHits = 0
        /// Images read from the disk cache.
        public var diskHits = 0
    }

    /// The widget to put in a window: a scrolled window around the grid.
    public let widget: UnsafeMutablePointer<GtkWidget>
    /// The grid view inside.
    public let gridView: UnsafeMutablePointer<GtkWidget>
    /// The images, one a cell, in order.
    public let urls: [URL]
    /// Each cell's side, in points.
    public let cellSize: Int
    /// How cells load: the target size, in points, is the cell's, filled (cells
    /// decode at it times the screen's scale factor); crossfade and the rest are the
    /// defaults unless changed before the grid is shown.
    public var options: ImageDisplayOptions
    /// Shown in a cell until its image arrives.
    public var placeholder: DecodedImage?
    /// How many rows ahead of the scroll position are prefetched (3 by default).
    public var prefetchRows = 3
    /// Called when a cell is bound to an item, before its image is asked for.
    public var didBind: (@MainActor (_ cell: ImageView, _ index: Int) -> Void)?
    /// Called when a cell leaves its item.
    public var didUnbind: (@MainActor (_ cell: ImageView, _ index: Int) -> Void)?
    /// Called when a cell is clicked.
    public var didActivate: (@MainActor (_ index: Int, _ cell: ImageView) -> Void)?
    /// Called when a cell's load fails, with the error: to show why (a tooltip, say).
    public var didFail: (@MainActor (_ cell: ImageView, _ index: Int, _ error: ImagoError) -> Void)?
    /// Called when `statistics` change.
    public var didChangeStatistics: (@MainActor (Statistics) -> Void)?
    /// What the loads came to so far.
    public private(set) var statistics = Statistics() {
        didSet { if statistics != oldValue { didChangeStatistics?(statistics) } }
    }

    /// The space around each cell, in points, on every side.
    private static let margin = 2
    /// Rows above and below those on screen whose cells load as if on screen: what a
    /// frame of scrolling brings in is already on its way.
    private static let nearRows = 1

    private let targetLoader: ImageTargetLoader
    private let prefetcher: ImagePrefetcher
    /// Cells by their list item's address: GTK owns the items, the grid their views.
    private var cells: [UnsafeMutableRawPointer: Cell] = [:]
    private var prefetched: Set<Int> = []
    private var lastScrollValue = 0.0
    /// The columns shown: as many cells as the width holds.
    public private(set) var columns = 1

    /// A grid of `urls` in cells of `cellSize` points, loading through `targetLoader`.
    public init(urls: [URL], cellSize: Int, targetLoader: ImageTargetLoader = .shared) {
        attachMainActorToGLib()
        self.urls = urls
        self.cellSize = cellSize
        self.targetLoader = targetLoader
        prefetcher = ImagePrefetcher(loader: targetLoader.loader)
        options = ImageDisplayOptions(targetSize: TargetSize(width: cellSize, height: cellSize, contentMode: .aspectFill))

        // The model only counts items: a cell finds its URL by position.
        let list = gtk_string_list_new(nil)
        for _ in urls { gtk_string_list_append(list, "") }
        let selection = gtk_no_selection_new(list)
        let factory = gtk_signal_list_item_factory_new()!
        gridView = gtk_grid_view_new(selection, factory)
        // GTK keeps about thirty rows of max-columns cells bound: the most columns
        // must be the columns shown, set again whenever the width changes.
        gtk_grid_view_set_max_columns(gridView.opaque, 1)
        widget = gtk_scrolled_window_new()
        gtk_scrolled_window_set_policy(widget.opaque, GTK_POLICY_NEVER, GTK_POLICY_AUTOMATIC)
        gtk_scrolled_window_set_child(widget.opaque, gridView)
        gtk_widget_set_vexpand(widget, 1)
        gtk_widget_set_hexpand(widget, 1)

        let factoryObject = UnsafeMutableRawPointer(factory)
        connectSignal(factoryObject, "setup") { [weak self] item in self?.setUp(item) }
        connectSignal(factoryObject, "bind") { [weak self] item in self?.bind(item) }
        connectSignal(factoryObject, "unbind") { [weak self] item in self?.unbind(item) }
        connectSignal(factoryObject, "teardown") { [weak self] item in
            if let item { self?.cells[item] = nil }
        }
        connectSignal(UnsafeMutableRawPointer(verticalAdjustment), "value-changed") { [weak self] _ in
            self?.scrolled()
        }
        // The horizontal adjustment's page is the grid's width, set as it is allocated.
        let horizontal = gtk_scrolled_window_get_hadjustment(widget.opaque)!
        connectSignal(UnsafeMutableRawPointer(horizontal), "changed") { [weak self] _ in
            self?.widthChanged()
        }
    }

    /// The scroll position, for programs (and tests) that scroll the grid themselves.
    public var verticalAdjustment: UnsafeMutablePointer<GtkAdjustment> {
        gtk_scrolled_window_get_vadjustment(widget.opaque)
    }

    /// The cells bound now, with the index of the item each shows.
    public var boundCells: [(index: Int, view: ImageView)] {
        cells.values.compactMap { cell in cell.index.map { ($0, cell.view) } }.sorted { $0.index < $1.index }
    }

    /// The request a cell makes for item `index`: the prefetcher asks for the same one,
    /// so that the cell finds it in the memory cache.
    public func request(for index: Int) -> ImageRequest {
        ImageRequest(url: urls[index], targetSize: cellTargetSize)
    }

    /// The items whose rows are on screen now, as far as the scroll position says.
    public var visibleRange: Range<Int> { rows(extendedBy: 0) }

    /// The size cells decode to: the options' (the cell's side in points by default)
    /// times the screen's scale factor, so cells stay sharp on a 2× screen.
    private var cellTargetSize: TargetSize? {
        guard let size = options.targetSize else { return nil }
        let scale = Double(max(1, gtk_widget_get_scale_factor(gridView)))
        return TargetSize(
            points: Double(size.width), Double(size.height), scale: scale, contentMode: size.contentMode,
            allowsUpscaling: size.allowsUpscaling)
    }

    /// A cell's place in the grid, in points: the cell, its margins and whatever the
    /// theme puts around a grid item, as GTK measures it.
    private var cellExtent: (width: Double, height: Double) {
        let item = cells.values.lazy.compactMap { gtk_widget_get_parent($0.view.widget) }.first
        var width = Int32(cellSize + 2 * Self.margin), height = width
        if let item {
            gtk_widget_measure(item, GTK_ORIENTATION_HORIZONTAL, -1, &width, nil, nil, nil)
            gtk_widget_measure(item, GTK_ORIENTATION_VERTICAL, -1, &height, nil, nil, nil)
        }
        return (Double(max(1, width)), Double(max(1, height)))
    }

    /// The items of the rows on screen and `extra` rows either side of them.
    private func rows(extendedBy extra: Int) -> Range<Int> {
        let adjustment = verticalAdjustment
        let value = gtk_adjustment_get_value(adjustment), page = gtk_adjustment_get_page_size(adjustment)
        guard page > 0 else { return 0..<0 }
        let rowHeight = cellExtent.height
        let first = max(0, Int(value / rowHeight) - extra)
        let last = Int((value + page - 1) / rowHeight) + extra
        return min(urls.count, first * columns)..<min(urls.count, (last + 1) * columns)
    }

    // MARK: - Columns

    private func widthChanged() {
        let width = gtk_adjustment_get_page_size(gtk_scrolled_window_get_hadjustment(widget.opaque))
        // The count GTK itself arrives at, given no limit.
        let wanted = max(1, Int(width / cellExtent.width))
        guard wanted != columns else { return }
        columns = wanted
        // Told during the grid's allocation, which a change of columns made now would
        // not take part in: the new count is set once the allocation is over.
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated {
                guard let self, self.columns == wanted else { return }
                gtk_grid_view_set_max_columns(self.gridView.opaque, UInt32(wanted))
                self.updateLoads()
            }
        }
    }

    // MARK: - Cells

    private final class Cell {
        let view: ImageView
        var index: Int?
        /// Whether the bound item's load is running.
        var loading = false
        /// The bound item's load, while it runs (nil for a memory hit).
        var task: ImageTask?
        /// Whether the bound item's load has ended (its image or failure shown).
        var done = false
        /// Counts bindings and loads, so that a completion of an earlier one is told apart.
        var binding = 0

        init(view: ImageView) { self.view = view }
    }

    private func setUp(_ item: UnsafeMutableRawPointer?) {
        guard let item else { return }
        let view = ImageView(targetLoader: targetLoader, contentMode: .aspectFill, width: cellSize, height: cellSize)
        for margin in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start, gtk_widget_set_margin_end] {
            margin(view.widget, Int32(Self.margin))
        }
        // Square, whatever width the column is given.
        gtk_widget_set_halign(view.widget, GTK_ALIGN_CENTER)
        gtk_widget_set_valign(view.widget, GTK_ALIGN_CENTER)
        let cell = Cell(view: view)
        let click = gtk_gesture_click_new()
        gtk_widget_add_controller(view.widget, click)
        connectSignal(UnsafeMutableRawPointer(click!), "released") { [weak self, weak cell] _ in
            guard let self, let cell, let index = cell.index else { return }
            self.didActivate?(index, cell.view)
        }
        cells[item] = cell
        gtk_list_item_set_child(OpaquePointer(item), view.widget)
    }

    private func bind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item] else { return }
        let index = Int(gtk_list_item_get_position(OpaquePointer(item)))
        guard urls.indices.contains(index) else { return }
        stopLoading(cell)
        cell.index = index
        cell.binding += 1
        cell.done = false
        didBind?(cell.view, index)
        // The first cells tell how wide GTK finds a cell with the theme's padding.
        widthChanged()
        if rows(extendedBy: Self.nearRows).contains(index) {
            load(cell, index: index)
        } else {
            // Off screen: only the placeholder until it scrolls near.
            cell.view.cancelImageLoad()
            cell.view.image = placeholder
        }
    }

    private func load(_ cell: Cell, index: Int) {
        cell.binding += 1
        let binding = cell.binding
        cell.loading = true
        statistics.inFlight += 1
        var options = options
        options.targetSize = cellTargetSize
        let task = cell.view.setImage(with: urls[index], placeholder: placeholder, options: options) { [weak self, weak cell] result in
            guard let self, let cell, cell.binding == binding, cell.loading else { return }
            cell.loading = false
            cell.task = nil
            var statistics = self.statistics
            statistics.inFlight -= 1
            switch result {
            case .success(let response):
                cell.done = true
                statistics.loaded += 1
                if response.source == .memory { statistics.memoryHits += 1 }
                if response.source == .disk || response.source == .revalidated { statistics.diskHits += 1 }
            case .failure(.cancelled):
                // The cell was unbound, rebound or scrolled away: nothing failed.
                break
            case .failure(let error):
                cell.done = true
                statistics.failed += 1
                self.didFail?(cell.view, index, error)
            }
            self.statistics = statistics
        }
        if cell.loading, cell.binding == binding { cell.task = task }
    }

    /// Stops the load of a cell that GTK rebinds or unbinds before its image came.
    private func stopLoading(_ cell: Cell) {
        guard cell.loading else { return }
        // Counted first: the cancelled load's completion, told at once, is then one
        // of an earlier binding and counts nothing.
        cell.loading = false
        cell.task = nil
        cell.binding += 1
        statistics.inFlight -= 1
        cell.view.cancelImageLoad()
    }

    private func unbind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item] else { return }
        stopLoading(cell)
        cell.view.cancelImageLoad()
        cell.binding += 1
        cell.done = false
        if let index = cell.index { didUnbind?(cell.view, index) }
        cell.index = nil
    }

    // MARK: - Visible first

    /// Starts the loads of the bound cells near the screen that have none, and puts
    /// those of cells that left it behind everything else (`veryLow`), so that what is
    /// on screen is next in line; a transfer under way is not thrown away, since the
    /// cell may well come back before GTK unbinds it (which cancels the load).
    private func updateLoads() {
        let near = rows(extendedBy: Self.nearRows)
        for cell in cells.values {
            guard let index = cell.index, !cell.done else { continue }
            if near.contains(index) {
                if !cell.loading { load(cell, index: index) } else { cell.task?.priority = options.priority }
            } else {
                cell.task?.priority = .veryLow
            }
        }
    }

    /// Loads what scrolled near, stops what scrolled away, prefetches the rows beyond
    /// in the direction of scrolling and stops prefetching what fell behind.
    private func scrolled() {
        let value = gtk_adjustment_get_value(verticalAdjustment)
        let downwards = value >= lastScrollValue
        lastScrollValue = value
        updateLoads()
        let near = rows(extendedBy: Self.nearRows)
        guard !near.isEmpty else { return }
        let ahead = columns * prefetchRows
        let wanted = downwards
            ? Set(near.upperBound..<min(urls.count, near.upperBound + ahead))
            : Set(max(0, near.lowerBound - ahead)..<near.lowerBound)
        // A prefetch whose row has come near goes on: its cell, bound in the coming
        // layout, joins its transfer rather than starting the request over.
        let kept = prefetched.filter(near.contains)
        let stale = prefetched.subtracting(wanted).subtracting(kept)
        let fresh = wanted.subtracting(prefetched)
        if !stale.isEmpty { prefetcher.stopPrefetching(with: stale.map(request(for:))) }
        if !fresh.isEmpty { prefetcher.startPrefetching(with: fresh.sorted().map(request(for:))) }
        prefetched = wanted.union(kept)
    }
}
