import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite("DiskIndex")
struct DiskIndexTests {
    @Test func totalsFollowDiskAndPendingSizes() {
        var index = DiskIndex()
        index.insertNewest("a", diskSize: 100, pendingSize: 0, lastUse: 1)
        index.insertNewest("b", diskSize: 0, pendingSize: 50, lastUse: 2)
        #expect(index.totalSize == 150 && index.count == 2)
        // A new version of a: old file and new record both count until the write lands.
        index.setPendingSize("a", 70)
        #expect(index.totalSize == 220)
        index.setDiskSize("a", 70)
        index.setPendingSize("a", 0)
        #expect(index.totalSize == 120)
        #expect(index["a"] == DiskIndex.Entry(diskSize: 70, pendingSize: 0, lastUse: 1, sequence: 1))
        #expect(index.remove("b")?.pendingSize == 50)
        #expect(index.remove("b") == nil)
        #expect(index.totalSize == 70 && index.count == 1)
        index.setDiskSize("absent", 10)  // names not indexed are ignored
        #expect(index.totalSize == 70)
    }

    @Test func evictionTakesTheLeastRecentlyUsedAndSparesTheKeptRecord() {
        var index = DiskIndex()
        for (n, name) in ["a", "b", "c", "d"].enumerated() {
            index.insertNewest(name, diskSize: 10, pendingSize: 0, lastUse: Double(n))
        }
        index.touch("a", at: 10)  // b is now the least recent
        var eviction = index.evict(toFit: 25, keeping: nil)
        #expect(eviction.evicted == ["b", "c"] && eviction.staleFile == nil)
        #expect(Set(index.names) == ["a", "d"] && index.totalSize == 20)

        // The record being stored is never evicted; over the limit on its own, its
        // older file goes instead.
        index.setPendingSize("d", 30)
        index.touch("d", at: 11)
        eviction = index.evict(toFit: 35, keeping: "d")
        #expect(eviction.evicted == ["a"] && eviction.staleFile == "d")
        #expect(index["d"] == DiskIndex.Entry(diskSize: 0, pendingSize: 30, lastUse: 11, sequence: 6))
        #expect(index.totalSize == 30)
        eviction = index.evict(toFit: 0, keeping: "d")
        #expect(eviction.evicted.isEmpty && eviction.staleFile == nil)
    }

    @Test func filesFoundOnDiskAreOrderedByLastUse() {
        var index = DiskIndex()
        index.insertNewest("used now", diskSize: 10, pendingSize: 0, lastUse: 50)
        index.insertFromDisk("old", size: 10, lastUse: 5)
        index.insertFromDisk("same time", size: 10, lastUse: 50)
        index.insertFromDisk("older", size: 10, lastUse: 1)
        index.noteLastUse("older", 20)
        index.reorderByLastUse()
        // At the same time, a record used in memory is more recent than one only seen on disk.
        #expect(index.evict(toFit: 0, keeping: nil).evicted == ["old", "older", "same time", "used now"])
        #expect(index.totalSize == 0 && index.count == 0)
    }
}
