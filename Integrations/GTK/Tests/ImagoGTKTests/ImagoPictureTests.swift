import CImagoGTKTestSupport
import Foundation
import Imago
import ImagoUI
import ImagoGTK
import Synchronization
import Testing
import _ImagoTestSupport

/// ImagoPicture as GTK programs use it: made by GtkBuilder from a `.ui` file or by C
/// code, driven through its GObject properties, in real windows (under Xvfb in CI),
/// loading from a real HTTP server on 127.0.0.1; what it shows is checked on
/// captures of the window's rendering, pixel by pixel.
@MainActor @Suite(.display, .gtkWindows)
struct ImagoPictureTests {
    let server = TestServer()

    init() throws {
        ImagoPicture.register()
        try server.start()
    }

    /// A 64×32 picture of four upright stripes, 16 pixels each: where each stripe
    /// lands tells how the picture was fitted.
    static let stripes: [(r: UInt8, g: UInt8, b: UInt8)] = [(220, 30, 30), (30, 200, 40), (40, 60, 220), (230, 210, 40)]

    static func stripedPicture() -> Bitmap {
        var pixels = [UInt8](repeating: 255, count: 64 * 32 * 4)
        for y in 0..<32 {
            for x in 0..<64 {
                let i = (y * 64 + x) * 4, colour = stripes[x / 16]
                (pixels[i], pixels[i + 1], pixels[i + 2]) = (colour.r, colour.g, colour.b)
            }
        }
        return Bitmap(width: 64, height: 32, pixels: pixels)
    }

    /// Whether `pixel` is stripe `index`'s colour, give or take Cairo's rounding.
    static func isStripe(_ pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8), _ index: Int) -> Bool {
        let c = stripes[index]
        return max(abs(Int(pixel.r) - Int(c.r)), abs(Int(pixel.g) - Int(c.g)), abs(Int(pixel.b) - Int(c.b))) <= 3
    }

    /// Sets a GObject string property, as `g_object_set` does from C.
    static func set(_ object: UnsafeMutableRawPointer, _ name: String, string: String?) {
        var value = GValue()
        g_value_init(&value, g_type_from_name("gchararray"))
        g_value_set_string(&value, string)
        g_object_set_property(object.assumingMemoryBound(to: GObject.self), name, &value)
        g_value_unset(&value)
    }

    /// A GObject string property, as `g_object_get` reads it from C.
    static func string(_ object: UnsafeMutableRawPointer, _ name: String) -> String? {
        var value = GValue()
        g_value_init(&value, g_type_from_name("gchararray"))
        defer { g_value_unset(&value) }
        g_object_get_property(object.assumingMemoryBound(to: GObject.self), name, &value)
        return g_value_get_string(&value).map { String(cString: $0) }
    }

    /// A window built by GtkBuilder from `ui`, presented and laid out; its object
    /// `picture`.
    func build(_ ui: String) async throws -> (window: GTK.Window, picture: UnsafeMutablePointer<GtkWidget>) {
        let builder = gtk_builder_new_from_string(ui, -1)
        defer { g_object_unref(UnsafeMutableRawPointer(builder)) }
        let window = try #require(gtk_builder_get_object(builder, "window"))
        let picture = try #require(gtk_builder_get_object(builder, "picture"))
        let windowWidget = UnsafeMutableRawPointer(window).assumingMemoryBound(to: GtkWidget.self)
        let pictureWidget = UnsafeMutableRawPointer(picture).assumingMemoryBound(to: GtkWidget.self)
        gtk_window_present(windowWidget.cast(GtkWindow.self))
        await GTK.waitUntil { gtk_widget_get_mapped(pictureWidget) != 0 && gtk_widget_get_width(pictureWidget) > 0 }
        return (GTK.Window(widget: windowWidget), pictureWidget)
    }

    static func ui(width: Int, height: Int, picture properties: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <interface>
          <object class="GtkWindow" id="window">
            <property name="default-width">\(width)</property>
            <property name="default-height">\(height)</property>
            <child>
              <object class="ImagoPicture" id="picture">
                \(properties)
              </object>
            </child>
          </object>
        </interface>
        """
    }

    /// Waits until the picture shows a loaded image, faded in, and has drawn its
    /// last frame of the crossfade.
    func waitForImage(_ view: ImageView, _ comment: Comment = "the image loaded", sourceLocation: SourceLocation = #_sourceLocation) async {
        await GTK.waitUntil(comment, sourceLocation: sourceLocation) {
            view.image != nil && !view.loadingState.isLoading && !view.loadingState.isCrossfading
        }
        await GTK.run(for: 0.1)
    }

    /// Where a capture has nothing drawn (captures are of the widget alone).
    static func isNothing(_ pixel: (r: UInt8, g: UInt8, b: UInt8, a: UInt8)) -> Bool {
        pixel.a == 0
    }

    // MARK: - GtkBuilder and properties

    @Test func aPictureFromAUIFileLoadsTheURLItIsGivenAsAProperty() async throws {
        defer { server.stop() }
        let picture = Self.stripedPicture()
        server.route("/stripes.png", data: try Pixels.png(picture), headers: ["Content-Type": "image/png"])
        let (window, widget) = try await build(Self.ui(width: 64, height: 32, picture: """
            <property name="content-fit">fill</property>
            <property name="alternative-text">Four stripes</property>
            """))
        defer { window.close() }
        let view = ImageView(picture: widget)
        #expect(view.contentFit == GTK_CONTENT_FIT_FILL, "content-fit from the .ui file")

        Self.set(widget.object, "url", string: server.url("/stripes.png").absoluteString)
        #expect(Self.string(widget.object, "url") == server.url("/stripes.png").absoluteString)
        await waitForImage(view)
        let shown = try await GTK.capture(widget)
        #expect(shown.difference(to: picture).maximum <= 2, "the picture shows the image, pixel for pixel")
    }

    @Test func theAlternativeTextIsTheAccessibleLabel() async throws {
        defer { server.stop() }
        let (window, widget) = try await build(Self.ui(width: 32, height: 32, picture: """
            <property name="alternative-text">A lighthouse at dusk</property>
            """))
        defer { window.close() }
        #expect(gtk_test_accessible_has_role(OpaquePointer(widget), GTK_ACCESSIBLE_ROLE_IMG) != 0)
        func mismatch(_ label: String) -> String? {
            guard let text = imago_test_accessible_label_mismatch(widget.object, label) else { return nil }
            defer { g_free(text) }
            return String(cString: text)
        }
        #expect(mismatch("A lighthouse at dusk") == nil)
        Self.set(widget.object, "alternative-text", string: "A harbour")
        #expect(mismatch("A harbour") == nil)
        #expect(mismatch("A lighthouse at dusk") != nil, "the label follows the property")
        #expect(ImageView(picture: widget).alternativeText == "A harbour")
    }

    /// Each content fit, by where the stripes of a 64×32 image land in a 128×128
    /// picture.
    @Test func contentFitPlacesTheImageAsGtkPictureDoes() async throws {
        defer { server.stop() }
        server.route("/stripes.png", data: try Pixels.png(Self.stripedPicture()), headers: ["Content-Type": "image/png"])
        for fit in ["fill", "contain", "cover", "scale-down"] {
            let (window, widget) = try await build(Self.ui(width: 128, height: 128, picture: """
                <property name="content-fit">\(fit)</property>
                """))
            defer { window.close() }
            let view = ImageView(picture: widget)
            Self.set(widget.object, "url", string: server.url("/stripes.png?fit=\(fit)").absoluteString)
            await waitForImage(view, "\(fit): loaded")
            let shown = try await GTK.capture(widget)
            #expect(shown.width == 128 && shown.height == 128)
            func stripe(_ x: Int, _ y: Int) -> Int? { (0..<4).first { Self.isStripe(shown[x, y], $0) } }
            switch fit {
            case "fill":
                // Stretched to the square: four stripes 32 wide, top to bottom.
                for y in [1, 64, 126] { #expect([16, 48, 80, 112].map { stripe($0, y) } == [0, 1, 2, 3], "fill, row \(y)") }
            case "contain":
                // Whole, 128×64, centred: bands above and below.
                #expect([16, 48, 80, 112].map { stripe($0, 64) } == [0, 1, 2, 3], "contain, middle row")
                #expect(Self.isNothing(shown[64, 16]) && Self.isNothing(shown[64, 112]), "contain leaves the bands empty")
            case "cover":
                // Covering the square, the sides cropped: the two middle stripes, 64 wide.
                for y in [1, 126] { #expect([8, 56, 72, 120].map { stripe($0, y) } == [1, 1, 2, 2], "cover, row \(y)") }
            default:
                // At its own size, 64×32, in the middle.
                #expect([40, 56, 72, 88].map { stripe($0, 64) } == [0, 1, 2, 3], "scale-down, middle row")
                #expect(Self.isNothing(shown[20, 64]) && Self.isNothing(shown[108, 64]) && Self.isNothing(shown[64, 40]))
            }
        }
    }

    /// Before the image comes: the placeholder icon in the middle, or the placeholder
    /// paintable fitted as an image would be; then the image in their place.
    @Test func thePlaceholderShowsBeforeTheImage() async throws {
        defer { server.stop() }
        let released = Mutex(false)
        let picture = Pixels.solid(width: 96, height: 96, 40, 120, 200)
        let png = try Pixels.png(picture)
        server.route("/slow.png") { _ in
            while !released.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
            return .ok(png, headers: ["Content-Type": "image/png"])
        }
        let (window, widget) = try await build(Self.ui(width: 96, height: 96, picture: """
            <property name="placeholder-icon-name">image-missing</property>
            """))
        defer { window.close() }
        let view = ImageView(picture: widget)
        view.loadingState.showsActivityIndicator = false
        Self.set(widget.object, "url", string: server.url("/slow.png").absoluteString)
        await GTK.run(for: 0.3)
        #expect(view.loadingState.isLoading)
        let loading = try await GTK.capture(widget)
        var iconPixels = 0
        for y in 24..<72 { for x in 24..<72 where !Self.isNothing(loading[x, y]) { iconPixels += 1 } }
        #expect(iconPixels > 200, "the icon is drawn in the middle (\(iconPixels) pixels)")
        #expect(Self.isNothing(loading[4, 4]) && Self.isNothing(loading[91, 91]), "at its own size, not stretched")

        // A paintable takes the icon's place, fitted as the image will be.
        let grey = Pixels.solid(width: 8, height: 8, 128, 128, 128).makeTexture()
        defer { g_object_unref(UnsafeMutableRawPointer(grey)) }
        var value = GValue()
        g_value_init(&value, gdk_paintable_get_type())
        g_value_set_object(&value, UnsafeMutableRawPointer(grey))
        g_object_set_property(widget.object.assumingMemoryBound(to: GObject.self), "placeholder-paintable", &value)
        g_value_unset(&value)
        await GTK.run(for: 0.1)
        let placeholder = try await GTK.capture(widget)
        #expect(placeholder.difference(to: Pixels.solid(width: 96, height: 96, 128, 128, 128)).maximum <= 2)

        released.withLock { $0 = true }
        await waitForImage(view)
        let replaced = try await GTK.capture(widget)
#expect(replaced.difference(to: picture).maximum <= 2, "the image replaces the placeholder")
    }

    /// A load that fails says why: to Swift as a typed error, to GTK code through the
    /// "load-failed" signal; a `url` that is no URL is an error too.
    @Test func aFailedLoadIsToldAsATypedErrorAndBySignal() async throws {
        defer { server.stop() }
        server.route("/missing.png") { _ in .text("gone", status: 404) }
        let (window, widget) = try await build(Self.ui(width: 32, height: 32, picture: ""))
        defer { window.close() }
        let view = ImageView(picture: widget)
        var errors: [ImagoError] = []
        var messages: [String] = []
        view.didFail = { errors.append($0) }
        connectSignal(widget.object, "load-failed") { message in
            messages.append(message.map { String(cString: $0.assumingMemoryBound(to: CChar.self)) } ?? "")
        }
        Self.set(widget.object, "url", string: server.url("/missing.png").absoluteString)
        await GTK.waitUntil { !errors.isEmpty }
        guard case .httpStatus(404, _)? = errors.first else {
            Issue.record("a 404, not \(errors)")
            return
        }
        #expect(messages == [String(describing: errors[0])])

        Self.set(widget.object, "url", string: "http://[::1")
        await GTK.waitUntil { errors.count == 2 }
        guard case .invalidURL("http://[::1")? = errors.last else {
            Issue.record("an invalid URL, not \(errors)")
            return
        }
        #expect(messages.count == 2)
        #expect(!view.loadingState.isLoading)
    }

    // MARK: - Lifetime and size

    /// The widget's loads are the widget's: a Swift face dropped while the reply is
    /// still on its way stops nothing.
    @Test func droppingEverySwiftReferenceStillCompletesTheLoad() async throws {
        defer { server.stop() }
        let released = Mutex(false)
        let picture = Pixels.solid(width: 48, height: 48, 200, 60, 20)
        let png = try Pixels.png(picture)
        server.route("/later.png") { _ in
            while !released.withLock({ $0 }) { Thread.sleep(forTimeInterval: 0.01) }
            return .ok(png, headers: ["Content-Type": "image/png"])
        }
        weak var face: ImageView?
        let widget: UnsafeMutablePointer<GtkWidget>
        let window: GTK.Window
        do {
            let view = ImageView(width: 48, height: 48)
            face = view
            widget = view.widget
            window = await GTK.window(width: 48, height: 48, child: view.widget)
            view.imageURL = server.url("/later.png")
            #expect(view.loadingState.isLoading)
        }
        defer { window.close() }
        #expect(face == nil, "no Swift reference is left")
        await GTK.waitUntil { server.count(for: "/later.png") > 0 }
        released.withLock { $0 = true }
        var shown: Bitmap?
        await GTK.waitUntil("the image reached the widget with no Swift object holding it") {
            shown = WidgetCapture.bitmap(of: widget)
            return shown.map { $0.difference(to: picture).maximum <= 2 } ?? false
        }
    }

    /// A picture with no size of its own, given its URL by GtkBuilder before it is in
    /// a window, asks for nothing until it has a size (the whole 800×600 image is
    /// never loaded), then loads at its allocated size, and again when it grows.
    @Test func aPictureLoadsAtItsAllocatedSizeAndAgainWhenItGrows() async throws {
        defer { server.stop() }
        let photo = Pixels.solid(width: 800, height: 600, 40, 120, 200)
        server.route("/photo.png", data: try Pixels.png(photo), headers: ["Content-Type": "image/png"])
        let builder = gtk_builder_new_from_string("""
            <?xml version="1.0" encoding="UTF-8"?>
            <interface>
              <object class="ImagoPicture" id="picture">
                <property name="url">\(server.url("/photo.png").absoluteString)</property>
              </object>
            </interface>
            """, -1)
        defer { g_object_unref(UnsafeMutableRawPointer(builder)) }
        let widget = UnsafeMutableRawPointer(try #require(gtk_builder_get_object(builder, "picture")))
            .assumingMemoryBound(to: GtkWidget.self)
        let view = ImageView(picture: widget)
        var sizes: [String] = []
        view.didDisplay = { content in
            if let image = content.image { sizes.append("\(image.width)×\(image.height)") }
        }
        await GTK.run(for: 1)
        #expect(server.count(for: "/photo.png") == 0, "nothing asked for before the picture has a size")
        #expect(view.image == nil && view.imageURL == server.url("/photo.png"))

        let window = await GTK.window(width: 200, height: 150, child: widget)
        defer { window.close() }
        await GTK.waitUntil("decoded at the picture's size: \(sizes)") { sizes.contains("200×150") }
        gtk_widget_set_size_request(widget, 400, 300)
        await GTK.waitUntil("asked again at 400×300: \(sizes)") { sizes.contains("400×300") }
        // (The 200×150 image stays, as the placeholder, while the 400×300 one loads.)
        #expect(Set(sizes) == ["200×150", "400×300"], "never another size: \(sizes)")
    }

    /// A picture on a stack's hidden page, given its URL and then its content fit by
    /// GtkBuilder, asks for nothing while the page is hidden (the change of fit does
    /// not start the waiting URL at the image's full size), then loads at its size,
    /// filled, when the page is shown.
    @Test func aContentFitSetAfterTheURLStillWaitsForASize() async throws {
        defer { server.stop() }
        let photo = Pixels.solid(width: 800, height: 800, 40, 120, 200)
        server.route("/square.png", data: try Pixels.png(photo), headers: ["Content-Type": "image/png"])
        let (window, label) = try await build("""
            <?xml version="1.0" encoding="UTF-8"?>
            <interface>
              <object class="GtkWindow" id="window">
                <property name="default-width">200</property>
                <property name="default-height">150</property>
                <child>
                  <object class="GtkStack" id="stack">
                    <child>
                      <!-- The page shown first: named "picture", it is what build(_:) waits for. -->
                      <object class="GtkStackPage">
                        <property name="name">text</property>
                        <property name="child">
                          <object class="GtkLabel" id="picture"><property name="label">Text</property></object>
                        </property>
                      </object>
                    </child>
                    <child>
                      <object class="GtkStackPage">
                        <property name="name">image</property>
                        <property name="child">
                          <object class="ImagoPicture" id="image">
                            <property name="url">\(server.url("/square.png").absoluteString)</property>
                            <property name="content-fit">cover</property>
                          </object>
                        </property>
                      </object>
                    </child>
                  </object>
                </child>
              </object>
            </interface>
            """)
        defer { window.close() }
        let stack = try #require(gtk_widget_get_parent(label))
        let widget = try #require(gtk_stack_get_child_by_name(OpaquePointer(stack), "image"))
        let view = ImageView(picture: widget)
        var sizes: [String] = []
        view.didDisplay = { content in
            if let image = content.image { sizes.append("\(image.width)×\(image.height)") }
        }
        #expect(view.contentFit == GTK_CONTENT_FIT_COVER && view.imageURL == server.url("/square.png"))
        await GTK.run(for: 1)
        #expect(server.count(for: "/square.png") == 0, "nothing asked for while the page is hidden")
        #expect(view.image == nil, "nothing shown: \(sizes)")

        gtk_stack_set_visible_child_name(OpaquePointer(stack), "image")
        await GTK.waitUntil("decoded at the picture's size, cropped to fill it: \(sizes)") { sizes.contains("200×150") }
        #expect(sizes == ["200×150"], "never the whole image, nor fitted (150×150): \(sizes)")
    }

    // MARK: - C and settings

    /// A picture made by C code with imago_picture_new() and g_object_set.
    @Test func aPictureSetUpFromCShowsItsImage() async throws {
        defer { server.stop() }
        server.route("/stripes.png", data: try Pixels.png(Self.stripedPicture()), headers: ["Content-Type": "image/png"])
        let url = server.url("/stripes.png").absoluteString
        let picture = try #require(imago_test_picture_from_c(url, Int32(GTK_CONTENT_FIT_COVER.rawValue)))
        let widget = picture.assumingMemoryBound(to: GtkWidget.self)
        let window = await GTK.window(width: 64, height: 64, child: widget)
        defer { window.close() }
        let read = try #require(imago_test_picture_url_from_c(picture))
        defer { g_free(read) }
        #expect(String(cString: read) == url)
        let view = ImageView(picture: widget)
        #expect(view.contentMode == .aspectFill)
        await waitForImage(view)
        // Covering the square: the two middle stripes, 32 wide each.
        let shown = try await GTK.capture(widget)
        #expect(Self.isStripe(shown[8, 32], 1) && Self.isStripe(shown[56, 32], 2), "\(shown[8, 32]), \(shown[56, 32])")
    }

    /// With GTK's animations off, a loaded image appears at once, with no crossfade.
    @Test func noCrossfadeWhenAnimationsAreOff() async throws {
        defer { server.stop() }
        server.route("/plain.png", data: try Pixels.png(Pixels.solid(width: 16, height: 16, 9, 9, 9)), headers: ["Content-Type": "image/png"])
        let settings = UnsafeMutableRawPointer(gtk_settings_get_default()!).assumingMemoryBound(to: GObject.self)
        func setAnimations(_ on: Bool) {
            var value = GValue()
            g_value_init(&value, g_type_from_name("gboolean"))
            g_value_set_boolean(&value, on ? 1 : 0)
            g_object_set_property(settings, "gtk-enable-animations", &value)
            g_value_unset(&value)
        }
        setAnimations(false)
        defer { setAnimations(true) }
        let view = ImageView(width: 16, height: 16)
        let window = await GTK.window(width: 16, height: 16, child: view.widget)
        defer { window.close() }
        var crossfades: [ImageTransition] = []
        view.didDisplay = { content in if content.phase == .success { crossfades.append(content.transition) } }
        view.imageURL = server.url("/plain.png")
        await GTK.waitUntil { !crossfades.isEmpty }
        #expect(crossfades == [.none])
        #expect(!view.loadingState.isCrossfading)
    }
}
