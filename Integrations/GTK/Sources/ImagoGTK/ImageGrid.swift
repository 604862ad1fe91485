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
/// its URL's path. A cell whose load fails shows the failure, except when the load ran
/// out of time (`ImagoError.timedOut`), which may be time spent waiting behind other
/// loads: such a cell asks again while it stays near the screen, or when it comes back.
///
/// With the default target loader, the grid keeps its decoded thumbnails in a memory
/// tier of its own sized from what it shows (`memoryCache`, `memoryBudget`): the rows
/// on screen, those prefetched ahead and two screens behind. Further rows come back
/// from the disk tier, so scrolling through thousands of images costs no more memory
/// than through a hundred.
///
/// The grid lives as long as its widget: a grid whose `widget` is in a window goes on
/// loading when the program keeps no reference to it, and goes when GTK lets the
/// widget go (its window destroyed). A widget never put in a container is the
/// caller's to release (`g_object_ref_sink`, then `g_object_unref`), and the grid
/// with it.
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
    public var options: ImageDisplayOptions {
        didSet { updateMemoryBudget() }
    }
    /// Shown in a cell until its image arrives, and in the cell of an item with no URL.
    public var placeholder: DecodedImage?
    /// How many rows ahead of the scroll position are prefetched (3 by default).
    public var prefetchRows = 3 {
        didSet { updateMemoryBudget() }
    }
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
    public internal(set) var statistics = Statistics() {
        didSet { if statistics != oldValue { didChangeStatistics?(statistics) } }
    }

    /// The space around each cell, in points, on every side.
    static let margin = 2
    /// Rows above and below those on screen whose cells load as if on screen: what a
    /// frame of scrolling brings in is already on its way.
    static let nearRows = 1
    /// The least time, in seconds, a load that ran out of time must have taken for
    /// its cell, still near the screen, to ask again at once (see `askAgain`).
    static let timeoutRetrySpacing = 1.0

    /// What the cells and prefetches load through: the target loader the grid was
    /// given, or for `ImageTargetLoader.shared` (the default) the grid's own, made
    /// like it but keeping its images in `memoryCache`.
    public let targetLoader: ImageTargetLoader
    /// The memory tier of a grid made with the default target loader: the grid's own,
    /// its limits following the cells it shows (`memoryBudget`) rather than a fifth of
    /// the machine's memory; nil for a grid given a target loader of its own.
    public let memoryCache: ImageCache?
    /// The grid's own reference to its model.
    private let modelReference: ObjectReference
    let itemURL: ItemReader<URL>
    let itemCaption: ItemReader<String>?
    /// Cells by their list item's address: GTK owns the items, the grid their views.
    var cells: [UnsafeMutableRawPointer: Cell] = [:]
    /// The prefetches of the rows ahead, by URL.
    var prefetches: [URL: ImageTask] = [:]
    /// Loads no cell waits for any more, let go on at the lowest priority, oldest first.
    var keptLoads: [(url: URL, task: ImageTask)] = []
    var lastScrollValue = 0.0
    /// The columns shown: as many cells as the width holds.
    public private(set) var columns = 1

    /// A grid of the items of `model` (a `GListModel *`) in cells of `cellSize` points,
    /// loading through `targetLoader`: for `ImageTargetLoader.shared` (the default),
    /// a loader made like it whose memory tier is the grid's own, sized from its
    /// geometry (`memoryCache`). `url` finds an item's URL (by default the
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
        if targetLoader === ImageTargetLoader.shared {
            // Sized for a provisional screen until the grid has a size.
            let cache = ImageCache(costLimit: 1, countLimit: 1)
            memoryCache = cache
            self.targetLoader = Self.ownTargetLoader(over: cache)
        } else {
            memoryCache = nil
            self.targetLoader = targetLoader
        }
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
            // While the grid moves, decodes yield the cores to the main thread, which
            // has a frame to draw every 16 ms.
            ImageLoader.noteInteraction()
            self?.scrolled()
        }
        // The horizontal adjustment's page is the grid's width, set as it is allocated.
        let horizontal = gtk_scrolled_window_get_hadjustment(widget.opaque)!
        connectSignal(UnsafeMutableRawPointer(horizontal), "changed") { [weak self] _ in
            self?.widthChanged()
        }
        // The vertical one's page is its height: the rows on screen.
        connectSignal(UnsafeMutableRawPointer(verticalAdjustment), "changed") { [weak self] _ in
            self?.updateMemoryBudget()
        }
        connectSignal(gridView.object, "notify::scale-factor") { [weak self] _ in
            self?.updateMemoryBudget()
        }
        updateMemoryBudget()
        // The widget holds the grid, as an ImagoPicture holds its state: every handler
        // above holds the grid weakly, so a grid made in a function that keeps only
        // its widget (a GtkApplication's "activate" handler) would otherwise go at
        // once, leaving cells that never load. The grid holds no reference to the
        // widget, so when GTK lets the widget go (its window destroyed), the grid goes.
        g_object_set_data_full(widget.cast(GObject.self), "imago-grid", Unmanaged.passRetained(self).toOpaque(), releaseGrid)
    }

    isolated deinit {
        targetLoader.loader.cancel(Array(prefetches.values) + keptLoads.map(\.task))
    }

    /// A grid of `urls` in cells of `cellSize` points, loading through `targetLoader`
    /// (for the default, `ImageTargetLoader.shared`, the grid's own over a memory tier
    /// sized from its geometry, as `init(model:cellSize:targetLoader:url:caption:)` says):
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

    static func accessibleLabel(caption: String?, url: URL?) -> String? {
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
    var cellTargetSize: TargetSize? {
        guard let size = options.targetSize else { return nil }
        let scale = Double(max(1, gtk_widget_get_scale_factor(gridView)))
        return TargetSize(
            points: Double(size.width), Double(size.height), scale: scale, contentMode: size.contentMode,
            allowsUpscaling: size.allowsUpscaling)
    }

    /// A cell's place in the grid, in points: the cell, its margins, its caption and
    /// whatever the theme puts around a grid item, as GTK measures it.
    var cellExtent: (width: Double, height: Double) {
        let item = cells.values.lazy.compactMap { gtk_widget_get_parent($0.child) }.first
        var width = Int32(cellSize + 2 * Self.margin), height = width
        if let item {
            gtk_widget_measure(item, GTK_ORIENTATION_HORIZONTAL, -1, &width, nil, nil, nil)
            gtk_widget_measure(item, GTK_ORIENTATION_VERTICAL, -1, &height, nil, nil, nil)
        }
        return (Double(max(1, width)), Double(max(1, height)))
    }

    /// The items of the rows on screen and `extra` rows either side of them.
    func rows(extendedBy extra: Int) -> Range<Int> {
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

    func widthChanged() {
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
                self.updateMemoryBudget()
                self.updateLoads()
            }
        }
    }
}

/// Lets go of the grid its widget held, when GTK finalizes the widget.
private let releaseGrid: GDestroyNotify = { data in
    if let data { Unmanaged<ImageGrid>.fromOpaque(data).release() }
}

/// `G_TYPE_STRING`, a C macro.
let stringType = GType(16 << G_TYPE_FUNDAMENTAL_SHIFT)
