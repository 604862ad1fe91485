import Foundation
import Imago
import ImagoUI

/// The grid's cells: the views GTK recycles, bound to an item at a time, loading it
/// only near the screen.
extension ImageGrid {
    final class Cell {
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
        /// Whether the bound item's load ran out of time too soon after it started to
        /// be asked again at once: it is, once the cell leaves the screen and comes back.
        var awaitsRetry = false
        /// When the bound item's latest load started, on `monotonicSeconds()`'s clock.
        var loadStarted = 0.0
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

    func setUp(_ item: UnsafeMutableRawPointer?) {
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

    func bind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item], let object = gtk_list_item_get_item(cell.listItem) else { return }
        stopLoading(cell)
        cell.isBound = true
        cell.url = itemURL(object)
        cell.binding += 1
        cell.done = false
        cell.awaitsRetry = false
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

    func unbind(_ item: UnsafeMutableRawPointer?) {
        guard let item, let cell = cells[item] else { return }
        stopLoading(cell)
        cell.view.cancelImageLoad()
        cell.binding += 1
        cell.done = false
        cell.awaitsRetry = false
        if let index = cell.index { didUnbind?(cell.view, index) }
        cell.isBound = false
        cell.url = nil
    }

    /// A click or Enter on the cell at `position` (GtkGridView's `activate`).
    func activate(at position: Int) {
        guard let cell = cells.values.first(where: { $0.index == position }) else { return }
        didActivate?(position, cell.view)
    }

    /// Items came or went: GTK rebinds the cells of new items and moves the others,
    /// so what is near the screen is looked at again once it has.
    func itemsChanged() {
        DispatchQueue.main.async { [weak self] in
            MainActor.assumeIsolated { self?.scrolled() }
        }
    }
}
