import Foundation

/// The shared tier at work: records in Redis or Redis Cluster under a namespace,
/// one-origin-request leases, a circuit breaker and a bounded write queue.
///
/// Every key of one image (its original, its variants, its lease) carries the same
/// hash tag, made from the image key, so in a cluster they live on one slot and a
/// command for them goes to one master. A value is a record in the disk tier's
/// format whose key is the namespace and the record's name: served only when whole,
/// its checksum holding and its key its own.
public final class SharedCache: Sendable {
    /// What the tier has done since it was made.
    package struct Counters: Sendable, Equatable {
        /// Look-ups answered with a valid record.
        package var hits = 0
        /// Look-ups that found nothing (or nothing valid).
        package var misses = 0
        /// Values found damaged, foreign, over the size cap or cut short: never
        /// served, and deleted so that the next load stores them anew.
        package var rejected = 0
        /// Records written.
        package var stored = 0
        /// Writes not made: the queue was full, the tier resting, the value over
        /// the size cap, or Redis out of memory.
        package var writesDropped = 0
        /// Commands that failed (timeout, connection, refusal).
        package var failures = 0
        /// Times the circuit breaker stopped asking.
        package var pauses = 0
        /// Leases taken before asking the origin.
        package var leasesTaken = 0
        /// Loads that waited for another machine's value and got it.
        package var leaseWaitsAnswered = 0
        /// Loads that waited for another machine's value until the bound, or until
        /// its lease expired, and asked the origin themselves.
        package var leaseWaitsExpired = 0
        /// Leases that had expired under their holder by the time it stored the value
        /// or gave the lease back: another machine may have asked the origin too. Many
        /// of them say the lease is shorter than a fetch takes.
        package var leasesLost = 0

        /// Hits over look-ups, 0 without any.
        package var hitRate: Double { hits + misses == 0 ? 0 : Double(hits) / Double(hits + misses) }
    }

    /// What a look-up found.
    enum Lookup: Sendable {
        /// With the CRC of the body alone, so that a copy on disk is checksummed
        /// without reading the body again.
        case hit(DiskCache.Record, bodyChecksum: UInt32)
        case miss
        /// The tier could not be asked (down, hung, resting): go on without it.
        case unavailable
    }

    /// What waiting on another machine's lease came to.
    enum LeaseOutcome: Sendable {
        /// The value arrived.
        case found(DiskCache.Record, bodyChecksum: UInt32)
        /// This load holds the lease now (the first holder released it without a
        /// value, or it expired): it asks the origin.
        case taken(Lease)
        /// The tier failed or the wait reached its bound: the load asks the origin
        /// without a lease.
        case givenUp
    }

    /// A lease this process holds on one image.
    typealias Lease = HTTPCache.Lease

    /// The settings the tier was made with.
    public let configuration: SharedCache.Configuration
    let client: RedisClient
    private let writer = DispatchQueue(label: "imago.shared-cache.writer")
    private let state = Locked<State>(State())

    private struct State {
        var counters = Counters()
        var failuresInARow = 0
        var restingUntil: ContinuousClock.Instant?
        /// A probe is asking the server whether it answers again.
        var probing = false
        var pendingWrites = 0
        var warned: Set<String> = []
    }

    /// A tier on the servers of `configuration`; no connection is made until the
    /// first command. Throws when a server is not a `redis://` URL, or when the URLs
    /// disagree on credentials or database.
    public init(configuration: SharedCache.Configuration) throws(ImagoError) {
        let addresses = configuration.servers.compactMap(RedisAddress.init)
        guard let first = addresses.first, addresses.count == configuration.servers.count else {
            throw .invalidRequest(
                url: configuration.servers.map(\.absoluteString).joined(separator: ","),
                reason: "not a list of redis://[user:password@]host:port[/db] URLs")
        }
        guard addresses.allSatisfy({ $0.user == first.user && $0.password == first.password && $0.database == first.database }) else {
            throw .invalidRequest(url: first.host, reason: "the Redis URLs name different users, passwords or databases")
        }
        self.configuration = configuration
        client = RedisClient(
            startupNodes: addresses.map { RedisNode(host: $0.host, port: $0.port) },
            settings: RedisConnectionSettings(
                connectTimeout: configuration.connectTimeout, commandTimeout: configuration.commandTimeout,
                user: first.user, password: first.password, database: first.database))
    }

    /// The counters so far.
    package var counters: Counters { state.withLock { $0.counters } }

    // MARK: - Records

    /// The record named `name` (a disk-tier record name) of `imageKey`'s image.
    /// `counted` false: a second look of the same load, not a hit or a miss of its own.
    func record(named name: String, imageKey: String, counted: Bool = true) -> Lookup {
        let key = valueKey(name, imageKey: imageKey)
        // GETRANGE reads at most one byte past the cap: a value over it is known
        // by its length without being read whole.
        let cap = configuration.maximumValueSize
        guard let reply = perform({ () throws(RedisFailure) in
            try client.run([redisCommand("GETRANGE", key, "0", String(cap))], slotKey: Data(key.utf8))[0]
        }) else { return .unavailable }
        // A value of another type (a list, a hash) answers with an error: not Imago's,
        // rejected as a damaged value is.
        let isForeign = if case .error = reply { true } else { false }
        let value = reply.data ?? Data()
        if value.isEmpty, !isForeign {
            if counted { count { $0.misses += 1 } }
            return .miss
        }
        guard !isForeign, value.count <= cap,
              let (metadata, body, storedAt, bodyChecksum) = RecordFormat.decode(value, key: recordKey(name)) else {
            count {
                $0.rejected += 1
                if counted { $0.misses += 1 }
            }
            // Deleted before the load goes on, so that its next look (after taking
            // the lease) does not meet it again.
            _ = perform { () throws(RedisFailure) in try client.run([redisCommand("DEL", key)], slotKey: Data(key.utf8)) }
            return .miss
        }
        if counted { count { $0.hits += 1 } }
        return .hit(DiskCache.Record(data: body, metadata: metadata, storedAt: Date(timeIntervalSince1970: storedAt)), bodyChecksum: bodyChecksum)
    }

    /// Queues the record for writing with a time to live of `lifetime` seconds,
    /// releasing `lease` after it; dropped (and counted) when the queue is full, the
    /// tier is resting, or the record is over the size cap, and then the lease is
    /// given back. Nothing is written without a time to live.
    func store(_ body: Data, metadata: Data, named name: String, imageKey: String, lifetime: Double, releasing lease: Lease? = nil) {
        let milliseconds = Int((lifetime * 1000).rounded(.down))
        guard milliseconds > 0 else {
            if let lease { release(lease) }
            return
        }
        // Admitted before the record is made: a resting tier costs no copy of the body.
        let size = RecordFormat.fileSize(key: recordKey(name).utf8.count, metadata: metadata.count, body: body.count)
        let admitted = state.withLock { state -> Bool in
            guard size <= configuration.maximumValueSize, isAnswering(state),
                  state.pendingWrites < configuration.maximumPendingWrites
            else {
                state.counters.writesDropped += 1
                return false
            }
            state.pendingWrites += 1
            return true
        }
        guard admitted else {
            if let lease { release(lease) }
            return
        }
        let key = valueKey(name, imageKey: imageKey)
        let record = RecordFormat.encode(key: recordKey(name), metadata: metadata, body: body, storedAt: Date().timeIntervalSince1970)
        writer.async { [self] in
            defer { state.withLock { $0.pendingWrites -= 1 } }
            var commands = [redisCommand("SET", key) + [record] + redisCommand("PX", String(milliseconds))]
            if let lease { commands.append(Self.releaseCommand(lease)) }
            guard let replies = perform({ () throws(RedisFailure) in try client.run(commands, slotKey: Data(key.utf8)) }),
                  let written = replies.first else { return }
            if case .error = written { count { $0.writesDropped += 1 } } else { count { $0.stored += 1 } }
            if lease != nil, replies.count > 1 { countIfLost(replies[1]) }
        }
    }

    /// Deletes the record named `name` of `imageKey`'s image, in the background: it no
    /// longer decodes, or the server said the image is gone.
    func remove(named name: String, imageKey: String) {
        let key = valueKey(name, imageKey: imageKey)
        writer.async { [self] in
            _ = perform { () throws(RedisFailure) in try client.run([redisCommand("DEL", key)], slotKey: Data(key.utf8)) }
        }
    }

    /// Waits until the queued writes are done or `seconds` have passed; true when
    /// they are done.
    package func writesEnded(within seconds: Double) -> Bool {
        let done = DispatchSemaphore(value: 0)
        writer.async { done.signal() }
        return done.wait(timeout: .now() + seconds) == .success
    }

    // MARK: - Leases

    /// What asking for a lease came to.
    enum LeaseAttempt: Sendable {
        case taken(Lease)
        /// Another process holds it.
        case held
        /// The tier could not be asked, or refused the lease (full).
        case unavailable
    }

    /// Takes the lease on `imageKey`'s image for ``SharedCache/Configuration/leaseDuration``.
    func takeLease(imageKey: String) -> LeaseAttempt {
        let lease = Lease(key: leaseKey(imageKey), token: UUID().uuidString)
        let milliseconds = String(max(1, Int(configuration.leaseDuration * 1000)))
        guard let reply = perform({ () throws(RedisFailure) in
            try client.run([redisCommand("SET", lease.key, lease.token, "NX", "PX", milliseconds)], slotKey: Data(lease.key.utf8))[0]
        }) else { return .unavailable }
        switch reply {
        case .status("OK"):
            count { $0.leasesTaken += 1 }
            return .taken(lease)
        case .null:
            return .held
        default:
            // An error (OOM from a full Redis under noeviction): nobody holds the lease,
            // and waiting for one would cost every miss the whole lease wait.
            return .unavailable
        }
    }

    /// What claiming an image's fetch came to.
    enum Claim: Sendable {
        /// This load holds the lease: it asks the origin.
        case taken(Lease)
        /// The record was stored meanwhile.
        case found(DiskCache.Record, bodyChecksum: UInt32)
        /// Another process holds the lease.
        case held
        /// The tier could not be asked, or refused the lease (full).
        case unavailable
    }

    /// Takes the lease on `imageKey`'s image, then looks for the record named `name`
    /// once more: it may have been stored, and its lease given back, since the look
    /// that missed. Found, the lease goes back at once, so that the fleet asks the
    /// origin once.
    func claim(named name: String, imageKey: String) -> Claim {
        switch takeLease(imageKey: imageKey) {
        case .unavailable: return .unavailable
        case .held: return .held
        case .taken(let lease):
            guard case .hit(let record, let checksum) = record(named: name, imageKey: imageKey, counted: false) else { return .taken(lease) }
            release(lease)
            return .found(record, bodyChecksum: checksum)
        }
    }

    /// Gives the lease back without a value: the load failed, so whoever waits asks
    /// the origin at once rather than at the end of the lease.
    func release(_ lease: Lease) {
        writer.async { [self] in
            let reply = perform { () throws(RedisFailure) in try client.run([Self.releaseCommand(lease)], slotKey: Data(lease.key.utf8)) }
            if let reply = reply?.first { countIfLost(reply) }
        }
    }

    /// Counts a lease the release found gone (the script answers 0: the key was
    /// not this holder's any more).
    private func countIfLost(_ releaseReply: RedisReply) {
        if releaseReply.integer == 0 { count { $0.leasesLost += 1 } }
    }

    /// Waits for the record named `name`, which another process holds the lease to
    /// fetch: polls for it, and takes the lease when it is gone (its holder gave up
    /// or died), up to ``SharedCache/Configuration/leaseWait``.
    func waitForRecord(named name: String, imageKey: String) async -> LeaseOutcome {
        let deadline = ContinuousClock.now + .seconds(configuration.leaseWait)
        var interval = 0.005
        while ContinuousClock.now < deadline {
            do { try await DeadlineClock.shared.sleep(interval) } catch { return .givenUp }
            interval = min(interval * 1.5, 0.05)
            // The commands block on their replies: off the concurrency pool.
            if let outcome = await BlockingWork.value({ self.lookWhileLeased(named: name, imageKey: imageKey) }) { return outcome }
        }
        count { $0.leaseWaitsExpired += 1 }
        return .givenUp
    }

    /// One look for the record another process holds the lease to fetch: the record,
    /// the lease when it is gone, or nil while it is still held.
    private func lookWhileLeased(named name: String, imageKey: String) -> LeaseOutcome? {
        let key = valueKey(name, imageKey: imageKey)
        guard let exists = perform({ () throws(RedisFailure) in
            try client.run([redisCommand("EXISTS", key)], slotKey: Data(key.utf8))[0].integer
        }) else { return .givenUp }
        if exists == 1 {
            switch record(named: name, imageKey: imageKey) {
            case .hit(let record, let checksum):
                count { $0.leaseWaitsAnswered += 1 }
                return .found(record, bodyChecksum: checksum)
            case .miss: break
            case .unavailable: return .givenUp
            }
        }
        switch claim(named: name, imageKey: imageKey) {
        case .unavailable: return .givenUp
        case .held: return nil
        case .found(let record, let checksum):
            count { $0.leaseWaitsAnswered += 1 }
            return .found(record, bodyChecksum: checksum)
        case .taken(let lease):
            count { $0.leaseWaitsExpired += 1 }
            return .taken(lease)
        }
    }

    // MARK: - Keys

    /// The hash tag of an image: its keys share a cluster slot.
    private func tag(_ imageKey: String) -> String { String(SHA256.hex(imageKey).prefix(32)) }

    func valueKey(_ name: String, imageKey: String) -> String {
        "\(configuration.namespace):{\(tag(imageKey))}:\(SHA256.hex(name).prefix(32))"
    }

    /// Where the last run's counters are kept.
    var runKey: String { "\(configuration.namespace):{run}:last" }

    func leaseKey(_ imageKey: String) -> String { "\(configuration.namespace):{\(tag(imageKey))}:lease" }

    /// The key inside a record: a value copied under another namespace or name does
    /// not pass for the one it replaced.
    func recordKey(_ name: String) -> String { "\(configuration.namespace)\n\(name)" }

    /// The namespace with SCAN's pattern characters escaped.
    var escapedNamespace: String {
        configuration.namespace.reduce(into: "") { text, character in
            if "*?[]\\".contains(character) { text.append("\\") }
            text.append(character)
        }
    }

    /// Deletes a lease only while it is still this process's.
    private static func releaseCommand(_ lease: Lease) -> [Data] {
        redisCommand(
            "EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end",
            "1", lease.key, lease.token)
    }

    // MARK: - The circuit breaker

    private func count(_ change: (inout Counters) -> Void) {
        state.withLock { change(&$0.counters) }
    }

    /// Whether commands go to the server: no failure since the last success.
    private func isAnswering(_ state: State) -> Bool {
        state.failuresInARow == 0 && state.restingUntil == nil
    }

    /// Runs `body` while the server answers; nil when it does not, or when `body`
    /// failed. After a failure no load waits on the server again until it answers: a
    /// probe (PING) on a thread of its own asks it, and the loads go on without the
    /// tier meanwhile, so a hung server costs the loads in flight one command timeout,
    /// not one each until the breaker opens. After `failuresBeforePause` failures in a
    /// row the tier rests for `pause`, then the next command starts a probe again; a
    /// probe's success closes the breaker.
    func perform<Result>(_ body: () throws(RedisFailure) -> Result) -> Result? {
        let (answering, startsProbe) = state.withLock { state -> (Bool, Bool) in
            if isAnswering(state) { return (true, false) }
            if let until = state.restingUntil, ContinuousClock.now < until { return (false, false) }
            guard !state.probing else { return (false, false) }
            state.probing = true
            return (false, true)
        }
        if startsProbe { Thread.detachNewThread { [self] in probe() } }
        guard answering else { return nil }
        do throws(RedisFailure) {
            let result = try body()
            state.withLock { $0.failuresInARow = 0 }
            return result
        } catch {
            _ = failed(error, probing: false)
            return nil
        }
    }

    /// Asks the server until it answers or the tier rests.
    private func probe() {
        while true {
            do throws(RedisFailure) {
                _ = try client.run([redisCommand("PING")], slotKey: Data(runKey.utf8))
                state.withLock { state in
                    state.failuresInARow = 0
                    state.restingUntil = nil
                    state.probing = false
                }
                return
            } catch {
                guard failed(error, probing: true) else { return }
            }
        }
    }

    /// Counts a failure and opens the breaker when it is due; true when a probe that
    /// failed should ask again.
    private func failed(_ failure: RedisFailure, probing: Bool) -> Bool {
        let refused: Bool
        if case .refused = failure { refused = true } else { refused = false }
        let (again, warning) = state.withLock { state -> (Bool, String?) in
            state.counters.failures += 1
            state.failuresInARow += 1
            // A refusal will not mend by asking again: the tier rests at once; so it
            // does when the probe after a pause fails.
            let pauseOver = probing && state.restingUntil != nil
            guard refused || pauseOver || state.failuresInARow >= configuration.failuresBeforePause else { return (probing, nil) }
            if probing { state.probing = false }
            if state.restingUntil == nil || pauseOver { state.counters.pauses += 1 }
            state.restingUntil = ContinuousClock.now + .seconds(configuration.pause)
            let kind = refused ? "refused" : "unavailable"
            guard state.warned.insert(kind).inserted else { return (false, nil) }
            return (false, refused
                ? "the shared cache (Redis) refused this client: \(failure); loads go on without it"
                : "the shared cache (Redis) is not answering (\(failure)); loads go on without it, and it is tried again every \(configuration.pause.formatted()) s")
        }
        if !refused { client.reset() }
        if let warning {
            if let handler = configuration.warningHandler {
                handler(warning)
            } else {
                FileHandle.standardError.write(Data("imago: warning: \(warning)\n".utf8))
            }
        }
        return again
    }
}
