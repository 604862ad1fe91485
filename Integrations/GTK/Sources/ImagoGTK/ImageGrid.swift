import Foundation
import Imago

/// A scrolling grid of image thumbnails: a `GtkGridView` whose recycled cells are
/// `ImageView`s. A cell loads its item's image when bound and cancels the load when
/// unbound, so a reused cell can never show an image of the item it showed before;
/// the rows just ahead of the scroll position are prefetched at low priority, so they
/// are usually in the memory cache by the time they scroll into view.
@MainActor
public final class ImageGrid {
    /// What the grid's loads came to so far.
    public struct Statistics: Sendable, Equatable {
        /// Images shown, from any source.
        public var loaded = 0
        /// Loads that failed.
        public var failed = 0
        /// Loads running or queued for bound cells.
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
    /// How cells load: the target size is the cell's, filled; crossfade and the rest
    /// are the defaults unless changed before the grid is shown.
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
    /// Called when `statistics` change.
    public var didChangeStatistics: (@MainActor (Statistics) -> Void)?
    /// What the loads came to so far.
    public private(set) var statistics = Statistics() {
        didSet { if statistics != oldValue { didChangeStatistics?(statistics) } }
    }

    private let targetLoader: ImageTargetLoader
    private let prefetcher: ImagePrefetcher
    /// Cells by their list item's address: GTK owns the items, the grid their views.
    private var cells: [UnsafeMutableRawPointer: Cell] = [:]
    private var prefetched: Set<Int> = []
    private var lastScrollValue = 0.0

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
        gtk_grid_view_set_max_columns(gridView.opaque, 64)
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
        ImageRequest(url: urls[index], targetSize: options.targetSize)
    }

    // MARK: - Cells

    private final class Cell {
        let view: ImageView
        var index: Int?
        /// Whether the bound item's load is running; a counter, so that a completion
        /// of an earlier binding is told apart.
        var loading = false
        var binding = 0

        init(view: ImageView) { self.view = view }
    }

    private func setUp(_ item: UnsafeMutableRawPointer?) {
        guard let item else { return }
        let view = ImageView(targetLoader: targetLoader, contentMode: .aspectFill, width: cellSize, height: cellSize)
        gtk_widget_set_margin_top(view.widget, 2)
        gtk_widget_set_margin_bottom(view.widget, 2)
        gtk_widget_set_margin_start(view.widget, 2)
        gtk_widget_set_margin_end(view.widget, 2)
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
        cell.index = index
        cell.binding += 1
        let binding = cell.binding
        didBind?(cell.view, index)
        cell.loading = true
        statistics.inFlight += 1
        cell.view.setImage(with: urls[index], placeholder: placeholder, options: options) { [weak self, weak cell] result in
            guard let self, let cell, cell.binding == binding, cell.loading else { return }
            cell.loading = false
            var statistics = self.statistics
            statistics.inFlight -= 1
            switch result {
            case .success(let response):
                statistics.loaded += 1
                if response.source == .memory { statistics.memoryHits += 1 }
                if response.source == .disk || response.source == .revalidated { statistics.diskHits += 1 }
            case .failure(.cancelled):
                // The cell was unbound or rebound: nothing failed.
                break
            case .failure:
                statistics.failed += 1
            }
            self.statistics = statistics
        }
    }

    private func unbind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item] else { return }
        cell.view.cancelImageLoad()
        if cell.loading {
            cell.loading = false
            statistics.inFlight -= 1
        }
        cell.binding += 1
        if let index = cell.index { didUnbind?(cell.view, index) }
        cell.index = nil
    }

    // MARK: - Prefetching

    /// Prefetches the rows beyond the bound cells in the direction of scrolling, and
    /// stops prefetching what fell behind.
    private func scrolled() {
        let value = gtk_adjustment_get_value(verticalAdjustment)
        let downwards = value >= lastScrollValue
        lastScrollValue = value
        let bound = cells.values.compactMap(\.index)
        guard let first = bound.min(), let last = bound.max() else { return }
        let columns = max(1, Int(gtk_widget_get_width(gridView)) / (cellSize + 4))
        let ahead = columns * prefetchRows
        let wanted = downwards
            ? Set((last + 1)..<min(urls.count, last + 1 + ahead))
            : Set(max(0, first - ahead)..<first)
        let stale = prefetched.subtracting(wanted)
        let fresh = wanted.subtracting(prefetched)
        if !stale.isEmpty { prefetcher.stopPrefetching(with: stale.map(request(for:))) }
        if !fresh.isEmpty { prefetcher.startPrefetching(with: fresh.sorted().map(request(for:))) }
        prefetched = wanted
    }
}
