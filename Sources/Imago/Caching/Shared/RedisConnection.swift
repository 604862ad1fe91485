import Foundation
#if canImport(CHiredis)
import CHiredis
#if canImport(Glibc)
import Glibc
#endif
#endif

/// A Redis server's address.
struct RedisNode: Hashable, Sendable, CustomStringConvertible {
    let host: String
    let port: Int

    var description: String { "\(host):\(port)" }
}

/// One reply of Redis, copied out of hiredis's reply object.
enum RedisReply: Sendable, Equatable {
    case string(Data)
    case status(String)
    case integer(Int)
    case null
    case array([RedisReply])
    case error(String)

    /// The bytes of a bulk string, nil for anything else.
    var data: Data? {
        if case .string(let data) = self { return data }
        return nil
    }

    /// The integer of an integer reply, nil for anything else.
    var integer: Int? {
        if case .integer(let value) = self { return value }
        return nil
    }
}

/// Why talking to Redis failed. Every case but `.refused` says nothing of the server
/// (it may be down, hung or far away) and counts against the circuit breaker.
enum RedisFailure: Error, Equatable, CustomStringConvertible {
    /// No connection: refused, unreachable, or not made within the connect timeout.
    case unreachable(String)
    /// The connection broke or a reply did not come within the command timeout;
    /// the connection is closed.
    case io(String)
    /// The server turned the client away: a wrong password or user, or a command
    /// its ACL forbids.
    case refused(String)
    /// No reply within the command timeout: the server is hung, overloaded or far;
    /// the connection is closed.
    case timedOut(String)
    /// The server answered a command with an error: a cluster that is down or
    /// resharding a multi-key command, a server loading its data, out of memory.
    case failed(String)
    /// A redirection that led nowhere: a cluster whose slots moved more often than
    /// a command may follow.
    case redirected(String)

    var description: String {
        switch self {
        case .unreachable(let text), .io(let text), .timedOut(let text), .refused(let text), .failed(let text), .redirected(let text): text
        }
    }
}

/// The timeouts and credentials a connection is made with.
struct RedisConnectionSettings: Sendable {
    var connectTimeout: Double
    var commandTimeout: Double
    var user: String?
    var password: String?
    var database: Int
}

#if canImport(CHiredis)
/// One blocking hiredis connection, with its command timeout on the socket: a reply
/// that does not come in time fails the command and the connection, never the load
/// that asked. Used by one thread at a time, handed from thread to thread through
/// its node's pool (``RedisNodePool``), hence unchecked.
final class RedisConnection: @unchecked Sendable {
    let node: RedisNode
    private let context: UnsafeMutablePointer<redisContext>
    /// False once an error has left the connection in an unknown state.
    private(set) var isUsable = true
    /// The longest wait for any one read of a reply (the socket's timeout).
    private let commandTimeout: Double

    /// Connects to `node`, then authenticates and selects the database if asked to.
    init(node: RedisNode, settings: RedisConnectionSettings) throws(RedisFailure) {
        self.node = node
        commandTimeout = settings.commandTimeout
        guard let context = redisConnectWithTimeout(node.host, Int32(node.port), Self.timeval(settings.connectTimeout)) else {
            throw .unreachable("\(node): no memory for a connection")
        }
        if context.pointee.err != 0 {
            let message = Self.errorText(context)
            redisFree(context)
            throw .unreachable("\(node): \(message)")
        }
        self.context = context
        redisSetTimeout(context, Self.timeval(settings.commandTimeout))
        var commands: [[Data]] = []
        if let password = settings.password {
            commands.append(redisCommand("AUTH") + (settings.user.map { redisCommand($0) } ?? []) + redisCommand(password))
        }
        if settings.database != 0 { commands.append(redisCommand("SELECT", String(settings.database))) }
        guard !commands.isEmpty else { return }
        for reply in try run(commands) {
            if case .error(let message) = reply { throw .refused("\(node): \(message)") }
        }
    }

    deinit {
        redisFree(context)
    }

    /// Runs one command.
    func run(_ command: [Data]) throws(RedisFailure) -> RedisReply {
        try run([command])[0]
    }

    /// Sends `commands` in one write and reads their replies in order: one round trip
    /// for all. An error reply is a reply; only a broken or silent connection throws.
    func run(_ commands: [[Data]]) throws(RedisFailure) -> [RedisReply] {
        guard isUsable else { throw .io("\(node): connection closed after an earlier error") }
        for command in commands { append(command) }
        var replies: [RedisReply] = []
        replies.reserveCapacity(commands.count)
        // hiredis writes with write(2): a peer gone since the last command would
        // raise SIGPIPE, whose default kills the process. It is held back on this
        // thread for the call and taken if it came; the write fails with EPIPE then.
        let deadline = ContinuousClock.now + .seconds(max(1, commandTimeout * 20))
        let failure = Self.withSIGPIPEHeld { () -> RedisFailure? in
            for _ in commands {
                let raw: UnsafeMutableRawPointer
                switch nextReply(before: deadline) {
                case .success(let reply): raw = reply
                case .failure(let failure): return failure
                }
                replies.append(Self.reply(raw.assumingMemoryBound(to: redisReply.self)))
                freeReplyObject(raw)
            }
            return nil
        }
        if let failure {
            isUsable = false
            throw failure
        }
        return replies
    }

    /// The next reply, as hiredis's `redisGetReply` reads it (the output buffer
    /// written, then reads until a reply is whole), but before `deadline` as well: the
    /// socket's timeout bounds each read only, and a server sending a byte now and
    /// then would hold the command, the load and the process's exit for as long as it
    /// liked. Twenty command timeouts (a second at least) leave room for the largest
    /// value over a slow link.
    private func nextReply(before deadline: ContinuousClock.Instant) -> Result<UnsafeMutableRawPointer, RedisFailure> {
        func failure() -> RedisFailure {
            let timedOut = context.pointee.err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)
            let text = "\(node): \(Self.errorText(context))"
            return timedOut ? .timedOut(text) : .io(text)
        }
        var reply: UnsafeMutableRawPointer?
        guard redisGetReplyFromReader(context, &reply) == REDIS_OK else { return .failure(failure()) }
        if let reply { return .success(reply) }
        var written: Int32 = 0
        while written == 0 {
            guard redisBufferWrite(context, &written) == REDIS_OK else { return .failure(failure()) }
        }
        while true {
            let left = (deadline - .now).seconds
            guard left > 0 else { return .failure(.timedOut("\(node): the reply did not end within \(max(1, commandTimeout * 20)) s")) }
            redisSetTimeout(context, Self.timeval(min(commandTimeout, left)))
            guard redisBufferRead(context) == REDIS_OK, redisGetReplyFromReader(context, &reply) == REDIS_OK else {
                return .failure(failure())
            }
            if let reply { return .success(reply) }
        }
    }

    /// Puts one command into hiredis's output buffer, its arguments binary-safe.
    private func append(_ command: [Data]) {
        let total = command.reduce(0) { $0 + $1.count }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 1), alignment: 1)
        defer { buffer.deallocate() }
        var pointers: [UnsafePointer<CChar>?] = []
        var lengths: [Int] = []
        var offset = 0
        for argument in command {
            argument.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { (buffer.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count) }
            }
            pointers.append(UnsafePointer((buffer.baseAddress! + offset).assumingMemoryBound(to: CChar.self)))
            lengths.append(argument.count)
            offset += argument.count
        }
        // hiredis copies the arguments into its own buffer here.
        _ = pointers.withUnsafeMutableBufferPointer { argv in
            redisAppendCommandArgv(context, Int32(command.count), argv.baseAddress, lengths)
        }
    }

    private static func reply(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        let value = reply.pointee
        func text() -> Data { value.str.map { Data(bytes: $0, count: value.len) } ?? Data() }
        switch value.type {
        case REDIS_REPLY_STRING: return .string(text())
        case REDIS_REPLY_STATUS: return .status(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_ERROR: return .error(String(decoding: text(), as: UTF8.self))
        case REDIS_REPLY_INTEGER: return .integer(Int(value.integer))
        case REDIS_REPLY_ARRAY:
            return .array((0..<value.elements).map { index in value.element[index].map { Self.reply($0) } ?? .null })
        default: return .null
        }
    }

    private static func errorText(_ context: UnsafeMutablePointer<redisContext>) -> String {
        let text = withUnsafeBytes(of: context.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        // hiredis reports a socket timeout as EAGAIN's text.
        return text == "Resource temporarily unavailable" ? "no reply within the command timeout" : text
    }

    private static func timeval(_ seconds: Double) -> timeval {
        let micros = Int((max(seconds, 0.001) * 1_000_000).rounded())
        return Glibc.timeval(tv_sec: micros / 1_000_000, tv_usec: micros % 1_000_000)
    }

    private static func withSIGPIPEHeld<Result>(_ body: () -> Result) -> Result {
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipe, &previous)
        let result = body()
        var pending = sigset_t()
        if sigpending(&pending) == 0, sigismember(&pending, SIGPIPE) == 1, sigismember(&previous, SIGPIPE) == 0 {
            var now = timespec()
            _ = sigtimedwait(&pipe, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return result
    }
}
#else
/// Where hiredis is missing (Apple platforms) no connection is ever made, so the
/// shared tier is unavailable: every command fails as refused, and the breaker
/// keeps the tier at rest after one clear warning.
final class RedisConnection: Sendable {
    init(node: RedisNode, settings: RedisConnectionSettings) throws(RedisFailure) {
        throw .refused("the shared cache needs hiredis, which this platform lacks")
    }

    func run(_ command: [Data]) throws(RedisFailure) -> RedisReply {
        try run([command])[0]
    }

    func run(_ commands: [[Data]]) throws(RedisFailure) -> [RedisReply] {
        throw .refused("the shared cache needs hiredis, which this platform lacks")
    }
}
#endif

/// A command of text arguments, as most are; values go in as `Data`.
func redisCommand(_ arguments: String...) -> [Data] {
    arguments.map { Data($0.utf8) }
}
