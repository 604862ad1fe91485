import Foundation
import Imago
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
