import Foundation

/// The idle connections to one node, reused from command to command: a command
/// takes one (or connects), and gives it back unless it failed.
final class RedisNodePool: Sendable {
    let node: RedisNode
    private let settings: RedisConnectionSettings
    private let idle = Locked<[RedisConnection]>([])
    /// Idle connections kept beyond this are closed: as many as commands ran at
    /// once, up to a bound, so a burst does not leave sockets open for ever.
    private static let maximumIdle = 16

    init(node: RedisNode, settings: RedisConnectionSettings) {
        self.node = node
        self.settings = settings
    }

    /// Runs `commands` in one round trip. A reused connection that the server closed
    /// since (a restart, an idle timeout) fails at once rather than after the command
    /// timeout, and the commands are sent once more on a new one; a timeout is never
    /// tried again, so no load waits more than one command timeout for a hung server.
    func run(_ commands: [[Data]]) throws(RedisFailure) -> [RedisReply] {
        if let connection = idle.withLock({ $0.popLast() }) {
            do throws(RedisFailure) {
                return try finish(commands, on: connection)
            } catch {
                guard case .io = error else { throw error }
            }
        }
        return try finish(commands, on: RedisConnection(node: node, settings: settings))
    }

    private func finish(_ commands: [[Data]], on connection: RedisConnection) throws(RedisFailure) -> [RedisReply] {
        let replies = try connection.run(commands)
        idle.withLock { if $0.count < Self.maximumIdle { $0.append(connection) } }
        return replies
    }

    /// Closes the idle connections: after a failure they are likely broken too.
    func drain() {
        _ = idle.withLock { connections in
            defer { connections.removeAll() }
            return connections
        }
    }
}

/// Commands to one Redis or a Redis Cluster, found from the same start-up addresses: a
/// start-up node that answers `CLUSTER SLOTS` with slots is a cluster, one whose cluster
/// support is off is a standalone server. In a cluster each command goes to the
/// master serving its key's slot, `MOVED` updates the slot map (read again in
/// full at the next command), and `ASK` sends the command once to the node that
/// is importing the slot, after `ASKING`.
final class RedisClient: Sendable {
    /// How the start-up nodes turned out.
    private enum Topology {
        case unknown
        case standalone(RedisNodePool)
        /// The master of every slot, nil where none serves it.
        case cluster(slots: [RedisNode?], stale: Bool)
    }

    static let slotCount = 16384
    private static let maximumRedirections = 5

    let startupNodes: [RedisNode]
    private let settings: RedisConnectionSettings
    private let topology = Locked<Topology>(.unknown)
    private let pools = Locked<[RedisNode: RedisNodePool]>([:])

    init(startupNodes: [RedisNode], settings: RedisConnectionSettings) {
        self.startupNodes = startupNodes
        self.settings = settings
    }

    /// The pool of connections to `node`.
    func pool(_ node: RedisNode) -> RedisNodePool {
        pools.withLock { pools in
            if let pool = pools[node] { return pool }
            let pool = RedisNodePool(node: node, settings: settings)
            pools[node] = pool
            return pool
        }
    }

    /// Runs `commands`, each on the one key it names at `keyIndex` (1 for most
    /// commands), in one round trip per node. Every key must hash to one slot (the
    /// shared tier's keys of one image share a hash tag), so they go together.
    func run(_ commands: [[Data]], slotKey: Data) throws(RedisFailure) -> [RedisReply] {
        let target = try node(forSlot: Self.slot(of: slotKey))
        var replies = try target.run(commands)
        var redirections = 0
        while true {
            // The replies that send their command to the same node as the first
            // redirection, the same way: re-sent there, the others kept (a second
            // node, or the other kind, waits for the next turn).
            let found = replies.indices.compactMap { index in Self.redirection(replies[index]).map { (index, $0) } }
            guard let (_, first) = found.first else { return try Self.checked(replies, from: target.node) }
            let redirected = found.filter { $0.1.node == first.node && $0.1.isAsk == first.isAsk }
            redirections += 1
            guard redirections <= Self.maximumRedirections else { throw .redirected("slots moved more often than a command follows") }
            let pool = pool(first.node)
            let resent = redirected.map { commands[$0.0] }
            let again: [RedisReply]
            if first.isAsk {
                // ASKING holds for the next command only, so it goes before each.
                again = try pool.run(resent.flatMap { [redisCommand("ASKING"), $0] }).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            } else {
                topology.withLock { topology in
                    if case .cluster(var slots, _) = topology {
                        slots[first.slot] = first.node
                        topology = .cluster(slots: slots, stale: true)
                    }
                }
                again = try pool.run(resent)
            }
            for (position, (index, _)) in redirected.enumerated() { replies[index] = again[position] }
        }
    }

    /// `replies`, unless one is an error: a refusal (no permission, no or wrong
    /// credentials) or another failure, which the caller must not take for a miss.
    /// A write refused for want of memory (`OOM`, under `maxmemory` without an
    /// eviction policy that makes room) is a reply: the server is well, only full; so
    /// is a key holding another type than the command reads (`WRONGTYPE`): the server
    /// is well, the value is not Imago's.
    private static func checked(_ replies: [RedisReply], from node: RedisNode) throws(RedisFailure) -> [RedisReply] {
        for case .error(let message) in replies where !message.hasPrefix("OOM") && !message.hasPrefix("WRONGTYPE") {
            let refusal = ["NOPERM", "NOAUTH", "WRONGPASS"].contains { message.hasPrefix($0) }
            throw refusal ? .refused("\(node): \(message)") : .failed("\(node): \(message)")
        }
        return replies
    }

    /// The masters of a cluster, or the one server: where a scan of every key goes.
    func nodes() throws(RedisFailure) -> [RedisNode] {
        try discover()
        return topology.withLock { topology -> [RedisNode] in
            switch topology {
            case .standalone(let pool): [pool.node]
            case .cluster(let slots, _): Array(Set(slots.compactMap { $0 })).sorted { $0.description < $1.description }
            case .unknown: []
            }
        }
    }

    /// Forgets the connections and the slot map, which a failure may have made wrong.
    func reset() {
        for pool in pools.withLock({ Array($0.values) }) { pool.drain() }
        topology.withLock { topology in
            if case .cluster(let slots, _) = topology { topology = .cluster(slots: slots, stale: true) }
        }
    }

    private func node(forSlot slot: Int) throws(RedisFailure) -> RedisNodePool {
        try discover()
        let chosen = topology.withLock { topology -> RedisNode? in
            switch topology {
            case .standalone(let pool): pool.node
            case .cluster(let slots, _): slots[slot] ?? startupNodes.first
            case .unknown: nil
            }
        }
        guard let chosen else { throw .unreachable("no Redis answered") }
        return pool(chosen)
    }

    /// Learns the topology from the first start-up node that answers, the first time and
    /// after a redirection made the slot map stale. A server that will not run
    /// `CLUSTER SLOTS` (cluster support off, or an ACL user without the command) is
    /// taken for a standalone one.
    private func discover() throws(RedisFailure) {
        let needed = topology.withLock { topology -> Bool in
            switch topology {
            case .unknown: true
            case .standalone: false
            case .cluster(_, let stale): stale
            }
        }
        guard needed else { return }
        var known: [RedisNode] = startupNodes
        if case .cluster(let slots, _) = topology.withLock({ $0 }) {
            known = Array(Set(slots.compactMap { $0 })) + startupNodes
        }
        var lastFailure = RedisFailure.unreachable("no Redis address given")
        for node in known {
            do throws(RedisFailure) {
                let reply = try pool(node).run([redisCommand("CLUSTER", "SLOTS")])[0]
                let found: Topology
                switch reply {
                case .array(let ranges) where !ranges.isEmpty: found = .cluster(slots: Self.slots(from: ranges), stale: false)
                case .error(let message) where message.hasPrefix("NOAUTH"):
                    throw .refused("\(node): \(message)")
                default: found = .standalone(pool(node))
                }
                topology.withLock { $0 = found }
                return
            } catch {
                if case .refused = error { throw error }
                lastFailure = error
            }
        }
        throw lastFailure
    }

    /// The slot map from `CLUSTER SLOTS`: [start, end, [host, port, id], replicas...].
    private static func slots(from ranges: [RedisReply]) -> [RedisNode?] {
        var slots = [RedisNode?](repeating: nil, count: slotCount)
        for case .array(let range) in ranges {
            guard range.count >= 3, let start = range[0].integer, let end = range[1].integer,
                  case .array(let master) = range[2], master.count >= 2,
                  let host = master[0].data.map({ String(decoding: $0, as: UTF8.self) }), let port = master[1].integer,
                  0 <= start, start <= end, end < slotCount
            else { continue }
            for slot in start...end { slots[slot] = RedisNode(host: host, port: port) }
        }
        return slots
    }

    private struct Redirection {
        let isAsk: Bool
        let slot: Int
        let node: RedisNode
    }

    /// `MOVED 3999 127.0.0.1:6381` or `ASK 3999 127.0.0.1:6381`.
    private static func redirection(_ reply: RedisReply) -> Redirection? {
        guard case .error(let message) = reply else { return nil }
        let parts = message.split(separator: " ")
        guard parts.count == 3, parts[0] == "MOVED" || parts[0] == "ASK", let slot = Int(parts[1]), (0..<slotCount).contains(slot),
              let colon = parts[2].lastIndex(of: ":"), let port = Int(parts[2][parts[2].index(after: colon)...])
        else { return nil }
        return Redirection(isAsk: parts[0] == "ASK", slot: slot, node: RedisNode(host: String(parts[2][..<colon]), port: port))
    }

    /// The cluster slot of `key`: CRC-16/XMODEM of the key, or of its hash tag (the
    /// text between the first `{` and the next `}`, when not empty), modulo 16384.
    static func slot(of key: Data) -> Int {
        let bytes = [UInt8](key)
        var hashed = bytes[...]
        if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
           let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1 {
            hashed = bytes[(open + 1)..<close]
        }
        var crc: UInt16 = 0
        for byte in hashed {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return Int(crc) % slotCount
    }
}
