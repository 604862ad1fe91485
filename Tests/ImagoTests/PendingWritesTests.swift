import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite("PendingWrites")
struct PendingWritesTests {
    private func add(_ writes: inout PendingWrites, _ name: String, size: Int) -> UInt64 {
        writes.add(name, key: "key of \(name)", data: Data(), metadata: Data(), bodyChecksum: nil, storedAt: 0, size: size)
    }

    @Test func aNewerStoreSupersedesTheQueuedWrite() {
        var writes = PendingWrites()
        let first = add(&writes, "a", size: 10)
        let second = add(&writes, "a", size: 30)
        #expect(writes.bytes == 30 && writes.records.count == 1)
        #expect(writes.beginWrite("a", generation: first) == nil)
        #expect(writes.writing == nil)
        #expect(writes.beginWrite("a", generation: second)?.size == 30)
        #expect(writes.endWrite() == false)
        #expect(writes.admits(size: 40, under: "a", limit: 40))
        #expect(!writes.admits(size: 40, under: "b", limit: 40))
    }

    @Test func discardingTheRecordBeingWrittenOrphansIt() {
        var writes = PendingWrites()
        let generation = add(&writes, "a", size: 10)
        _ = writes.beginWrite("a", generation: generation)
        writes.discard("a")
        #expect(writes.records.isEmpty && writes.bytes == 0)
        // One tombstone for the deletion, one the orphaned write releases itself.
        #expect(writes.isDeleting("a"))
        #expect(writes.isDeletedElsewhere("a"))
        writes.release("a")
        #expect(writes.isDeleting("a") && !writes.isDeletedElsewhere("a"))
        #expect(writes.endWrite() == true)
        writes.release("a")
        #expect(!writes.isDeleting("a"))
        writes.release("a")  // releasing a name not tombstoned is harmless
        #expect(!writes.isDeleting("a"))
    }

    @Test func removeAllForgetsEverythingAndOrphansTheWriteOnce() {
        var writes = PendingWrites()
        let generation = add(&writes, "a", size: 10)
        _ = add(&writes, "b", size: 5)
        _ = writes.beginWrite("a", generation: generation)
        writes.removeAll()
        writes.removeAll()
        #expect(writes.records.isEmpty && writes.bytes == 0)
        writes.release("a")
        #expect(!writes.isDeleting("a"))
        #expect(writes.endWrite() == true)
    }
}
