import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

@Suite("LRUList")
struct LRUListTests {
    private func keys(_ list: LRUList<String, Int>) -> [String] {
        list.slotsFromOldest.map { list.key(at: $0) }
    }

    @Test func insertionTouchAndRemovalKeepTheOrder() {
        var list = LRUList<String, Int>()
        for (n, key) in ["a", "b", "c", "d"].enumerated() { list.insertNewest(n, forKey: key) }
        #expect(keys(list) == ["a", "b", "c", "d"])
        list.moveToNewest(list.slot(for: "d")!)  // already the newest
        list.moveToNewest(list.slot(for: "b")!)
        #expect(keys(list) == ["a", "c", "d", "b"])
        #expect(list.key(at: list.oldest) == "a" && list.key(at: list.newest) == "b")
        #expect(list.remove(list.slot(for: "c")!) == 2)
        #expect(list.slot(for: "c") == nil)
        #expect(keys(list) == ["a", "d", "b"])
        #expect(list.remove(list.oldest) == 0)
        #expect(list.remove(list.newest) == 1)
        #expect(keys(list) == ["d"] && list.count == 1)
        #expect(list.checkInvariants() == nil)
    }

    @Test func freedSlotsAreReusedAndValuesMutable() {
        var list = LRUList<String, Int>()
        let first = list.insertNewest(1, forKey: "x")
        list.insertNewest(2, forKey: "y")
        _ = list.remove(first)
        let reused = list.insertNewest(3, forKey: "z")
        #expect(reused == first)
        list[reused] += 10
        #expect(list[list.slot(for: "z")!] == 13)
        #expect(keys(list) == ["y", "z"])
        #expect(list.checkInvariants() == nil)
        list.removeAll()
        #expect(list.count == 0 && list.oldest == -1 && list.newest == -1 && list.slotsFromOldest.isEmpty)
        list.insertNewest(4, forKey: "w")
        #expect(keys(list) == ["w"] && list.checkInvariants() == nil)
    }

    @Test func reorderFollowsTheValues() {
        var list = LRUList<String, Int>()
        for (key, value) in [("c", 30), ("a", 10), ("d", 40), ("b", 20)] { list.insertNewest(value, forKey: key) }
        _ = list.remove(list.slot(for: "d")!)
        list.reorder(by: <)
        #expect(keys(list) == ["a", "b", "c"])
        #expect(list.checkInvariants() == nil)
        list.insertNewest(0, forKey: "e")
        #expect(keys(list) == ["a", "b", "c", "e"])
    }

    /// Random operations against a plain array kept in recency order: few keys, many
    /// keys (the index growing and shrinking its runs), and keys whose hashes fall in
    /// three buckets (every look-up probing, every removal moving entries back).
    @Test(arguments: [(50, 5_000, 1), (3_000, 30_000, 97)])
    func agreesWithAnArrayModel(keys: Int, steps: Int, checkEvery: Int) {
        exercise(LRUList<Int, Int>(), keys: keys, steps: steps, checkEvery: checkEvery) { $0 }
    }

    @Test func agreesWithAnArrayModelWhenHashesCollide() {
        exercise(LRUList<Crowded, Int>(), keys: 200, steps: 10_000, checkEvery: 7) { Crowded(id: $0) }
    }

    private func exercise<Key: HashCarrying>(
        _ list: LRUList<Key, Int>, keys: Int, steps: Int, checkEvery: Int, key makeKey: (Int) -> Key
    ) {
        var list = list
        var model: [(key: Key, value: Int)] = []
        var generator = SystemRandomNumberGenerator()
        for step in 0..<steps {
            let key = makeKey(Int.random(in: 0..<keys, using: &generator))
            let position = model.firstIndex { $0.key == key }
            switch Int.random(in: 0..<4, using: &generator) {
            case 0:
                if let position {
                    #expect(list.remove(list.slot(for: key)!) == model.remove(at: position).value)
                } else {
                    #expect(list.slot(for: key) == nil)
                }
            case 1:
                if let position {
                    list.moveToNewest(list.slot(for: key)!)
                    model.append(model.remove(at: position))
                }
            default:
                if let position {
                    _ = list.remove(list.slot(for: key)!)
                    model.remove(at: position)
                }
                list.insertNewest(step, forKey: key)
                model.append((key, step))
            }
            guard step % checkEvery == 0 || step == steps - 1 else { continue }
            #expect(list.slotsFromOldest.map { list.key(at: $0) } == model.map(\.key))
            #expect(list.slotsFromOldest.map { list[$0] } == model.map(\.value))
            #expect(list.checkInvariants() == nil)
            for entry in model.prefix(20) { #expect(list[list.slot(for: entry.key)!] == entry.value) }
        }
        #expect(list.count == model.count)
    }
}

extension Int: HashCarrying {
    public var carriedHash: Int { hashValue }
}

/// A key whose hash falls in one of three buckets, whatever the key.
private struct Crowded: HashCarrying {
    let id: Int
    var carriedHash: Int { id % 3 }
}
