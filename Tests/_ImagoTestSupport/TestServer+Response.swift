import Foundation

extension TestServer {
    /// What a route answers.
    public struct Response: Sendable {
        /// How the response goes on the wire.
        public enum Delivery: Sendable {
            /// Status, headers with the true Content-Length, the whole body.
            case complete
            /// Status and headers declaring `declaredLength` bytes, then nothing until
            /// the client goes away or the server stops.
            case stall(declaredLength: Int)
            /// The body in pieces of `bytesPerChunk`, `interval` seconds apart.
            case trickle(bytesPerChunk: Int, interval: Double)
            /// The body in pieces ending at the offsets `ends` (and at the body's
            /// end), `pause` seconds apart: a download that stalls where the test
            /// wants, at a JPEG's scan boundaries say.
            case pieces(ends: [Int], pause: Double)
            /// The first `bytes` of the body, then a TCP reset (SO_LINGER 0).
            case resetAfter(bytes: Int)
            /// A TCP reset before anything is sent.
            case resetAtOnce
            /// Content-Length `declaredLength`, the (shorter) body, then a clean close.
            case truncate(declaredLength: Int)
            /// `Transfer-Encoding: chunked`, pieces of `chunkSize`.
            case chunked(chunkSize: Int)
            /// No Content-Length: the body ends when the connection closes.
            case untilClose
            /// No Content-Length, and the body repeats without end until the client
            /// goes away or the server stops.
            case endless
            /// The body bytes exactly as given (no status line, no headers), then close.
            case raw
        }

        public var status: Int
        public var headers: [String: String]
        public var body: Data
        public var delivery: Delivery

        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delivery: Delivery = .complete) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delivery = delivery
        }

        public static func ok(_ body: Data, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body)
        }

        public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> Response {
            Response(status: status, headers: headers.merging(["Content-Type": "text/plain"]) { a, _ in a }, body: Data(text.utf8))
        }

        public static func stall(status: Int = 200, headers: [String: String] = [:], declaredLength: Int = 1 << 20) -> Response {
            Response(status: status, headers: headers, delivery: .stall(declaredLength: declaredLength))
        }

        public static func trickle(_ body: Data, bytesPerChunk: Int, interval: Double, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body, delivery: .trickle(bytesPerChunk: bytesPerChunk, interval: interval))
        }

        public static func pieces(_ body: Data, ends: [Int], pause: Double, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body, delivery: .pieces(ends: ends, pause: pause))
        }

        public static func resetAfter(_ bytes: Int, of body: Data) -> Response {
            Response(status: 200, body: body, delivery: .resetAfter(bytes: bytes))
        }

        public static func endless(_ piece: Data) -> Response {
            Response(body: piece, delivery: .endless)
        }

        public static func resetAtOnce() -> Response {
            Response(body: Data(), delivery: .resetAtOnce)
        }

        public static func truncate(declaredLength: Int, actualBody: Data) -> Response {
            Response(status: 200, body: actualBody, delivery: .truncate(declaredLength: declaredLength))
        }

        public static func chunked(_ body: Data, chunkSize: Int) -> Response {
            Response(status: 200, body: body, delivery: .chunked(chunkSize: chunkSize))
        }

        public static func untilClose(_ body: Data) -> Response {
            Response(status: 200, body: body, delivery: .untilClose)
        }

        public static func raw(_ bytes: Data) -> Response {
            Response(body: bytes, delivery: .raw)
        }

        public static func redirect(to location: String, status: Int = 302) -> Response {
            Response(status: status, headers: ["Location": location])
        }
    }
}
