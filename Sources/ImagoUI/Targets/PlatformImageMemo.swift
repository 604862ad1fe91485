import Foundation
import Imago

/// Toolkit images already drawn into Imago bitmaps, by the toolkit object's identity,
/// so that a bundled image shown again (`UIImage(named:)` hands out the same object
/// from its own cache) is not drawn again on the main thread. An entry holds its
/// toolkit image weakly and is found only while that very object lives; at most
/// `capacity` are kept, the least recently used going first, and memory pressure
/// empties the memo (what it holds is cheap to draw again).
@MainActor
final class PlatformImageMemo {
    private struct Entry {
        weak var source: AnyObject?
        let image: DecodedImage
        var lastUse: Int
    }

    /// How many drawn images are kept at most.
    let capacity: Int
    private var entries: [ObjectIdentifier: Entry] = [:]
    private var clock = 0
    private var subscription: MemoryPressureMonitor.Subscription?

    /// A memo of at most `capacity` images, emptied when `memoryPressure` reports.
    init(capacity: Int = 32, memoryPressure: MemoryPressureMonitor = .shared) {
        self.capacity = capacity
        subscription = memoryPressure.subscribe { [weak self] _ in
            if Thread.isMainThread {
                MainActor.assumeIsolated { self?.removeAll() }
            } else {
                Task { @MainActor in self?.removeAll() }
            }
        }
    }

    /// How many drawn images are kept.
    var count: Int { entries.count }

    /// The image drawn from `source` before, while `source` lives; else what `draw`
    /// makes of it, kept.
    func image(for source: AnyObject, draw: () -> DecodedImage?) -> DecodedImage? {
        let key = ObjectIdentifier(source)
        clock += 1
        if let entry = entries[key], entry.source === source {
            entries[key]?.lastUse = clock
            return entry.image
        }
        guard let image = draw() else { return nil }
        entries = entries.filter { $0.value.source != nil }
        while entries.count >= capacity, let oldest = entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            entries[oldest] = nil
        }
        entries[key] = Entry(source: source, image: image, lastUse: clock)
        return image
    }

    /// Lets go of every drawn image.
    func removeAll() {
        entries.removeAll()
    }
}
