#if canImport(CHiredis)
import Foundation
import Testing
@testable import Imago

/// A server that keeps a reply coming a byte at a time: the command timeout bounds
/// each read, and the reply as a whole is bounded too, so neither a load nor the end
/// of a run waits for it. Against a stand-in on 127.0.0.1 that answers every command
/// with the start of a 100,000-byte string and then one byte every 20 ms.
@Suite struct RedisTrickleTests {
    /// Accepts connections on a free loopback port; each gets the trickle until it
    /// closes or `stop()`.
    final class TricklingServer: @unchecked Sendable {
        let port: Int
        private let listener: Int32
        private let stopped = Locked(false)

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0
                }
            }
            guard fd >= 0, bound else { throw RedisServerError(message: "no loopback listener: \(errno)") }
            listener = fd
            port = Int(UInt16(bigEndian: address.sin_port))
            Thread { [self] in accept() }.start()
        }

        func stop() {
            stopped.withLock { $0 = true }
            shutdown(listener, Int32(SHUT_RDWR))
            close(listener)
        }

        private func accept() {
            while !stopped.withLock({ $0 }) {
                let connection = Glibc.accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Thread { [self] in trickle(connection) }.start()
            }
        }

        private func trickle(_ connection: Int32) {
            defer { close(connection) }
            var request = [UInt8](repeating: 0, count: 4096)
            guard read(connection, &request, request.count) > 0 else { return }
            let start = Array("$100000\r\n".utf8)
            guard send(connection, start, start.count, Int32(MSG_NOSIGNAL)) == start.count else { return }
            while !stopped.withLock({ $0 }) {
                guard send(connection, [UInt8(ascii: "x")], 1, Int32(MSG_NOSIGNAL)) == 1 else { return }
                usleep(20_000)
            }
        }
    }

    @Test func aReplyThatTricklesIsCutOffNotWaitedFor() throws {
        let server = try TricklingServer()
        defer { server.stop() }
        let settings = RedisConnectionSettings(connectTimeout: 1, commandTimeout: 0.1, user: nil, password: nil, database: 0)
        let connection = try RedisConnection(node: RedisNode(host: "127.0.0.1", port: server.port), settings: settings)
        let outcome = Locked<Result<RedisReply, RedisFailure>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let clock = ContinuousClock()
        let start = clock.now
        Thread {
            outcome.withLock { $0 = Result { () throws(RedisFailure) in try connection.run(redisCommand("PING")) } }
            done.signal()
        }.start()
        // A hang guard: whole, the reply would take 2,000 s.
        #expect(done.wait(timeout: .now() + 60) == .success, "a trickling reply held the command")
        guard case .failure(.timedOut)? = outcome.withLock({ $0 }) else {
            Issue.record("\(String(describing: outcome.withLock { $0 }))")
            return
        }
        // Reported, not asserted: the bound is twenty command timeouts (2 s here).
        print("a trickling reply was cut off after \(clock.now - start)")
    }
}
#endif
