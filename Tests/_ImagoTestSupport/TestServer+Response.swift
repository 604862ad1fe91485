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

        /// The HTTP status.
        public var status: Int
        /// Headers beyond those the delivery writes.
        public var headers: [String: String]
        /// The body, or what the delivery sends of it.
        public var body: Data
        /// How it goes on the wire.
        public var delivery: Delivery

        /// A response of `status`, `headers` and `body`, sent as `delivery` says.
        public init(status: Int = 200, headers: [String: String] = [:], body: Data = Data(), delivery: Delivery = .complete) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delivery = delivery
        }

        /// A 200 with `body`, complete.
        public static func ok(_ body: Data, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body)
        }

        /// Plain text with `status`.
        public static func text(_ text: String, status: Int = 200, headers: [String: String] = [:]) -> Response {
            Response(status: status, headers: headers.merging(["Content-Type": "text/plain"]) { a, _ in a }, body: Data(text.utf8))
        }

        /// Headers declaring `declaredLength` bytes, then nothing.
        public static func stall(status: Int = 200, headers: [String: String] = [:], declaredLength: Int = 1 << 20) -> Response {
            Response(status: status, headers: headers, delivery: .stall(declaredLength: declaredLength))
        }

        /// `body` in pieces of `bytesPerChunk`, `interval` seconds apart.
        public static func trickle(_ body: Data, bytesPerChunk: Int, interval: Double, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body, delivery: .trickle(bytesPerChunk: bytesPerChunk, interval: interval))
        }

        /// `body` in pieces ending at `ends`, `pause` seconds apart.
        public static func pieces(_ body: Data, ends: [Int], pause: Double, headers: [String: String] = [:]) -> Response {
            Response(status: 200, headers: headers, body: body, delivery: .pieces(ends: ends, pause: pause))
        }

        /// The first `bytes` of `body`, then a TCP reset.
        public static func resetAfter(_ bytes: Int, of body: Data) -> Response {
            Response(status: 200, body: body, delivery: .resetAfter(bytes: bytes))
        }

        /// `piece` over and over, without end.
        public static func endless(_ piece: Data) -> Response {
            Response(body: piece, delivery: .endless)
        }

        /// A TCP reset before anything is sent.
        public static func resetAtOnce() -> Response {
            Response(body: Data(), delivery: .resetAtOnce)
        }

        /// A Content-Length of `declaredLength`, then only `actualBody`.
        public static func truncate(declaredLength: Int, actualBody: Data) -> Response {
            Response(status: 200, body: actualBody, delivery: .truncate(declaredLength: declaredLength))
        }

        /// `body` in chunks of `chunkSize`.
        public static func chunked(_ body: Data, chunkSize: Int) -> Response {
            Response(status: 200, body: body, delivery: .chunked(chunkSize: chunkSize))
        }

        /// `body` without a length, ended by closing the connection.
        public static func untilClose(_ body: Data) -> Response {
            Response(status: 200, body: body, delivery: .untilClose)
        }

        /// `bytes` as they are, no status line or headers.
        public static func raw(_ bytes: Data) -> Response {
            Response(body: bytes, delivery: .raw)
        }

        /// A redirect to `location`.
        public static func redirect(to location: String, status: Int = 302) -> Response {
            Response(status: status, headers: ["Location": location])
        }
    }
}
