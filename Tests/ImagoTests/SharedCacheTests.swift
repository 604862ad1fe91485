#if canImport(CHiredis)
import Foundation
import Synchronization
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The shared tier against real redis-server processes on free loopback ports:
/// records, leases, the size cap, foreign and damaged values, and faults (a server
/// killed, hung, restarted, full, or refusing the password).
@Suite struct SharedCacheTests {
    private static let metadata = Data("metadata".utf8)

    private func tier(
        _ urls: [URL], namespace: String = "imago-test", _ change: (inout SharedCache.Configuration) -> Void = { _ in }
    ) throws -> SharedCache {
        var configuration = SharedCache.Configuration(servers: urls, namespace: namespace)
        // Generous on a loaded 2-core machine; the fault tests set their own.
        configuration.connectTimeout = 2
        configuration.commandTimeout = 5
        change(&configuration)
        return try SharedCache(configuration: configuration)
    }

    private func body(_ pattern: Int, count: Int = 4096) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ pattern) })
    }

    private func hit(_ lookup: SharedCache.Lookup) -> DiskCache.Record? {
        if case .hit(let record, _) = lookup { return record }
        return nil
    }

    private func isMiss(_ lookup: SharedCache.Lookup) -> Bool {
        if case .miss = lookup { return true }
        return false
    }

    @Test func redisURLsAreReadWithTheirCredentialsAndDatabase() throws {
        let full = try #require(RedisAddress(URL(string: "redis://fleet:s%40cret@10.0.0.5:7000/3")!))
        #expect(full.host == "10.0.0.5" && full.port == 7000 && full.user == "fleet" && full.password == "s@cret" && full.database == 3)
        let passwordOnly = try #require(RedisAddress(URL(string: "redis://:secret@cache")!))
        #expect(passwordOnly.user == nil && passwordOnly.password == "secret" && passwordOnly.port == 6379 && passwordOnly.database == 0)
        for bad in ["http://host:6379", "redis://", "redis://host:6379/db", "redis://host:6379?x=1", "redis://host:0"] {
            #expect(URL(string: bad).flatMap(RedisAddress.init) == nil, "\(bad)")
        }
        #expect(try SharedCache.Configuration.servers(fromList: "redis://a:7000, redis://b:7001").count == 2)
        #expect(throws: ImagoError.self) { try SharedCache.Configuration.servers(fromList: "redis://a:7000,b:7001") }
        #expect(throws: ImagoError.self) { try SharedCache.Configuration.servers(fromList: ",") }
    }

    @Test func storedRecordsAreReadBackUnderTheirNameOnly() throws {
        let server = try RedisServer()
        let cache = try tier([server.url])
        cache.store(body(1), metadata: Self.metadata, named: "o1", imageKey: "http://h/a.jpg", lifetime: 60)
        cache.store(body(2), metadata: Self.metadata, named: "v1", imageKey: "http://h/a.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        let original = try #require(hit(cache.record(named: "o1", imageKey: "http://h/a.jpg")))
        #expect(original.data == body(1))
        #expect(original.metadata == Self.metadata)
        #expect(hit(cache.record(named: "v1", imageKey: "http://h/a.jpg"))?.data == body(2))
        #expect(isMiss(cache.record(named: "o1", imageKey: "http://h/b.jpg")))
        #expect(cache.counters.hits == 2 && cache.counters.misses == 1 && cache.counters.stored == 2)
        // The time to live follows the lifetime given.
        let ttl = try server.run(redisCommand("PTTL", cache.valueKey("o1", imageKey: "http://h/a.jpg"))).integer ?? -1
        #expect(ttl > 0 && ttl <= 60_000)
        // An original and its variants share a cluster slot, through their hash tag.
        let slots = Set(["o1", "v1", "v2"].map { RedisClient.slot(of: Data(cache.valueKey($0, imageKey: "http://h/a.jpg").utf8)) })
        #expect(slots.count == 1)
        #expect(RedisClient.slot(of: Data(cache.leaseKey("http://h/a.jpg").utf8)) == slots.first)
        // CRC-16/XMODEM's check value, as Redis Cluster hashes keys.
        #expect(RedisClient.slot(of: Data("123456789".utf8)) == 0x31C3)
    }

    @Test func valuesOfAnotherNamespaceOrKeyAreNeverServed() throws {
        let server = try RedisServer()
        let ours = try tier([server.url], namespace: "fleet-a")
        let theirs = try tier([server.url], namespace: "fleet-b")
        // Names as the pipeline gives them: the disk tier's, which hold the image key.
        let x = ImageCacheKey.originalRecordName("http://h/x.jpg"), y = ImageCacheKey.originalRecordName("http://h/y.jpg")
        theirs.store(body(3), metadata: Self.metadata, named: x, imageKey: "http://h/x.jpg", lifetime: 60)
        ours.store(body(4), metadata: Self.metadata, named: y, imageKey: "http://h/y.jpg", lifetime: 60)
        #expect(theirs.writesEnded(within: 60) && ours.writesEnded(within: 60))
        #expect(isMiss(ours.record(named: x, imageKey: "http://h/x.jpg")))
        // Their value copied under our key for the same image: its record names the
        // other namespace.
        let theirValue = try #require(try server.run(redisCommand("GET", theirs.valueKey(x, imageKey: "http://h/x.jpg"))).data)
        try server.run(redisCommand("SET", ours.valueKey(x, imageKey: "http://h/x.jpg")) + [theirValue])
        #expect(isMiss(ours.record(named: x, imageKey: "http://h/x.jpg")))
        // Our own value of another image copied under this one's key.
        let otherValue = try #require(try server.run(redisCommand("GET", ours.valueKey(y, imageKey: "http://h/y.jpg"))).data)
        try server.run(redisCommand("SET", ours.valueKey(x, imageKey: "http://h/x.jpg")) + [otherValue])
        #expect(isMiss(ours.record(named: x, imageKey: "http://h/x.jpg")))
        #expect(ours.counters.rejected == 2)
        #expect(hit(ours.record(named: y, imageKey: "http://h/y.jpg"))?.data == body(4))
    }

    @Test func aDamagedValueIsRejectedAndDeleted() throws {
        let server = try RedisServer()
        let cache = try tier([server.url])
        cache.store(body(5), metadata: Self.metadata, named: "o", imageKey: "http://h/d.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        let key = cache.valueKey("o", imageKey: "http://h/d.jpg")
        try server.run(redisCommand("SETRANGE", key, "200", "damage"))
        #expect(isMiss(cache.record(named: "o", imageKey: "http://h/d.jpg")))
        #expect(cache.counters.rejected == 1)
        #expect(cache.writesEnded(within: 60))
        #expect(try server.run(redisCommand("EXISTS", key)).integer == 0)
        // Cut short: rejected too.
        cache.store(body(5), metadata: Self.metadata, named: "o", imageKey: "http://h/d.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        let whole = try #require(try server.run(redisCommand("GET", key)).data)
        try server.run(redisCommand("SET", key) + [whole.prefix(whole.count - 10)])
        #expect(isMiss(cache.record(named: "o", imageKey: "http://h/d.jpg")))
    }

    @Test func valuesOverTheCapAreNeverStoredOrRead() throws {
        let server = try RedisServer()
        let cache = try tier([server.url]) { $0.maximumValueSize = 64 << 10 }
        cache.store(body(6, count: 100 << 10), metadata: Self.metadata, named: "o", imageKey: "http://h/big.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        #expect(cache.counters.writesDropped == 1 && cache.counters.stored == 0)
        let key = cache.valueKey("o", imageKey: "http://h/big.jpg")
        #expect(try server.run(redisCommand("EXISTS", key)).integer == 0)
        // A valid record over the cap put there by another writer is not read whole.
        let record = RecordFormat.encode(key: cache.recordKey("o"), metadata: Self.metadata, body: body(6, count: 100 << 10), storedAt: 0)
        try server.run(redisCommand("SET", key) + [record])
        #expect(isMiss(cache.record(named: "o", imageKey: "http://h/big.jpg")))
        #expect(cache.counters.rejected == 1)
    }

    @Test func oneLeaseHolderAndTheOthersWaitForItsValue() async throws {
        let server = try RedisServer()
        let first = try tier([server.url])
        let second = try tier([server.url])
        guard case .taken(let lease) = first.takeLease(imageKey: "http://h/l.jpg") else {
            Issue.record("the first lease was not taken")
            return
        }
        guard case .held = second.takeLease(imageKey: "http://h/l.jpg") else {
            Issue.record("a second process took a lease already held")
            return
        }
        let waiter = Task { await second.waitForRecord(named: "o", imageKey: "http://h/l.jpg") }
        try await Task.sleep(for: .milliseconds(100))
        first.store(body(7), metadata: Self.metadata, named: "o", imageKey: "http://h/l.jpg", lifetime: 60, releasing: lease)
        guard case .found(let record, _) = await waiter.value else {
            Issue.record("the waiter did not get the value")
            return
        }
        #expect(record.data == body(7))
        #expect(try server.run(redisCommand("EXISTS", first.leaseKey("http://h/l.jpg"))).integer == 0)
    }

    @Test func aLeaseWhoseHolderDiedExpires() async throws {
        let server = try RedisServer()
        let dead = try tier([server.url]) { $0.leaseDuration = 0.3 }
        let waiting = try tier([server.url])
        guard case .taken = dead.takeLease(imageKey: "http://h/e.jpg") else {
            Issue.record("the lease was not taken")
            return
        }
        guard case .taken = await waiting.waitForRecord(named: "o", imageKey: "http://h/e.jpg") else {
            Issue.record("the expired lease was not taken over")
            return
        }
        #expect(waiting.counters.leaseWaitsExpired == 1)
    }

    @Test func aLeaseThatExpiredUnderItsHolderIsCountedLost() async throws {
        let server = try RedisServer()
        let slow = try tier([server.url]) { $0.leaseDuration = 0.3 }
        func lease(_ imageKey: String) -> SharedCache.Lease? {
            if case .taken(let lease) = slow.takeLease(imageKey: imageKey) { return lease }
            Issue.record("the lease on \(imageKey) was not taken")
            return nil
        }
        // Stored and given back in time: not lost.
        let quick = try #require(lease("http://h/q.jpg"))
        slow.store(body(1), metadata: Data("m".utf8), named: "o", imageKey: "http://h/q.jpg", lifetime: 60, releasing: quick)
        #expect(slow.writesEnded(within: 10))
        #expect(slow.counters.leasesLost == 0)
        // Stored after the lease ran out, and given back without a value after it ran
        // out: both lost, whoever took the key since.
        let late = try #require(lease("http://h/s.jpg")), failed = try #require(lease("http://h/f.jpg"))
        try await Task.sleep(for: .milliseconds(600))
        #expect(try server.run(redisCommand("EXISTS", slow.leaseKey("http://h/s.jpg"))).integer == 0)
        slow.store(body(2), metadata: Data("m".utf8), named: "o", imageKey: "http://h/s.jpg", lifetime: 60, releasing: late)
        slow.release(failed)
        #expect(slow.writesEnded(within: 10))
        #expect(slow.counters.leasesLost == 2)
        #expect(slow.counters.stored == 2)
    }

    @Test func aKilledServerPausesTheTierAndARestartedOneIsUsedAgain() async throws {
        let server = try RedisServer()
        let warnings = Mutex<[String]>([])
        let cache = try tier([server.url]) {
            $0.connectTimeout = 0.2
            $0.commandTimeout = 0.5
            $0.pause = 0.5
            $0.warningHandler = { message in warnings.withLock { $0.append(message) } }
        }
        cache.store(body(8), metadata: Self.metadata, named: "o", imageKey: "http://h/k.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        #expect(hit(cache.record(named: "o", imageKey: "http://h/k.jpg")) != nil)
        server.killAndWait()
        for _ in 0..<10 {
            guard case .unavailable = cache.record(named: "o", imageKey: "http://h/k.jpg") else {
                Issue.record("a killed server answered")
                return
            }
        }
        // One failed look-up, then a probe asking until the breaker opens after the
        // third failure, and says so once: the other look-ups never asked.
        await waitUntil("the breaker opened and warned") { cache.counters.pauses == 1 && warnings.withLock { $0.count } == 1 }
        #expect(cache.counters.failures == 3)
        #expect(cache.counters.pauses == 1)
        try server.start()
        var answered = false
        for _ in 0..<600 where !answered {
            usleep(50_000)
            if case .miss = cache.record(named: "o", imageKey: "http://h/k.jpg") { answered = true }
        }
        #expect(answered)
        cache.store(body(9), metadata: Self.metadata, named: "o", imageKey: "http://h/k.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        #expect(hit(cache.record(named: "o", imageKey: "http://h/k.jpg"))?.data == body(9))
        #expect(warnings.withLock { $0.count } == 1)
    }

    @Test func aHungServerCostsOneCommandTimeoutThenTheBreakerOpens() async throws {
        let server = try RedisServer()
        let cache = try tier([server.url]) {
            $0.connectTimeout = 0.2
            $0.commandTimeout = 1
            $0.pause = 0.5
            $0.warningHandler = { _ in }
        }
        #expect(isMiss(cache.record(named: "o", imageKey: "http://h/s.jpg")))
        server.send(SIGSTOP)
        defer { server.send(SIGCONT) }
        let clock = ContinuousClock()
        let start = clock.now
        if case .unavailable = cache.record(named: "o", imageKey: "http://h/s.jpg") {} else { Issue.record("a hung server answered") }
        // A hang guard: without the command timeout the look-up never returns.
        #expect(clock.now - start < .seconds(30))
        #expect(cache.counters.failures == 1)
        // Eight look-ups at once go on without the tier while a probe asks the server;
        // before, each waited a command timeout of its own.
        let group = DispatchGroup()
        for index in 0..<8 {
            group.enter()
            Thread {
                if case .unavailable = cache.record(named: "o", imageKey: "http://h/s\(index).jpg") {} else { Issue.record("a hung server answered") }
                group.leave()
            }.start()
        }
        #expect(group.wait(timeout: .now() + 60) == .success)
        await waitUntil("the breaker opened") { cache.counters.pauses >= 1 }
        #expect(cache.counters.failures <= 3)
        server.send(SIGCONT)
        var answered = false
        for _ in 0..<600 where !answered {
            usleep(50_000)
            if case .miss = cache.record(named: "o", imageKey: "http://h/s.jpg") { answered = true }
        }
        #expect(answered)
    }

    @Test func aWrongPasswordGivesOneWarningAndTheRightOneOrAnACLUserWorks() throws {
        let server = try RedisServer(options: ["--requirepass", "right"])
        let warnings = Mutex<[String]>([])
        let wrong = try tier([URL(string: "redis://:wrong@127.0.0.1:\(server.port)")!]) {
            $0.pause = 0.05
            $0.warningHandler = { message in warnings.withLock { $0.append(message) } }
        }
        for index in 0..<20 {
            if case .unavailable = wrong.record(named: "o", imageKey: "http://h/\(index).jpg") {} else { Issue.record("served without the password") }
            usleep(10_000)
        }
        let told = warnings.withLock { $0 }
        #expect(told.count == 1)
        #expect(told.first?.contains("WRONGPASS") == true)
        let right = try tier([URL(string: "redis://:right@127.0.0.1:\(server.port)")!])
        #expect(isMiss(right.record(named: "o", imageKey: "http://h/0.jpg")))
        try server.run(redisCommand("ACL", "SETUSER", "fleet", "on", ">secret", "~imago-test:*", "+@all"), password: "right")
        let user = try tier([URL(string: "redis://fleet:secret@127.0.0.1:\(server.port)")!])
        user.store(body(10), metadata: Self.metadata, named: "o", imageKey: "http://h/u.jpg", lifetime: 60)
        #expect(user.writesEnded(within: 60))
        #expect(hit(user.record(named: "o", imageKey: "http://h/u.jpg"))?.data == body(10))
        #expect(user.counters.failures == 0)
    }

    @Test func evictionsUnderMaxmemoryNeverFail() throws {
        let server = try RedisServer(options: ["--maxmemory", "1mb", "--maxmemory-policy", "allkeys-lru"])
        let cache = try tier([server.url])
        for index in 0..<200 {
            cache.store(body(index, count: 20 << 10), metadata: Self.metadata, named: "o", imageKey: "http://h/\(index).jpg", lifetime: 60)
        }
        #expect(cache.writesEnded(within: 60))
        var hits = 0
        for index in 0..<200 {
            switch cache.record(named: "o", imageKey: "http://h/\(index).jpg") {
            case .hit(let record, _):
                #expect(record.data == body(index, count: 20 << 10))
                hits += 1
            case .miss: break
            case .unavailable: Issue.record("a full Redis failed a look-up")
            }
        }
        #expect(hits > 0 && hits < 200)
        // A write Redis had no room for is dropped and counted, not a failure.
        #expect(cache.counters.stored + cache.counters.writesDropped == 200)
        #expect(cache.counters.failures == 0)
    }

    /// A full Redis that refuses writes (`noeviction`) refuses a lease with an error:
    /// no other machine holds it, and the miss goes to the origin at once instead of
    /// waiting out the lease for every image.
    @Test func aFullRedisRefusingWritesHoldsNoLease() throws {
        let server = try RedisServer(options: ["--maxmemory", "1mb", "--maxmemory-policy", "noeviction"])
        // Filled to its limit by another program sharing it: large values, then small
        // ones, until even a small one is refused.
        var refused = false
        for index in 0..<5000 where !refused {
            let size = index < 400 ? 20 << 10 : 16
            if case .error(let message) = try server.run(redisCommand("SET", "filler-\(index)", String(repeating: "x", count: size))) {
                refused = message.hasPrefix("OOM") && size == 16
            }
        }
        #expect(refused)
        let cache = try tier([server.url])
        let lease = cache.takeLease(imageKey: "http://h/full.jpg")
        guard case .unavailable = lease else {
            Issue.record("a refused lease was taken for one another machine holds: \(lease)")
            return
        }
        let claimed = cache.claim(named: "o", imageKey: "http://h/full.jpg")
        guard case .unavailable = claimed else {
            Issue.record("a refused claim was taken for one another machine holds: \(claimed)")
            return
        }
    }

    /// A value of another type under an image's key (a list another program put
    /// there) is no failure of the server: it is rejected and deleted as a damaged
    /// value is, the look-up a miss, and the tier goes on answering.
    @Test func aValueOfAnotherTypeIsRejectedAndDeleted() throws {
        let server = try RedisServer()
        let cache = try tier([server.url])
        let key = cache.valueKey("o", imageKey: "http://h/list.jpg")
        _ = try server.run(redisCommand("RPUSH", key, "not", "an", "image"))
        #expect(isMiss(cache.record(named: "o", imageKey: "http://h/list.jpg")))
        #expect(cache.counters.rejected == 1 && cache.counters.failures == 0)
        #expect(try server.run(redisCommand("EXISTS", key)).integer == 0)
        // Still answering: a stored record is found.
        cache.store(body(3), metadata: Self.metadata, named: "o", imageKey: "http://h/list.jpg", lifetime: 60)
        #expect(cache.writesEnded(within: 60))
        #expect(hit(cache.record(named: "o", imageKey: "http://h/list.jpg"))?.data == body(3))
    }

    @Test func aClusterSpreadsImagesOverItsMastersAndFollowsAReshard() async throws {
        let cluster = try RedisCluster()
        let cache = try tier([cluster.urls[0]])
        let images = (0..<90).map { "http://h/cluster-\($0).jpg" }
        for (index, image) in images.enumerated() {
            cache.store(body(index), metadata: Self.metadata, named: "o", imageKey: image, lifetime: 600)
        }
        #expect(cache.writesEnded(within: 60))
        for master in cluster.masters {
            #expect((try master.run(redisCommand("DBSIZE")).integer ?? 0) > 0)
        }
        #expect(try cache.statistics().keys == images.count)
        // Loads go on while an operator moves a third of the slots.
        let moved = Atomic(false)
        let mover = Task.detached {
            defer { moved.store(true, ordering: .releasing) }
            return try cluster.reshard(slots: 3000, from: cluster.masters[0], to: cluster.masters[1])
        }
        var rounds = 0
        var wrong = 0
        repeat {
            for (index, image) in images.enumerated() {
                if hit(cache.record(named: "o", imageKey: image))?.data != body(index) { wrong += 1 }
            }
            rounds += 1
        } while rounds < 200 && (rounds < 3 || !moved.load(ordering: .acquiring))
        let result = try await mover.value
        #expect(result.status == 0, "\(result.output)")
        #expect(wrong == 0)
        for (index, image) in images.enumerated() {
            #expect(hit(cache.record(named: "o", imageKey: image))?.data == body(index))
        }
        #expect(cache.counters.failures == 0)
    }
}
#endif
