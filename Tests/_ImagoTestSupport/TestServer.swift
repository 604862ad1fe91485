#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Imago
import Testing

/// One request as the test server received it.
public struct RecordedRequest: Sendable {
    /// `GET`, `HEAD`, …
    public let method: String
    /// The request target as sent: path and query.
    public let target: String
    /// The path without the query.
    public let path: String
    /// Header fields with lower-cased names; repeated fields joined with ", ".
    public let headers: [String: String]
    /// The request's body.
    public let body: Data

    /// The value of header `name`, matched without regard to case.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A real HTTP/1.1 server on 127.0.0.1 for tests, written on POSIX sockets so it can
/// misbehave in ways a well-mannered server never would: stall, trickle, reset the
/// connection, lie about the length.
///
/// It binds the loopback address only, on a port the kernel picks, and serves each
/// connection on its own thread. Every blocking call is bounded (read timeouts, a
/// poll loop on the listener), so `stop()` ends every thread promptly and a test can
/// never hang on the server. Keep-Alive is supported for well-formed responses;
/// fault responses close the connection, as a broken server would.
public final class TestServer: Sendable {
    /// What answers a route's requests, on the connection's thread.
    public typealias Handler = @Sendable (RecordedRequest) -> Response

    private struct State {
        var listener: Int32 = -1
        var port: UInt16 = 0
        var stopping = false
        var routes: [String: Handler] = [:]
        var log: [RecordedRequest] = []
        var counts: [String: Int] = [:]
        var connections: Set<Int32> = []
        var connectionsAccepted = 0
        var logsRequests = true
        var stalls: [Stall] = []
    }

    /// A stalled response as the server saw it end, timed on the server's own thread:
    /// when the client gave up is measured here, not where a test's task resumes,
    /// which with the whole suite on two cores can be a minute later.
    public struct Stall: Sendable {
        /// When the response head had been sent and the server began to wait.
        public let began: ContinuousClock.Instant
        /// When the connection ended.
        public let ended: ContinuousClock.Instant
        /// Whether the client closed it (rather than the server stopping or its own
        /// idle limit passing).
        public let closedByClient: Bool

        /// How long the client waited on the stalled response before closing it;
        /// nil when it did not close it.
        public var clientWaited: Duration? { closedByClient ? ended - began : nil }
    }

    private let state = LockedValue(State())
    /// Entered by every thread the server starts; `stop()` waits for it to empty.
    private let threads = DispatchGroup()

    /// The longest a connection may sit idle (or stalled) before the server drops it:
    /// a bound so that a forgotten client cannot keep a thread forever.
    private static let idleLimit = 30.0
    /// Socket read and poll granularity: how often blocked threads look at `stopping`.
    private static let tick = 0.1

    private static let ignoreSIGPIPE: Void = {
        _ = signal(SIGPIPE, SIG_IGN)
    }()

    /// A server that is not listening yet (`start()`).
    public init() {}

    deinit { stop() }

    /// Binds 127.0.0.1 on an ephemeral port and starts accepting connections.
    public func start() throws {
        _ = Self.ignoreSIGPIPE
        #if canImport(Glibc)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        #else
        let listener = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard listener >= 0 else { throw POSIXError.current("socket") }
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1, nothing else
        #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
        #endif
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(listener, 128) == 0 else {
            let error = POSIXError.current("bind/listen")
            close(listener)
            throw error
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = UInt16(bigEndian: address.sin_port)
        state.withLock {
            $0.listener = listener
            $0.port = port
            $0.stopping = false
        }
        threads.enter()
        Thread { [self] in acceptLoop(listener) }.start()
    }

    /// Closes the listener and every connection, and waits (at most 10 s) for the
    /// server's threads to end.
    public func stop() {
        // shutdown, not close: each thread closes its own descriptor, so a number is
        // never closed twice or reused under a thread still holding it. And under the
        // lock a thread closes its descriptor with: once closed, the number may be
        // another test's socket at once (a curl loader's, say), which a shutdown
        // would cut.
        state.withLock { state in
            state.stopping = true
            for fd in state.connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
        _ = threads.wait(timeout: .now() + 10)
    }

    /// The port the server listens on.
    public var port: UInt16 { state.withLock { $0.port } }

    /// `http://127.0.0.1:PORT` followed by `path`.
    public func url(_ path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)\(path)")!
    }

    /// Answers requests for `path` (query ignored) with `handler`'s response.
    public func route(_ path: String, _ handler: @escaping Handler) {
        state.withLock { $0.routes[path] = handler }
    }

    /// Serves `data` at `path`, as a static file.
    public func route(_ path: String, data: Data, headers: [String: String] = [:]) {
        route(path) { _ in .ok(data, headers: headers) }
    }

    /// Requests received for `path`, oldest first.
    public func requests(for path: String) -> [RecordedRequest] {
        state.withLock { $0.log.filter { $0.path == path } }
    }

    /// Every request received, oldest first.
    public var allRequests: [RecordedRequest] { state.withLock { $0.log } }

    /// Whether requests are kept for `requests(for:)` and `allRequests` (they are by
    /// default); a long run turns it off so that its memory stays flat. `count(for:)`
    /// counts either way.
    public var logsRequests: Bool {
        get { state.withLock { $0.logsRequests } }
        set { state.withLock { $0.logsRequests = newValue } }
    }

    /// The stalled responses that have ended, oldest first.
    public var stalls: [Stall] { state.withLock { $0.stalls } }

    /// Waits (at most `seconds`) until `count` stalled responses have ended, and
    /// returns those that have.
    public func waitForStalls(_ count: Int, seconds: Double = 60, sourceLocation: SourceLocation = #_sourceLocation) async -> [Stall] {
        await waitUntil("\(count) stalled responses ended", seconds: seconds, sourceLocation: sourceLocation) { stalls.count >= count }
        return stalls
    }

    /// How many requests arrived for `path`.
    public func count(for path: String) -> Int { state.withLock { $0.counts[path, default: 0] } }

    /// Connections open right now (idle keep-alive ones included).
    public var openConnections: Int { state.withLock { $0.connections.count } }

    /// Connections accepted since the server started.
    public var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }

    // MARK: - Connections

    private var isStopping: Bool { state.withLock { $0.stopping } }

    private func acceptLoop(_ listener: Int32) {
        defer {
            close(listener)
            threads.leave()
        }
        while !isStopping {
            var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(Self.tick * 1000)) > 0 else { continue }
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { continue }
            Self.configure(fd)
            let registered = state.withLock { state -> Bool in
                guard !state.stopping else { return false }
                state.connections.insert(fd)
                state.connectionsAccepted += 1
                return true
            }
            guard registered else {
                close(fd)
                break
            }
            threads.enter()
            Thread { [self] in serve(fd) }.start()
        }
    }

    private static func configure(_ fd: Int32) {
        var timeout = timeval()
        timeout.tv_usec = .init(Int(tick * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var sendTimeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    private func serve(_ fd: Int32) {
        defer {
            state.withLock { state in
                state.connections.remove(fd)
                close(fd)
            }
            threads.leave()
        }
        var buffer: [UInt8] = []
        // Bounded: a client gets at most this many requests on one connection.
        for _ in 0..<10_000 {
            guard let request = readRequest(fd, buffer: &buffer) else { return }
            let handler = state.withLock { state -> Handler? in
                if state.logsRequests { state.log.append(request) }
                state.counts[request.path, default: 0] += 1
                return state.routes[request.path]
            }
            let response = handler?(request) ?? .text("no route for \(request.path)", status: 404)
            let wantsClose = request.header("connection")?.lowercased().contains("close") == true
            guard send(response, for: request, to: fd, keepAlive: !wantsClose), !wantsClose else { return }
        }
    }

    /// Reads one request head (and a Content-Length body); nil when the client closed,
    /// sent garbage, sat idle too long, or the server is stopping.
    private func readRequest(_ fd: Int32, buffer: inout [UInt8]) -> RecordedRequest? {
        let terminator: [UInt8] = Array("\r\n\r\n".utf8)
        var idle = 0.0
        var headEnd: Int?
        while headEnd == nil {
            if let range = buffer.firstRange(of: terminator) {
                headEnd = range.upperBound
                break
            }
            guard buffer.count < 64 * 1024, receive(fd, into: &buffer, idle: &idle) else { return nil }
            // Not HTTP (a TLS handshake, say): refused at once, as a plain server
            // would, rather than waited on until the idle limit.
            if let first = buffer.first, !(UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(first) {
                _ = write(fd, Data("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
                return nil
            }
        }
        guard let end = headEnd else { return nil }
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeFirst(end)

        var lines = head.components(separatedBy: "\r\n").filter { !$0.isEmpty }
        guard !lines.isEmpty else { return nil }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = headers[name].map { "\($0), \(value)" } ?? value
        }
        let length = headers["content-length"].flatMap { Int($0) } ?? 0
        guard length <= 16 << 20 else { return nil }
        while buffer.count < length {
            guard receive(fd, into: &buffer, idle: &idle) else { return nil }
        }
        let body = Data(buffer.prefix(length))
        buffer.removeFirst(length)

        let target = String(requestLine[1])
        let path = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? target
        return RecordedRequest(method: String(requestLine[0]), target: target, path: path, headers: headers, body: body)
    }

    /// One `recv`, appending to `buffer`; false when the connection is over.
    private func receive(_ fd: Int32, into buffer: inout [UInt8], idle: inout Double) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[..<count])
                return true
            }
            if count == 0 { return false }
            guard errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR else { return false }
            idle += Self.tick
            if idle > Self.idleLimit || isStopping { return false }
        }
    }

    // MARK: - Responses

    /// Sends `response`; true when the connection may carry another request.
    private func send(_ response: Response, for request: RecordedRequest, to fd: Int32, keepAlive: Bool) -> Bool {
        let isHead = request.method == "HEAD"
        let body = response.body
        switch response.delivery {
        case .complete:
            let head = Self.head(response, length: body.count, close: !keepAlive)
            return write(fd, head + (isHead ? Data() : body))

        case .stall(let declaredLength):
            guard write(fd, Self.head(response, length: declaredLength, close: true)) else { return false }
            let began = ContinuousClock.now
            // The server's own shutdown also ends the wait, as a close would.
            let closedByClient = waitForClose(fd) && !isStopping
            let stall = Stall(began: began, ended: .now, closedByClient: closedByClient)
            state.withLock { $0.stalls.append(stall) }
            return false

        case .trickle(let bytesPerChunk, let interval):
            guard write(fd, Self.head(response, length: body.count, close: true)) else { return false }
            var offset = 0
            while offset < body.count, !isStopping {
                let end = min(offset + max(bytesPerChunk, 1), body.count)
                guard write(fd, body[offset..<end]) else { return false }
                offset = end
                if offset < body.count { Thread.sleep(forTimeInterval: interval) }
            }
            return false

        case .pieces(let ends, let pause):
            guard write(fd, Self.head(response, length: body.count, close: true)) else { return false }
            var offset = 0
            for end in ends.filter({ $0 > 0 && $0 < body.count }).sorted() + [body.count] where end > offset && !isStopping {
                guard write(fd, body[offset..<end]) else { return false }
                offset = end
                if offset < body.count { Thread.sleep(forTimeInterval: pause) }
            }
            return false

        case .resetAfter(let bytes):
            _ = write(fd, Self.head(response, length: body.count, close: true) + body.prefix(bytes))
            // Let the partial body reach the client before the reset tears it down.
            Thread.sleep(forTimeInterval: 0.05)
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
            return false

        case .resetAtOnce:
            var reset = linger(l_onoff: 1, l_linger: 0)
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, socklen_t(MemoryLayout<linger>.size))
            return false

        case .truncate(let declaredLength):
            _ = write(fd, Self.head(response, length: declaredLength, close: true) + body)
            shutdown(fd, Int32(SHUT_WR))
            return false

        case .chunked(let chunkSize):
            var wire = Self.head(response, length: nil, close: !keepAlive, extra: ["Transfer-Encoding": "chunked"])
            var offset = 0
            while offset < body.count {
                let end = min(offset + max(chunkSize, 1), body.count)
                wire += Data((String(end - offset, radix: 16) + "\r\n").utf8) + body[offset..<end] + Data("\r\n".utf8)
                offset = end
            }
            wire += Data("0\r\n\r\n".utf8)
            return write(fd, wire)

        case .untilClose:
            _ = write(fd, Self.head(response, length: nil, close: true) + body)
            shutdown(fd, Int32(SHUT_WR))
            return false

        case .endless:
            guard write(fd, Self.head(response, length: nil, close: true)) else { return false }
            while !isStopping, write(fd, body) {}
            return false

        case .raw:
            _ = write(fd, body)
            shutdown(fd, Int32(SHUT_WR))
            return false
        }
    }

    private static func head(_ response: Response, length: Int?, close: Bool, extra: [String: String] = [:]) -> Data {
        var lines = ["HTTP/1.1 \(response.status) \(reason(response.status))"]
        var headers = response.headers.merging(extra) { a, _ in a }
        if let length, !headers.keys.contains(where: { $0.lowercased() == "content-length" }) {
            headers["Content-Length"] = String(length)
        }
        headers["Connection"] = close ? "close" : "keep-alive"
        for (name, value) in headers.sorted(by: { $0.key < $1.key }) { lines.append("\(name): \(value)") }
        return Data((lines.joined(separator: "\r\n") + "\r\n\r\n").utf8)
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }

    /// Writes all of `data`; false when the client has gone or the server is stopping.
    private func write(_ fd: Int32, _ data: some DataProtocol) -> Bool {
        let bytes = Array(data)
        var offset = 0
        var stalls = 0
        while offset < bytes.count {
            #if canImport(Glibc)
            let flags = Int32(MSG_NOSIGNAL)
            #else
            let flags: Int32 = 0
            #endif
            let sent = bytes[offset...].withUnsafeBytes { posixSend(fd, $0.baseAddress, $0.count, flags) }
            if sent > 0 {
                offset += sent
                continue
            }
            guard sent < 0, errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK else { return false }
            stalls += 1
            if stalls > 6 || isStopping { return false }  // 6 × SO_SNDTIMEO (5 s) at most
        }
        return true
    }

    /// Holds a stalled connection open until the client closes it, the server stops,
    /// or the idle limit passes; true when the client closed it.
    private func waitForClose(_ fd: Int32) -> Bool {
        var waited = 0.0
        var scratch = [UInt8](repeating: 0, count: 4096)
        while waited < Self.idleLimit, !isStopping {
            var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let result = poll(&ready, 1, Int32(Self.tick * 1000))
            waited += Self.tick
            guard result > 0 else { continue }
            if ready.revents & Int16(POLLHUP | POLLERR) != 0 { return true }
            let count = scratch.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) { return true }
        }
        return false
    }
}

/// `send(2)`, named apart from `TestServer.send(_:for:to:keepAlive:)`.
private func posixSend(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int, _ flags: Int32) -> Int {
    send(fd, buffer, count, flags)
}

extension POSIXError {
    /// The error for the current `errno`, for a failed `call`.
    public static func current(_ call: String) -> POSIXError {
        POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: "\(call) failed"])
    }
}
