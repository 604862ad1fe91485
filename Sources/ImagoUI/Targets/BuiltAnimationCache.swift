import Imago

/// Toolkit images built from animations, kept so that showing an animation again
/// costs a look-up instead of decoding and copying every frame again on the main actor.
///
/// An animation shown again (a cell scrolled back, a memory-cache hit) is the same
/// `DecodedImage.AnimatedFrames` object, so its build is found by that object's identity and the
/// scale it was built at. An entry holds its source weakly and is found only while
/// that very object lives: a new animation allocated where a dead one was is not
/// mistaken for it, and entries whose animation is gone are dropped. Entries are
/// charged the bytes of all their frames; beyond `capacity` the least recently used
/// go first, and an animation larger than `capacity` is built but not kept. A still
/// image costs one wrap of its pixels and is never kept.
@MainActor
final class BuiltAnimationCache<Built: AnyObject> {
    private struct Key: Hashable {
        let source: ObjectIdentifier
        let scale: Double
    }

    private struct Entry {
        weak var source: DecodedImage.AnimatedFrames?
        let built: Built
        let cost: Int
        var lastUse: Int
    }

    /// The most bytes of frames kept.
    let capacity: Int
    /// The bytes of frames kept now.
    private(set) var cost = 0
    private var entries: [Key: Entry] = [:]
    private var clock = 0

    /// A cache keeping at most `capacity` bytes of frames.
    init(capacity: Int) {
        self.capacity = capacity
    }

    /// How many builds are kept.
    var count: Int { entries.count }

    /// The toolkit image of `image` at `scale`: the one kept if this animation was
    /// built at this scale before, else what `build` makes (kept when it is an
    /// animation).
    func image(for image: DecodedImage, scale: Double, build: () -> Built?) -> Built? {
        guard let animation = image.animation else { return build() }
        let key = Key(source: ObjectIdentifier(animation), scale: scale)
        clock += 1
        if let entry = entries[key] {
            if entry.source === animation {
                entries[key]?.lastUse = clock
                return entry.built
            }
            remove(key)
        }
        guard let built = build() else { return nil }
        for (key, entry) in entries where entry.source == nil { remove(key) }
        let cost = animation.width * animation.height * 4 * animation.frameCount
        guard cost <= capacity else { return built }
        while self.cost + cost > capacity,
              let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            remove(oldest)
        }
        entries[key] = Entry(source: animation, built: built, cost: cost, lastUse: clock)
        self.cost += cost
        return built
    }

    private func remove(_ key: Key) {
        if let entry = entries.removeValue(forKey: key) { cost -= entry.cost }
    }
}
