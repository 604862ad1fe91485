import Foundation

/// The tier's upkeep: what it holds, clearing it, and the last run's counters
/// (`imago cache stats`, `removeAllCachedData(includingShared:)`).
extension SharedCache {
    /// What the tier holds: keys and bytes under the namespace on every master, and
    /// the counters of the last run that recorded them (``SharedCache/recordRun()``).
    package struct Statistics: Sendable {
        /// Records under the namespace (leases not counted).
        package var keys: Int
        /// Their bytes.
        package var bytes: Int
        /// The counters the last run recorded, if one did.
        package var lastRun: (hits: Int, misses: Int)?
        /// The servers scanned.
        package var nodes: [String]
    }

    /// Scans every master for the namespace's keys. Throws when a server cannot be
    /// reached or refuses.
    package func statistics() throws(ImagoError) -> Statistics {
        do throws(RedisFailure) {
            var keys = 0, bytes = 0
            let nodes = try forEachRecordBatch { pool, names throws(RedisFailure) in
                let lengths = try pool.run(names.map { redisCommand("STRLEN") + [$0] })
                keys += names.count
                bytes += lengths.compactMap(\.integer).reduce(0, +)
            }
            let run = try client.run([redisCommand("HMGET", runKey, "hits", "misses")], slotKey: Data(runKey.utf8))[0]
            var lastRun: (Int, Int)?
            if case .array(let values) = run, values.count == 2,
               let hits = values[0].data.flatMap({ Int(String(decoding: $0, as: UTF8.self)) }),
               let misses = values[1].data.flatMap({ Int(String(decoding: $0, as: UTF8.self)) }) {
                lastRun = (hits, misses)
            }
            return Statistics(keys: keys, bytes: bytes, lastRun: lastRun, nodes: nodes.map(\.description))
        } catch {
            throw unreachable(error)
        }
    }

    /// Deletes every record under the namespace on every master (leases and the
    /// last run's counters stay, so that a fleet's loads in flight go on): what
    /// `ImageLoader.removeAllCachedData(includingShared:)` clears when asked. Every
    /// process of the fleet loses these records; returns how many were deleted.
    /// Throws when a server cannot be reached or refuses.
    @discardableResult
    public func removeAll() throws(ImagoError) -> Int {
        do throws(RedisFailure) {
            var deleted = 0
            try forEachRecordBatch { pool, names throws(RedisFailure) in
                // One command per key: in a cluster, keys of other slots may not share one DEL.
                deleted += try pool.run(names.map { redisCommand("DEL") + [$0] }).compactMap(\.integer).reduce(0, +)
            }
            return deleted
        } catch {
            throw unreachable(error)
        }
    }

    /// Calls `body` with each batch of the namespace's record names that `SCAN` finds
    /// on each master (leases and the last run's counters left out), and the
    /// master's pool; returns the masters scanned.
    @discardableResult
    private func forEachRecordBatch(
        _ body: (RedisNodePool, [Data]) throws(RedisFailure) -> Void
    ) throws(RedisFailure) -> [RedisNode] {
        let nodes = try client.nodes()
        let runKey = self.runKey
        for node in nodes {
            let pool = client.pool(node)
            var cursor = "0"
            repeat {
                let reply = try pool.run([redisCommand("SCAN", cursor, "MATCH", "\(escapedNamespace):{*}:*", "COUNT", "500")])[0]
                guard case .array(let parts) = reply, parts.count == 2, let next = parts[0].data,
                      case .array(let found) = parts[1]
                else { throw RedisFailure.io("\(node): unexpected SCAN reply") }
                cursor = String(decoding: next, as: UTF8.self)
                let names = found.compactMap(\.data).filter {
                    let name = String(decoding: $0, as: UTF8.self)
                    return !name.hasSuffix(":lease") && name != runKey
                }
                if !names.isEmpty { try body(pool, names) }
            } while cursor != "0"
        }
        return nodes
    }

    /// The error of a maintenance command that could not reach a server.
    private func unreachable(_ error: RedisFailure) -> ImagoError {
        .network(url: client.startupNodes.map(\.description).joined(separator: ","), reason: "Redis: \(error)", code: .cannotConnectToHost, errno: nil)
    }

    /// Records this process's hits and misses as the last run's, for
    /// `imago cache stats`; best effort.
    package func recordRun() {
        let counters = counters
        _ = perform { () throws(RedisFailure) in
            try client.run([redisCommand("HSET", runKey, "hits", String(counters.hits), "misses", String(counters.misses))], slotKey: Data(runKey.utf8))
        }
    }
}
