import Foundation
import Imago
import ImagoUI

/// How the picture measures, lays out and draws itself, and how crossfades and
/// animations move on with the frame clock.
extension PictureState {
    func measure(
        _ orientation: GtkOrientation, forSize: Int32, minimum: UnsafeMutablePointer<Int32>?,
        natural: UnsafeMutablePointer<Int32>?
    ) {
        minimum?.pointee = 0
        // Its natural size is the image's, in points: it was decoded for this scale.
        let scale = Double(max(1, gtk_widget_get_scale_factor(widget)))
        var width = 0.0, height = 0.0
        if let measuredImageSize {
            (width, height) = (Double(measuredImageSize.width) / scale, Double(measuredImageSize.height) / scale)
        } else if let placeholder = imago_picture_get_placeholder_paintable(picture) {
            (width, height) = (
                Double(gdk_paintable_get_intrinsic_width(placeholder)), Double(gdk_paintable_get_intrinsic_height(placeholder))
            )
        }
        let horizontal = orientation == GTK_ORIENTATION_HORIZONTAL
        var size = horizontal ? width : height
        if forSize >= 0, width > 0, height > 0 {
            size = horizontal ? Double(forSize) * width / height : Double(forSize) * height / width
        }
        natural?.pointee = Int32(size.rounded(.up))
    }

    func allocate(width: Int32, height: Int32) {
        // The spinner, measured as GTK wants before allocating, sits in the middle.
        var minimumWidth: Int32 = 0, minimumHeight: Int32 = 0
        gtk_widget_measure(spinner, GTK_ORIENTATION_HORIZONTAL, -1, &minimumWidth, nil, nil, nil)
        gtk_widget_measure(spinner, GTK_ORIENTATION_VERTICAL, -1, &minimumHeight, nil, nil, nil)
        let side = max(min(24, width, height), minimumWidth, minimumHeight)
        var box = GtkAllocation(x: (width - side) / 2, y: (height - side) / 2, width: side, height: side)
        gtk_widget_size_allocate(spinner, &box, -1)
        // The progress bar, two thirds of the width, and the caller's indicator at its
        // natural size, in the middle too.
        var barHeight: Int32 = 0
        gtk_widget_measure(progressBar, GTK_ORIENTATION_VERTICAL, -1, nil, &barHeight, nil, nil)
        var barWidth: Int32 = 0
        gtk_widget_measure(progressBar, GTK_ORIENTATION_HORIZONTAL, -1, &barWidth, nil, nil, nil)
        barWidth = max(barWidth, width * 2 / 3)
        var bar = GtkAllocation(x: (width - barWidth) / 2, y: (height - barHeight) / 2, width: barWidth, height: barHeight)
        gtk_widget_size_allocate(progressBar, &bar, -1)
        if let custom = customIndicator?.widget?.pointer.assumingMemoryBound(to: GtkWidget.self) {
            var naturalWidth: Int32 = 0, naturalHeight: Int32 = 0
            gtk_widget_measure(custom, GTK_ORIENTATION_HORIZONTAL, -1, nil, &naturalWidth, nil, nil)
            gtk_widget_measure(custom, GTK_ORIENTATION_VERTICAL, naturalWidth, nil, &naturalHeight, nil, nil)
            var own = GtkAllocation(
                x: (width - naturalWidth) / 2, y: (height - naturalHeight) / 2, width: naturalWidth, height: naturalHeight)
            gtk_widget_size_allocate(custom, &own, -1)
        }
        isAllocated = true
        sizeChanged()
    }

    func snapshot(_ snapshot: OpaquePointer) {
        let width = Double(gtk_widget_get_width(widget)), height = Double(gtk_widget_get_height(widget))
        guard width > 0, height > 0 else { return }
        var bounds = graphene_rect_t()
        graphene_rect_init(&bounds, 0, 0, Float(width), Float(height))
        gtk_snapshot_push_clip(snapshot, &bounds)
        let crossfading = loadingState.isCrossfading
        let front = current?.texture(at: position)
        if crossfading, let previous {
            draw(texture: OpaquePointer(previous.pointer), in: snapshot, width: width, height: height)
        } else if front == nil || crossfading {
            drawPlaceholder(in: snapshot, width: width, height: height)
        }
        if let front {
            if crossfading { gtk_snapshot_push_opacity(snapshot, loadingState.crossfadeProgress) }
            draw(texture: front, in: snapshot, width: width, height: height)
            if crossfading { gtk_snapshot_pop(snapshot) }
        }
        gtk_snapshot_pop(snapshot)
        gtk_widget_snapshot_child(widget, spinner, snapshot)
        gtk_widget_snapshot_child(widget, progressBar, snapshot)
        if let custom = customIndicator?.widget?.pointer.assumingMemoryBound(to: GtkWidget.self) {
            gtk_widget_snapshot_child(widget, custom, snapshot)
        }
    }

    private func draw(texture: OpaquePointer, in snapshot: OpaquePointer, width: Double, height: Double) {
        let scale = Double(max(1, gtk_widget_get_scale_factor(widget)))
        draw(
            texture, intrinsicWidth: Double(gdk_texture_get_width(texture)) / scale,
            intrinsicHeight: Double(gdk_texture_get_height(texture)) / scale, in: snapshot, width: width,
            height: height)
    }

    /// The placeholder paintable, fitted as an image would be; else the placeholder
    /// icon, at most 48 points, in the middle.
    private func drawPlaceholder(in snapshot: OpaquePointer, width: Double, height: Double) {
        if let placeholder = imago_picture_get_placeholder_paintable(picture) {
            draw(
                placeholder, intrinsicWidth: Double(gdk_paintable_get_intrinsic_width(placeholder)),
                intrinsicHeight: Double(gdk_paintable_get_intrinsic_height(placeholder)), in: snapshot, width: width,
                height: height)
            return
        }
        guard let name = imago_picture_get_placeholder_icon_name(picture).map({ String(cString: $0) }) else { return }
        let side = Int32(min(48, width, height))
        let scale = gtk_widget_get_scale_factor(widget)
        let key = "\(name) \(side) \(scale)"
        if icon?.key != key {
            let theme = gtk_icon_theme_get_for_display(gtk_widget_get_display(widget))
            guard let found = gtk_icon_theme_lookup_icon(
                theme, name, nil, side, scale, gtk_widget_get_direction(widget), GtkIconLookupFlags(rawValue: 0))
            else { return }
            icon = (key, ObjectReference(taking: UnsafeMutableRawPointer(found)))
        }
        guard let icon else { return }
        gtk_snapshot_save(snapshot)
        var origin = graphene_point_t(x: Float((width - Double(side)) / 2), y: Float((height - Double(side)) / 2))
        gtk_snapshot_translate(snapshot, &origin)
        gdk_paintable_snapshot(OpaquePointer(icon.paintable.pointer), snapshot, Double(side), Double(side))
        gtk_snapshot_restore(snapshot)
    }

    /// Draws `paintable` as the content fit says, centred: stretched to the box
    /// ("fill"), whole inside it ("contain"), covering it ("cover", cropped by the
    /// clip), or whole at no more than its own size ("scale-down"). One without an
    /// intrinsic size fills the box.
    private func draw(
        _ paintable: OpaquePointer, intrinsicWidth: Double, intrinsicHeight: Double, in snapshot: OpaquePointer,
        width: Double, height: Double
    ) {
        var drawnWidth = width, drawnHeight = height
        if intrinsicWidth > 0, intrinsicHeight > 0, contentFit != GTK_CONTENT_FIT_FILL {
            let fit = min(width / intrinsicWidth, height / intrinsicHeight)
            let factor: Double =
                switch contentFit {
                case GTK_CONTENT_FIT_COVER: max(width / intrinsicWidth, height / intrinsicHeight)
                case GTK_CONTENT_FIT_SCALE_DOWN: min(1, fit)
                default: fit
                }
            drawnWidth = intrinsicWidth * factor
            drawnHeight = intrinsicHeight * factor
        }
        gtk_snapshot_save(snapshot)
        var origin = graphene_point_t(x: Float((width - drawnWidth) / 2), y: Float((height - drawnHeight) / 2))
        gtk_snapshot_translate(snapshot, &origin)
        gdk_paintable_snapshot(paintable, snapshot, drawnWidth, drawnHeight)
        gtk_snapshot_restore(snapshot)
    }

    /// Shows the indicator the loading state says (the spinner, the progress bar
    /// once the size is known, or the caller's own) and redraws.
    func render() {
        guard !isDetached else { return }
        if !loadingState.isCrossfading { replacePrevious(with: nil) }
        let shown = loadingState.visibleIndicator, progress = loadingState.progress
        let spins =
            shown == .activity || (shown == .progress && progress == nil) || (shown == .custom && customIndicator == nil)
        gtk_widget_set_visible(spinner, spins ? 1 : 0)
        gtk_spinner_set_spinning(OpaquePointer(spinner), spins ? 1 : 0)
        let fills = shown == .progress && progress != nil
        gtk_widget_set_visible(progressBar, fills ? 1 : 0)
        if fills, let progress { gtk_progress_bar_set_fraction(OpaquePointer(progressBar), progress) }
        if let customIndicator {
            if let custom = customIndicator.widget?.pointer.assumingMemoryBound(to: GtkWidget.self) {
                gtk_widget_set_visible(custom, shown == .custom ? 1 : 0)
            }
            loadingState.render(into: customIndicator.indicator)
        }
        gtk_widget_queue_draw(widget)
    }

    func replacePrevious(with texture: OpaquePointer?) {
        previous = texture.map { ObjectReference(retaining: UnsafeMutableRawPointer($0)) }
    }

    // MARK: - Frames: crossfades and animations advance on the frame clock

    private var isAnimating: Bool {
        guard let current, current.image.isAnimated else { return false }
        return !animation.isFinished(current)
    }

    func mappingChanged(_ mapped: Bool) {
        isMapped = mapped
        // Unmapped, the animation holds its place and resumes from it.
        if !mapped { animation.pause() }
        render()
        updateTicking()
    }

    func updateTicking() {
        let needed = isMapped && (loadingState.isCrossfading || isAnimating)
        if needed, tickID == 0 {
            let handle = WeakPictureState(self)
            tickID = addTickCallback(to: widget) { time in handle.state?.tick(at: time) ?? false }
        } else if !needed, tickID != 0 {
            gtk_widget_remove_tick_callback(widget, tickID)
            tickID = 0
        }
    }

    /// One frame of the frame clock; returns whether more frames are wanted.
    private func tick(at time: Double) -> Bool {
        if let current, current.image.isAnimated {
            let wanted = animation.position(of: current, at: time)
            // A frame not decoded yet leaves the one shown on screen until it is.
            if wanted != position, current.texture(at: wanted) != nil {
                position = wanted
                frameIndex = wanted % current.image.frameCount
                didChangeFrame?(frameIndex)
            }
        }
        render()
        let goOn = isMapped && (loadingState.isCrossfading || isAnimating)
        if !goOn { tickID = 0 }
        return goOn
    }
}
