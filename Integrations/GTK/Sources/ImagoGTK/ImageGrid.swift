import Foundation
import Imago
import ImagoUI

/// A scrolling grid of image thumbnails: a `GtkGridView` whose recycled cells are
/// `ImageView`s, square cells of `cellSize` points, as many columns as the width holds,
/// over a `GListModel` whose items give their URLs (and, optionally, captions).
///
/// The model is any `GListModel`: a `GtkStringList` of URL strings (what
/// `init(urls:cellSize:targetLoader:)` makes), a `GListStore` of GObjects with a `url`
/// string property, or any model at all with a closure that finds an item's URL.
/// Items may be added and removed while the grid is shown: cells follow their items,
/// and a cell never shows an image of an item it no longer shows.
///
/// ```swift
/// // A GListStore of GObjects with "url" and "title" string properties:
/// let grid = ImageGrid(model: store, cellSize: 128, caption: ImageGrid.stringProperty("title"))
/// ```
///
/// Binding a cell is cheap: it only loads when its row is on screen (or next to it),
/// and a cell scrolled away before its image arrived has its load put behind all
/// others, so what is on screen is always next in line, after a jump (End, a scrollbar
/// drag) as much as while scrolling. When GTK unbinds such a cell, its load is not
/// thrown away: it goes on at the lowest priority (the latest `keptLoadLimit` of them),
/// so the image lands in the caches and scrolling back finds it there rather than
/// asking for it again. The rows just ahead in the direction of scrolling are
/// prefetched at low priority, so they are usually in the memory cache by the time
/// they scroll in. A click on a cell, or Enter on the focused cell, calls
/// `didActivate`; each cell's accessible label is its caption, or the last part of
/// its URL's path.
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

    /// Reads something of a model's item (a `GObject *`, borrowed for the call): its
    /// URL, or its caption.
    public typealias ItemReader<Value> = @MainActor (_ item: UnsafeMutableRawPointer) -> Value?

    /// The widget to put in a window: a scrolled window around the grid.
    public let widget: UnsafeMutablePointer<GtkWidget>
    /// The grid view inside.
    public let gridView: UnsafeMutablePointer<GtkWidget>
    /// The items, one a cell, in order: a `GListModel *`, which the grid holds a
    /// reference to. Change it as you like while the grid is shown.
    public let model: OpaquePointer
    /// Each cell's side, in points.
    public let cellSize: Int
    /// How cells load: the target size, in points, is the cell's, filled (cells
    /// decode at it times the screen's scale factor); crossfade and the rest are the
    /// defaults unless changed before the grid is shown.
    public var options: ImageDisplayOptions
    /// Shown in a cell until its image arrives, and in the cell of an item with no URL.
    public var placeholder: DecodedImage?
    /// How many rows ahead of the scroll position are prefetched (3 by default).
    public var prefetchRows = 3
    /// How many loads no cell waits for any more (a cell's that GTK unbound before its
    /// image came, a prefetch that fell behind) are let go on at the lowest priority,
    /// so their images land in the caches (32 by default); the oldest beyond it are
    /// cancelled, since each may hold its transfer's bytes until it is decoded. 0
    /// cancels each such load.
    public var keptLoadLimit = 32
    /// Called when a cell is bound to an item, before its image is asked for.
    public var didBind: (@MainActor (_ cell: ImageView, _ index: Int) -> Void)?
    /// Called when a cell leaves its item.
    public var didUnbind: (@MainActor (_ cell: ImageView, _ index: Int) -> Void)?
    /// Called when a cell is clicked, or Enter is pressed on the focused cell.
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
    /// The grid's own reference to its model.
    private let modelReference: ObjectReference
    private let itemURL: ItemReader<URL>
    private let itemCaption: ItemReader<String>?
    /// Cells by their list item's address: GTK owns the items, the grid their views.
    private var cells: [UnsafeMutableRawPointer: Cell] = [:]
    /// The prefetches of the rows ahead, by URL.
    private var prefetches: [URL: ImageTask] = [:]
    /// Loads no cell waits for any more, let go on at the lowest priority, oldest first.
    private var keptLoads: [(url: URL, task: ImageTask)] = []
    private var lastScrollValue = 0.0
    /// The columns shown: as many cells as the width holds.
    public private(set) var columns = 1

    /// A grid of the items of `model` (a `GListModel *`) in cells of `cellSize` points,
    /// loading through `targetLoader`. `url` finds an item's URL (by default the
    /// item's `url` string property, or a `GtkStringObject`'s string); an item without
    /// one shows the placeholder. With `caption`, each cell shows the item's caption
    /// under its image (`stringProperty("title")`, say).
    public init(
        model: OpaquePointer, cellSize: Int, targetLoader: ImageTargetLoader = .shared,
        url: @escaping ItemReader<URL> = ImageGrid.url(of:), caption: ItemReader<String>? = nil
    ) {
        attachMainActorToGLib()
        self.model = model
        modelReference = ObjectReference(retaining: UnsafeMutableRawPointer(model))
        self.cellSize = cellSize
        self.targetLoader = targetLoader
        itemURL = url
        itemCaption = caption
        options = ImageDisplayOptions(targetSize: TargetSize(width: cellSize, height: cellSize, contentMode: .aspectFill))

        // The selection model takes the reference the grid keeps; `model` is the caller's.
        let selection = gtk_no_selection_new(OpaquePointer(g_object_ref(UnsafeMutableRawPointer(model))))
        let factory = gtk_signal_list_item_factory_new()!
        gridView = gtk_grid_view_new(selection, factory)
        // A click activates a cell, as Enter does: one way to open an item.
        gtk_grid_view_set_single_click_activate(gridView.opaque, 1)
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
        connectPositionSignal(gridView.object, "activate") { [weak self] position in
            self?.activate(at: Int(position))
        }
        connectSignal(UnsafeMutableRawPointer(model), "items-changed") { [weak self] _ in
            self?.itemsChanged()
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

    isolated deinit {
        targetLoader.loader.cancel(Array(prefetches.values) + keptLoads.map(\.task))
    }

    /// A grid of `urls` in cells of `cellSize` points, loading through `targetLoader`:
    /// the URLs in a `GtkStringList`, the grid's `model`, which may be changed later.
    public convenience init(urls: [URL], cellSize: Int, targetLoader: ImageTargetLoader = .shared) {
        let list = gtk_string_list_new(nil)!
        for url in urls { gtk_string_list_append(list, url.absoluteString) }
        self.init(model: list, cellSize: cellSize, targetLoader: targetLoader)
        g_object_unref(UnsafeMutableRawPointer(list))
    }

    // MARK: - Items

    /// The URL of a model's item: its `url` string property, or the string of a
    /// `GtkStringList`'s item; nil when it has neither, or it is not a URL.
    public static func url(of item: UnsafeMutableRawPointer) -> URL? {
        (stringProperty("url")(item) ?? stringProperty("string")(item)).flatMap { URL(string: $0) }
    }

    /// Reads the string property `name` of an item; nil when the item has no such
    /// property, or it is not set. For captions: `caption: ImageGrid.stringProperty("title")`.
    public static func stringProperty(_ name: String) -> ItemReader<String> {
        { item in
            let instance = item.assumingMemoryBound(to: GTypeInstance.self)
            guard let objectClass = instance.pointee.g_class.map({ UnsafeMutableRawPointer($0).assumingMemoryBound(to: GObjectClass.self) }),
                let property = g_object_class_find_property(objectClass, name), property.pointee.value_type == stringType
            else { return nil }
            var value = GValue()
            g_value_init(&value, stringType)
            defer { g_value_unset(&value) }
            g_object_get_property(item.assumingMemoryBound(to: GObject.self), name, &value)
            return g_value_get_string(&value).map { String(cString: $0) }
        }
    }

    /// How many items the model has.
    public var count: Int { Int(g_list_model_get_n_items(model)) }

    /// The URL of item `index`; nil when there is no such item, or it has no URL.
    public func url(at index: Int) -> URL? {
        withItem(at: index) { itemURL($0) }
    }

    /// The caption of item `index`; nil without captions.
    public func caption(at index: Int) -> String? {
        guard let itemCaption else { return nil }
        return withItem(at: index) { itemCaption($0) }
    }

    /// What a screen reader says of item `index`: its caption, or the last part of
    /// its URL's path.
    public func accessibleLabel(at index: Int) -> String? {
        Self.accessibleLabel(caption: caption(at: index), url: url(at: index))
    }

    private static func accessibleLabel(caption: String?, url: URL?) -> String? {
        if let caption, !caption.isEmpty { return caption }
        return url.map { $0.lastPathComponent.isEmpty ? $0.absoluteString : $0.lastPathComponent }
    }

    private func withItem<T>(at index: Int, _ body: (UnsafeMutableRawPointer) -> T?) -> T? {
        guard index >= 0, index < count, let item = g_list_model_get_item(model, UInt32(index)) else { return nil }
        defer { g_object_unref(item) }
        return body(item)
    }

    /// The scroll position, for programs (and tests) that scroll the grid themselves.
    public var verticalAdjustment: UnsafeMutablePointer<GtkAdjustment> {
        gtk_scrolled_window_get_vadjustment(widget.opaque)
    }

    /// The cells bound now, with the index of the item each shows.
    public var boundCells: [(index: Int, view: ImageView)] {
        cells.values.compactMap { cell in cell.index.map { ($0, cell.view) } }.sorted { $0.index < $1.index }
    }

    /// The request a cell makes for item `index`: prefetches ask for the same one,
    /// so that the cell finds it in the memory cache. Nil when the item has no URL.
    public func request(for index: Int) -> ImageRequest? {
        url(at: index).map(request(for:))
    }

    private func request(for url: URL) -> ImageRequest {
        ImageRequest(url: url, targetSize: cellTargetSize, processors: options.processors)
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

    /// A cell's place in the grid, in points: the cell, its margins, its caption and
    /// whatever the theme puts around a grid item, as GTK measures it.
    private var cellExtent: (width: Double, height: Double) {
        let item = cells.values.lazy.compactMap { gtk_widget_get_parent($0.child) }.first
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
        let count = count
        return min(count, first * columns)..<min(count, (last + 1) * columns)
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
        /// The list item's child: the view, or a box of the view and its caption.
        let child: UnsafeMutablePointer<GtkWidget>
        let captionLabel: UnsafeMutablePointer<GtkWidget>?
        let listItem: OpaquePointer
        /// Whether the cell shows an item now.
        var isBound = false
        /// The bound item's URL, read when it was bound.
        var url: URL?
        /// Whether the bound item's load is running.
        var loading = false
        /// The bound item's load, while it runs (nil for a memory hit).
        var task: ImageTask?
        /// Whether the bound item's load has ended (its image or failure shown).
        var done = false
        /// Counts bindings and loads, so that a completion of an earlier one is told apart.
        var binding = 0

        init(view: ImageView, child: UnsafeMutablePointer<GtkWidget>, captionLabel: UnsafeMutablePointer<GtkWidget>?, listItem: OpaquePointer) {
            self.view = view
            self.child = child
            self.captionLabel = captionLabel
            self.listItem = listItem
        }

        /// The position of the bound item now: items added or removed before it move
        /// it without binding the cell again.
        var index: Int? {
            guard isBound else { return nil }
            let position = gtk_list_item_get_position(listItem)
            return position == UInt32.max ? nil : Int(position)
        }
    }

    private func setUp(_ item: UnsafeMutableRawPointer?) {
        guard let item else { return }
        let view = ImageView(targetLoader: targetLoader, contentMode: .aspectFill, width: cellSize, height: cellSize)
        var child = view.widget
        var label: UnsafeMutablePointer<GtkWidget>?
        if itemCaption != nil {
            let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2)!
            let caption = gtk_label_new(nil)!
            gtk_label_set_ellipsize(caption.opaque, PANGO_ELLIPSIZE_END)
            // As wide as the image, however long the caption.
            gtk_label_set_max_width_chars(caption.opaque, 1)
            gtk_widget_set_size_request(caption, Int32(cellSize), -1)
            gtk_box_append(box.cast(GtkBox.self), view.widget)
            gtk_box_append(box.cast(GtkBox.self), caption)
            child = box
            label = caption
        }
        for margin in [gtk_widget_set_margin_top, gtk_widget_set_margin_bottom, gtk_widget_set_margin_start, gtk_widget_set_margin_end] {
            margin(child, Int32(Self.margin))
        }
        // Square, whatever width the column is given.
        gtk_widget_set_halign(child, GTK_ALIGN_CENTER)
        gtk_widget_set_valign(child, GTK_ALIGN_CENTER)
        cells[item] = Cell(view: view, child: child, captionLabel: label, listItem: OpaquePointer(item))
        gtk_list_item_set_child(OpaquePointer(item), child)
    }

    private func bind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item], let object = gtk_list_item_get_item(cell.listItem) else { return }
        stopLoading(cell)
        cell.isBound = true
        cell.url = itemURL(object)
        cell.binding += 1
        cell.done = false
        let caption = itemCaption?(object)
        if let label = cell.captionLabel { gtk_label_set_text(label.opaque, caption ?? "") }
        setAccessibleLabel(Self.accessibleLabel(caption: caption, url: cell.url), of: cell)
        guard let index = cell.index else { return }
        didBind?(cell.view, index)
        // The first cells tell how wide GTK finds a cell with the theme's padding.
        widthChanged()
        if cell.url != nil, rows(extendedBy: Self.nearRows).contains(index) {
            load(cell)
        } else {
            // Off screen, or nothing to load: only the placeholder until it scrolls near.
            cell.view.cancelImageLoad()
            cell.view.image = placeholder
        }
    }

    /// The label goes on the list item's widget, the one that takes the focus.
    private func setAccessibleLabel(_ label: String?, of cell: Cell) {
        guard let focusable = gtk_widget_get_parent(cell.child) else { return }
        var value = GValue()
        g_value_init(&value, stringType)
        defer { g_value_unset(&value) }
        g_value_set_string(&value, label)
        var property = GTK_ACCESSIBLE_PROPERTY_LABEL
        gtk_accessible_update_property_value(OpaquePointer(focusable), 1, &property, &value)
    }

    private func load(_ cell: Cell) {
        guard let url = cell.url else { return }
        cell.binding += 1
        let binding = cell.binding
        cell.loading = true
        statistics.inFlight += 1
        var options = options
        options.targetSize = cellTargetSize
        let task = cell.view.setImage(with: url, placeholder: placeholder, options: options) { [weak self, weak cell] result in
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
                if let index = cell.index { self.didFail?(cell.view, index, error) }
            }
            self.statistics = statistics
        }
        if cell.loading, cell.binding == binding { cell.task = task }
        // The cell's own load has joined any prefetch or kept load of its URL, which
        // are no longer needed.
        var joined = keptLoads.filter { $0.url == url }.map(\.task)
        keptLoads.removeAll { $0.url == url }
        if let prefetch = prefetches.removeValue(forKey: url) { joined.append(prefetch) }
        if !joined.isEmpty { targetLoader.loader.cancel(joined) }
    }

    /// Stops the load of a cell that GTK rebinds or unbinds before its image came. Its
    /// view will show nothing of it; the load itself goes on for the caches, at the
    /// lowest priority, among the latest `keptLoadLimit`.
    private func stopLoading(_ cell: Cell) {
        guard cell.loading else { return }
        // Counted first: the cancelled load's completion, told at once, is then one
        // of an earlier binding and counts nothing.
        cell.loading = false
        let task = cell.task
        cell.task = nil
        cell.binding += 1
        statistics.inFlight -= 1
        if let task, let url = cell.url, keptLoadLimit > 0, !task.isFinished {
            // Made before the view's is cancelled, so the transfer and decode they
            // share never lose their last waiter.
            keep(targetLoader.loader.task(with: task.request), for: url)
        }
        cell.view.cancelImageLoad()
    }

    /// Lets `task`, which no cell waits for, go on behind everything else, so that its
    /// image lands in the caches; the oldest such loads beyond `keptLoadLimit` are
    /// cancelled.
    private func keep(_ task: ImageTask, for url: URL) {
        task.priority = .veryLow
        keptLoads.removeAll { $0.task.isFinished }
        keptLoads.append((url, task))
        guard keptLoads.count > keptLoadLimit else { return }
        let dropped = keptLoads.prefix(keptLoads.count - keptLoadLimit)
        keptLoads.removeFirst(dropped.count)
        targetLoader.loader.cancel(dropped.map(\.task))
    }

    private func unbind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item] else { return }
        stopLoading(cell)
        cell.view.cancelImageLoad()
        cell.binding += 1
        cell.done = false
        if let index = cell.index { didUnbind?(cell.view, index) }
        cell.isBound = false
        cell.url = nil
    }

    /// A click or Enter on the cell at `position` (GtkGridView's `activate`).
    private func activate(at position: Int) {
        guard let cell = cells.values.first(where: { $0.index == position }) else { return }
        didActivate?(position, cell.view)
    }

    /// Items came or went: GTK rebinds the cells of new items and moves the others,
    /// so what is near the screen is looked at again once it has.
    private func itemsChanged() {
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.scrolled() }
        }
    }

    // MARK: - Visible first

    /// Starts the loads of the bound cells near the screen that have none, and puts
    /// those of cells that left it behind everything else (`veryLow`), so that what is
    /// on screen is next in line; a transfer under way is not thrown away, since the
    /// cell may well come back.
    private func updateLoads() {
        let near = rows(extendedBy: Self.nearRows)
        for cell in cells.values {
            guard let index = cell.index, !cell.done else { continue }
            if near.contains(index) {
                if !cell.loading { load(cell) } else { cell.task?.priority = options.priority }
            } else {
                cell.task?.priority = .veryLow
            }
        }
    }

    /// Loads what scrolled near, lowers what scrolled away, prefetches the rows beyond
    /// in the direction of scrolling, and lets the prefetches that fell behind go on
    /// among the kept loads (a prefetch is stopped only as they are).
    private func scrolled() {
        let value = gtk_adjustment_get_value(verticalAdjustment)
        let downwards = value >= lastScrollValue
        lastScrollValue = value
        updateLoads()
        let near = rows(extendedBy: Self.nearRows)
        guard !near.isEmpty else { return }
        let ahead = columns * prefetchRows
        let range = downwards
            ? near.upperBound..<min(count, near.upperBound + ahead)
            : max(0, near.lowerBound - ahead)..<near.lowerBound
        // Nearest first.
        let ordered = (downwards ? Array(range) : range.reversed()).compactMap(request(for:))
        let wanted = Dictionary(ordered.map { ($0.url, $0) }) { first, _ in first }
        // A prefetch whose row has come near goes on: its cell, bound in the coming
        // layout, joins its transfer rather than starting the request over.
        let nearURLs = Set(near.compactMap(url(at:)))
        for (url, task) in prefetches where task.isFinished || (wanted[url] == nil && !nearURLs.contains(url)) {
            prefetches[url] = nil
            if !task.isFinished { keep(task, for: url) }
        }
        for var request in ordered where prefetches[request.url] == nil {
            request.priority = .low
            prefetches[request.url] = targetLoader.loader.task(with: request)
        }
    }
}

/// `G_TYPE_STRING`, a C macro.
private let stringType = GType(16 << G_TYPE_FUNDAMENTAL_SHIFT)
