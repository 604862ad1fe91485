import Foundation
import Imago
import ImagoGTK
import _ImagoTestSupport

extension TestServer {
    /// A started server on 127.0.0.1 with a 24×24 PNG of colour `k` (`Pixels.colour`)
    /// at `/img/<k>` for each `k` below `count`, each answered after `delay()` seconds:
    /// the images the grid tests scroll through and tell apart by their pixels.
    static func colours(_ count: Int, delay: @escaping @Sendable () -> Double = { 0 }) throws -> TestServer {
        let server = TestServer()
        try server.start()
        for k in 0..<count {
            let c = Pixels.colour(k)
            let png = try Pixels.png(Pixels.solid(width: 24, height: 24, c.r, c.g, c.b))
            server.route("/img/\(k)") { _ in
                let seconds = delay()
                if seconds > 0 { Thread.sleep(forTimeInterval: seconds) }
                return .ok(png, headers: ["Content-Type": "image/png"])
            }
        }
        return server
    }
}

extension ImageGrid {
    /// The cells wholly on screen in `window`, each with its item and its centre in
    /// the window's coordinates: where a capture of the window shows what the cell
    /// shows.
    @MainActor func cellCentresOnScreen(in window: GTK.Window) -> [(index: Int, x: Int, y: Int)] {
        var viewport = graphene_rect_t()
        guard gtk_widget_compute_bounds(widget, window.widget, &viewport) != 0 else { return [] }
        return boundCells.compactMap { index, view in
            var bounds = graphene_rect_t()
            guard gtk_widget_get_mapped(view.widget) != 0, gtk_widget_compute_bounds(view.widget, window.widget, &bounds) != 0,
                  graphene_rect_contains_rect(&viewport, &bounds)
            else { return nil }
            return (index, Int(bounds.origin.x + bounds.size.width / 2), Int(bounds.origin.y + bounds.size.height / 2))
        }
    }
}
