#if os(Linux)
import Foundation
import Glibc

extension ImageDecoders {
    /// SVG through librsvg, rasterised with cairo: at the target size when there is
    /// one (the document scaled to it with its aspect ratio kept, enlarged too: a
    /// vector has the detail), else at the document's own size (its `width` and
    /// `height`, else its `viewBox`).
    ///
    /// The document is read from memory with no base URL, so librsvg resolves no
    /// reference to a file or the network (`<image href>`, `xi:include`, external
    /// stylesheets): only `data:` URLs and the document's own elements are drawn, as
    /// in a browser's `<img>`. librsvg runs no scripts.
    ///
    /// The raster is bounded by the pixel limit and the memory budget: a document
    /// declaring a larger size is drawn smaller, its aspect ratio kept, rather than
    /// refused, since a vector's declared size is a suggestion, not pixels that exist.
    /// librsvg has no way to be told to stop (its cancellable rendering came in 2.59),
    /// so at the deadline a `RenderWatch` puts the drawing's context into cairo's error
    /// state, and librsvg ends the render at its next call on it. The deadline is also
    /// checked between parsing and drawing, and a document whose `<use>` references
    /// multiply (`SVGReferences`) is refused before librsvg sees it.
    @_spi(Internals) public struct SVG: ImageDecoding {
        /// The largest side cairo draws (its image surfaces stop at 32767 pixels).
        static let largestSide = 32767

        /// What librsvg 2.54's tree holds for each element of a document, counted
        /// against the memory budget beside the raster: 1.8 KB for each of 900,000
        /// `<rect>`s (1.6 GB for a 25 MB file), 1.9 KB for each of 100,000 short
        /// `<path>`s, measured by the process's peak.
        static let bytesPerElement = 2048

        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as SVG (an `<svg>` root element), nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .svg
        }

        /// Parses and draws the document. Throws `decodingFailed` with librsvg's
        /// message for a document it cannot read (not well-formed XML, no `<svg>`
        /// root), and `decodingTimedOut` when the deadline passes between steps.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            try data.withBytes { bytes throws(ImagoError) in try decode(bytes, options: options) }
        }

        private func decode(_ bytes: UnsafeBufferPointer<UInt8>, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            guard let base = bytes.baseAddress, !bytes.isEmpty else { throw Self.failure("no data", nil) }
            let deadline = options.deadline()
            // Before librsvg: a document whose references multiply is refused from a scan
            // of its tags, and one whose tree would not fit the memory budget.
            let (elements, referenced) = SVGReferences.elementCounts(in: bytes)
            guard referenced <= SVGReferences.limit else {
                throw Self.failure("its <use> references draw more than \(SVGReferences.limit) elements", nil)
            }
            let treeBytes = elements * Self.bytesPerElement
            try options.checkMemory(treeBytes, format: .svg)
            let rsvg = try LibRSVG.shared.get()
            var error: UnsafeMutableRawPointer?
            guard let handle = rsvg.handleNewFromData(base, bytes.count, &error) else {
                throw Self.failure("the document is not well-formed SVG", rsvg.take(&error))
            }
            defer { rsvg.objectUnref(UnsafeMutableRawPointer(handle)) }
            try deadline.check(.svg)
            rsvg.handleSetDPI(handle, 96)

            let (intrinsicWidth, intrinsicHeight) = try Self.intrinsicSize(handle, rsvg)
            let (width, height) = Self.rasterSize(
                intrinsicWidth: intrinsicWidth, intrinsicHeight: intrinsicHeight, options: options, reserved: treeBytes)
            try options.checkSize(width: width, height: height)
            try options.checkMemory(width * height * 4 + treeBytes, format: .svg)

            let bitmap = try Bitmap.make(width: width, height: height) { pixels throws(ImagoError) in
                pixels.initializeMemory(as: UInt8.self, repeating: 0)
                let stride = width * 4
                guard let surface = rsvg.imageSurfaceCreateForData(pixels.baseAddress, Self.formatARGB32, Int32(width), Int32(height), Int32(stride)) else {
                    throw Self.failure("cairo could not make a surface", nil)
                }
                defer { rsvg.surfaceDestroy(surface) }
                guard rsvg.surfaceStatus(surface) == 0, let context = rsvg.create(surface) else {
                    throw Self.failure("cairo could not make a \(width)×\(height) surface", nil)
                }
                defer { rsvg.destroy(context) }
                let watch = deadline.nanoseconds == 0 ? nil : RenderWatch(context, deadline: deadline, rsvg: rsvg)
                // Ended before the context is destroyed, whatever happens.
                defer { _ = watch?.end() }
                var viewport = (0.0, 0.0, Double(width), Double(height))
                let drawn = withUnsafePointer(to: &viewport) { viewport in
                    rsvg.handleRenderDocument(handle, context, UnsafeRawPointer(viewport), &error)
                }
                let stopped = watch?.end() ?? false
                rsvg.surfaceFlush(surface)
                if stopped {
                    _ = rsvg.take(&error)
                    throw .decodingTimedOut(format: .svg, seconds: deadline.seconds)
                }
                guard drawn != 0 else { throw Self.failure("the document could not be drawn", rsvg.take(&error)) }
                try deadline.check(.svg)
                Self.cairoToRGBA(pixels, count: width * height)
            }
            try deadline.check(.svg)
            return DecodedImage(bitmap: bitmap, format: .svg)
        }

        /// The document's own size in pixels: its `width` and `height` in absolute
        /// units (at 96 dots an inch), else its `viewBox`'s size, else what librsvg
        /// makes of it (the drawing's extent).
        private static func intrinsicSize(_ handle: OpaquePointer, _ rsvg: LibRSVG) throws(ImagoError) -> (Double, Double) {
            var width = 0.0, height = 0.0
            if rsvg.handleGetIntrinsicSizeInPixels(handle, &width, &height) != 0, width > 0, height > 0, width.isFinite, height.isFinite {
                return (width, height)
            }
            var hasWidth: Int32 = 0, hasHeight: Int32 = 0, hasViewBox: Int32 = 0
            // RsvgLength is a double and an enum (16 bytes); RsvgRectangle four doubles.
            var lengthWidth = (0.0, 0.0), lengthHeight = (0.0, 0.0)
            var viewBox = (0.0, 0.0, 0.0, 0.0)
            rsvg.handleGetIntrinsicDimensions(handle, &hasWidth, &lengthWidth, &hasHeight, &lengthHeight, &hasViewBox, &viewBox)
            if hasViewBox != 0, viewBox.2 > 0, viewBox.3 > 0, viewBox.2.isFinite, viewBox.3.isFinite {
                return (viewBox.2, viewBox.3)
            }
            var dimensions = (Int32(0), Int32(0), 0.0, 0.0)
            rsvg.handleGetDimensions(handle, &dimensions)
            guard dimensions.0 > 0, dimensions.1 > 0 else {
                throw failure("the document gives no size (no width and height, no viewBox, nothing drawn)", nil)
            }
            return (Double(dimensions.0), Double(dimensions.1))
        }

        /// The raster's size: the target's layout of the document (enlarging too), or
        /// the document's size rounded up; then shrunk, aspect kept, to what the pixel
        /// limit, the memory budget (less the `reserved` bytes of the document's tree)
        /// and cairo allow.
        static func rasterSize(intrinsicWidth: Double, intrinsicHeight: Double, options: DecodingOptions, reserved: Int = 0) -> (Int, Int) {
            var width = intrinsicWidth, height = intrinsicHeight
            if let target = options.targetSize {
                // The layout works in whole pixels; a document under one pixel a side counts as one.
                let sourceWidth = max(1, Int(min(intrinsicWidth.rounded(.up), 1e9)))
                let sourceHeight = max(1, Int(min(intrinsicHeight.rounded(.up), 1e9)))
                let enlarging = TargetSize(
                    width: target.width, height: target.height, contentMode: target.contentMode, allowsUpscaling: true)
                let layout = enlarging.layout(sourceWidth: sourceWidth, sourceHeight: sourceHeight)
                width = Double(layout.scaledWidth)
                height = Double(layout.scaledHeight)
            }
            let pixels = Double(min(options.maximumPixelCount, max(1, (options.effectiveMemoryBudget - reserved) / 4)))
            var scale = 1.0
            if width * height > pixels { scale = (pixels / (width * height)).squareRoot() }
            scale = min(scale, Double(largestSide) / width, Double(largestSide) / height)
            // Rounded down when shrunk, so the product stays within the limit.
            func side(_ value: Double) -> Int {
                let scaled = value * scale
                return max(1, scale < 1 ? Int(scaled.rounded(.down)) : Int(scaled.rounded(.up)))
            }
            return (side(width), side(height))
        }

        /// cairo's `CAIRO_FORMAT_ARGB32`: premultiplied, each pixel a native-endian
        /// 32-bit word, alpha in the top byte.
        static let formatARGB32: Int32 = 0

        /// Premultiplied ARGB words (cairo's) to premultiplied R, G, B, A bytes
        /// (Imago's), in place.
        static func cairoToRGBA(_ pixels: UnsafeMutableRawBufferPointer, count: Int) {
            let words = pixels.bindMemory(to: UInt32.self)
            for index in 0..<count {
                let argb = words[index]
                let rgba = (argb >> 16 & 0xFF) | (argb & 0xFF00) | (argb & 0xFF) << 16 | (argb & 0xFF00_0000)
                // The bytes R, G, B, A in memory whatever the byte order.
                words[index] = UInt32(littleEndian: rgba)
            }
        }

        static func failure(_ reason: String, _ message: String?) -> ImagoError {
            .decodingFailed(format: .svg, reason: reason, codec: message.map { .init(library: "librsvg", message: $0) })
        }
    }
}

/// The librsvg, cairo and GLib functions the SVG decoder calls, looked up once.
///
/// Declared here from their headers rather than imported: librsvg's headers need
/// GLib's, cairo's and GdkPixbuf's include paths, and linking them would load GLib,
/// Pango, HarfBuzz, fontconfig and the rest at every process start for a format
/// most runs never meet. The types are passed as opaque or raw pointers.
///
/// `@unchecked Sendable`: C function pointers, fixed once looked up; librsvg and
/// cairo let any thread use objects of its own (each decode has its own handle,
/// surface and context).
struct LibRSVG: @unchecked Sendable {
    let handleNewFromData: @convention(c) (UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> OpaquePointer?
    let handleSetDPI: @convention(c) (OpaquePointer?, Double) -> Void
    let handleGetIntrinsicSizeInPixels: @convention(c) (OpaquePointer?, UnsafeMutablePointer<Double>?, UnsafeMutablePointer<Double>?) -> Int32
    let handleGetIntrinsicDimensions: @convention(c) (
        OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?,
        UnsafeMutablePointer<Int32>?, UnsafeMutableRawPointer?
    ) -> Void
    let handleGetDimensions: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?) -> Void
    let handleRenderDocument: @convention(c) (OpaquePointer?, OpaquePointer?, UnsafeRawPointer?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> Int32
    let objectUnref: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let errorFree: @convention(c) (UnsafeMutableRawPointer?) -> Void
    let imageSurfaceCreateForData: @convention(c) (UnsafeMutableRawPointer?, Int32, Int32, Int32, Int32) -> OpaquePointer?
    let surfaceStatus: @convention(c) (OpaquePointer?) -> Int32
    let surfaceFlush: @convention(c) (OpaquePointer?) -> Void
    let surfaceDestroy: @convention(c) (OpaquePointer?) -> Void
    let create: @convention(c) (OpaquePointer?) -> OpaquePointer?
    let destroy: @convention(c) (OpaquePointer?) -> Void
    let setSource: @convention(c) (OpaquePointer?, OpaquePointer?) -> Void

    /// The message of a `GError` librsvg set (its third field, after the domain and
    /// code), freeing it.
    func take(_ error: inout UnsafeMutableRawPointer?) -> String? {
        guard let pointer = error else { return nil }
        defer {
            errorFree(pointer)
            error = nil
        }
        let message = pointer.load(fromByteOffset: MemoryLayout<UInt32>.size * 2, as: UnsafePointer<CChar>?.self)
        return message.map { String(cString: $0).trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// librsvg and the libraries it comes with, opened on first use.
    static let shared: Result<LibRSVG, ImagoError> = Result { () throws(ImagoError) in
        let rsvg = try SharedLibrary(["librsvg-2.so.2", "librsvg-2.so"], format: .svg, package: "librsvg2-2")
        // Already loaded by librsvg: opening them again only finds them.
        let cairo = try SharedLibrary(["libcairo.so.2"], format: .svg, package: "libcairo2")
        let gobject = try SharedLibrary(["libgobject-2.0.so.0"], format: .svg, package: "libglib2.0-0")
        let glib = try SharedLibrary(["libglib-2.0.so.0"], format: .svg, package: "libglib2.0-0")
        func load<F>(_ library: SharedLibrary, _ symbol: String) throws(ImagoError) -> F { try library.function(symbol, format: .svg) }
        return try LibRSVG(
            handleNewFromData: load(rsvg, "rsvg_handle_new_from_data"),
            handleSetDPI: load(rsvg, "rsvg_handle_set_dpi"),
            handleGetIntrinsicSizeInPixels: load(rsvg, "rsvg_handle_get_intrinsic_size_in_pixels"),
            handleGetIntrinsicDimensions: load(rsvg, "rsvg_handle_get_intrinsic_dimensions"),
            handleGetDimensions: load(rsvg, "rsvg_handle_get_dimensions"),
            handleRenderDocument: load(rsvg, "rsvg_handle_render_document"),
            objectUnref: load(gobject, "g_object_unref"),
            errorFree: load(glib, "g_error_free"),
            imageSurfaceCreateForData: load(cairo, "cairo_image_surface_create_for_data"),
            surfaceStatus: load(cairo, "cairo_surface_status"),
            surfaceFlush: load(cairo, "cairo_surface_flush"),
            surfaceDestroy: load(cairo, "cairo_surface_destroy"),
            create: load(cairo, "cairo_create"),
            destroy: load(cairo, "cairo_destroy"),
            setSource: load(cairo, "cairo_set_source"))
    }
}

/// What stops a render once its deadline has passed. At the deadline the deadline
/// clock's thread sets a NULL source on the drawing's context: cairo's one public way
/// to put a context into its error state from outside, and all that call does with a
/// NULL source is an atomic store of the context's status. Every later call on the
/// context does nothing, and librsvg, which checks the context's status after its
/// calls, ends the render with an error at its next one.
///
/// A cairo observer surface, whose callbacks run at each drawing operation, was the
/// first way tried: cairo 1.16 never frees an observer's callbacks (160 bytes a decode,
/// found by the fuzzer's leak check) and logs every operation while it watches.
///
/// What is drawn inside a group librsvg composes apart (a container with an opacity,
/// a mask or a filter) goes through a context of its own, and librsvg comes back to
/// the watched one only when the group is done: a document drawn as one such group
/// runs to its end.
final class RenderWatch: Sendable {
    private enum State {
        /// The context, by address, until the render ends.
        case watching(context: Int)
        case stopped, ended
    }

    private let state: Locked<State>
    private let rsvg: LibRSVG
    private let timer = Locked(0)

    /// Starts watching the render on `context`; `end()` must be called before the
    /// context is destroyed.
    init(_ context: OpaquePointer, deadline: DecodeDeadline, rsvg: LibRSVG) {
        state = Locked(.watching(context: Int(bitPattern: UnsafeRawPointer(context))))
        self.rsvg = rsvg
        let id = DeadlineClock.shared.schedule(after: deadline.secondsLeft ?? 0) { [self] in stop() }
        timer.withLock { $0 = id }
    }

    private func stop() {
        state.withLock { state in
            guard case .watching(let context) = state else { return }
            rsvg.setSource(OpaquePointer(bitPattern: context), nil)
            state = .stopped
        }
    }

    /// Ends the watch: the context is no longer touched after it returns. Whether the
    /// watch stopped the render (the first call tells; later ones say no).
    func end() -> Bool {
        DeadlineClock.shared.cancel(timer.withLock { $0 })
        return state.withLock { state in
            defer { state = .ended }
            if case .stopped = state { return true }
            return false
        }
    }
}
#endif
