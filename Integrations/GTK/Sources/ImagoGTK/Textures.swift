import Imago

extension Bitmap {
    /// A GDK texture of the pixels (a new reference, for the caller to release).
    ///
    /// Imago's bitmaps are already what GDK's `R8G8B8A8_PREMULTIPLIED` memory format
    /// describes, row stride included, so the texture is made on the bitmap's own
    /// pixels, not a copy: the `GBytes` keeps the array alive until GDK lets go, and
    /// an image in the memory cache and on screen is held once. (`pixels` is a
    /// constant, so its buffer never moves or changes while the texture holds it.)
    public func makeTexture() -> OpaquePointer {
        let kept = Unmanaged.passRetained(PixelsBox(pixels))
        let bytes = kept.takeUnretainedValue().pixels.withUnsafeBytes { buffer in
            g_bytes_new_with_free_func(buffer.baseAddress, gsize(bytesPerRow * height), releasePixels, kept.toOpaque())
        }
        defer { g_bytes_unref(bytes) }
        return gdk_memory_texture_new(
            Int32(width), Int32(height), GDK_MEMORY_R8G8B8A8_PREMULTIPLIED, bytes, gsize(bytesPerRow))
    }

    /// The identity of the pixels' storage: two bitmaps sharing it show the same image,
    /// so a view asked to show an image it already shows keeps its textures.
    var storageIdentity: UnsafeRawPointer? {
        pixels.withUnsafeBytes { $0.baseAddress }
    }
}

/// A bitmap's pixel array, kept alive for as long as a texture is made on it.
///
/// `@unchecked Sendable`: it only holds an immutable array, and GLib may release it
/// on whichever thread drops the texture's last reference.
private final class PixelsBox: @unchecked Sendable {
    let pixels: [UInt8]
    init(_ pixels: [UInt8]) { self.pixels = pixels }
}

private let releasePixels: GDestroyNotify = { data in
    if let data { Unmanaged<PixelsBox>.fromOpaque(data).release() }
}

/// Renders widgets to pixels through the window's own renderer, as the screen shows
/// them: for tests that look at what a view drew, and for screenshots, with no
/// screenshot tool or compositor.
@MainActor
public enum WidgetCapture {
    /// The widget as drawn now, at its allocated size, as a GDK texture (a new
    /// reference); nil before the widget is realized or allocated.
    public static func texture(of widget: UnsafeMutablePointer<GtkWidget>) -> OpaquePointer? {
        let width = gtk_widget_get_width(widget), height = gtk_widget_get_height(widget)
        guard width > 0, height > 0, let native = gtk_widget_get_native(widget),
            let renderer = gtk_native_get_renderer(native)
        else { return nil }
        let paintable = gtk_widget_paintable_new(widget)
        defer { g_object_unref(UnsafeMutableRawPointer(paintable)) }
        let snapshot = gtk_snapshot_new()
        gdk_paintable_snapshot(paintable, snapshot, Double(width), Double(height))
        guard let node = gtk_snapshot_free_to_node(snapshot) else { return nil }
        defer { gsk_render_node_unref(node) }
        var area = graphene_rect_t()
        graphene_rect_init(&area, 0, 0, Float(width), Float(height))
        return gsk_renderer_render_texture(renderer, node, &area)
    }

    /// The widget as drawn now, as an Imago bitmap (RGBA, premultiplied).
    public static func bitmap(of widget: UnsafeMutablePointer<GtkWidget>) -> Bitmap? {
        guard let texture = texture(of: widget) else { return nil }
        defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
        return bitmap(of: texture)
    }

    /// The pixels of a texture as an Imago bitmap. GDK hands them out as Cairo's
    /// ARGB32: B, G, R, A in memory on a little-endian machine, A, R, G, B on a big-endian one.
    public static func bitmap(of texture: OpaquePointer) -> Bitmap {
        let width = Int(gdk_texture_get_width(texture)), height = Int(gdk_texture_get_height(texture))
        var pixels = [UInt8](repeating: 0, count: width * height * 4)
        pixels.withUnsafeMutableBufferPointer { gdk_texture_download(texture, $0.baseAddress, gsize(width * 4)) }
        for i in stride(from: 0, to: pixels.count, by: 4) {
            #if _endian(little)
            pixels.swapAt(i, i + 2)
            #else
            let alpha = pixels[i]
            (pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3]) = (pixels[i + 1], pixels[i + 2], pixels[i + 3], alpha)
            #endif
        }
        return Bitmap(width: width, height: height, pixels: pixels)
    }

    /// Saves the widget as drawn now to a PNG file; false when it cannot be drawn or
    /// written.
    @discardableResult
    public static func savePNG(of widget: UnsafeMutablePointer<GtkWidget>, to path: String) -> Bool {
        guard let texture = texture(of: widget) else { return false }
        defer { g_object_unref(UnsafeMutableRawPointer(texture)) }
        return gdk_texture_save_to_png(texture, path) != 0
    }
}
