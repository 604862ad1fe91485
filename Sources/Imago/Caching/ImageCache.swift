import Foundation
import Synchronization

/// A memory cache of decoded images, as the loader uses it: the seeds' `cache`.
///
/// Conform to plug in another cache; `ImageCache` is the built-in one.
public protocol ImageCaching: AnyObject, Sendable {
    /// The image stored under `key`, if any; must be quick and never wait on a load.
    func image(forKey key: String) -> DecodedImage?
    /// Stores `image` under `key`, replacing what was there.
    func setImage(_ image: DecodedImage, forKey key: String)
    /// Removes the image under `key`.
    func removeImage(forKey key: String)
    /// Removes every image.
    func removeAll()
}

/// The memory tier: least-recently-used eviction under a cost limit (bytes of decoded
/// pixels) and a count limit, O(1) look-up and insertion under one short lock.
public final class ImageCache: ImageCaching {
    /// The cache the loader uses unless told otherwise.
    public static let shared = ImageCache()

    /// A fifth of physical memory, at most 512 MiB: room for a few screens of
    /// full-size photos on a phone, while leaving most memory to the app; on a server
    /// the cap keeps a cache from crowding out the work itself.
    public static var defaultCostLimit: Int {
        min(Int(clamping: ProcessInfo.processInfo.physicalMemory / 5), 512 << 20)
    }

    private final class Node {
        let key: String
        var image: DecodedImage
        var cost: Int
        var newer: Node?
        weak var older: Node?
        init(key: String, image: DecodedImage, cost: Int) {
            self.key = key
            self.image = image
            self.cost = cost
        }
    }

    private struct State {
        var nodes: [String: Node] = [:]
        /// Most recently used; `older` links lead to the least recent.
        var newest: Node?
        var oldest: Node?
        var totalCost = 0
    }

    private let state = Mutex(State())
    /// The most bytes of pixels kept.
    public let costLimit: Int
    /// The most images kept.
    public let countLimit: Int

    /// Makes a cache with the given limits.
    public init(costLimit: Int = ImageCache.defaultCostLimit, countLimit: Int = 10_000) {
        self.costLimit = costLimit
        self.countLimit = countLimit
    }

    /// How many images are stored.
    public var count: Int { state.withLock { $0.nodes.count } }
    /// Bytes of pixels stored.
    public var totalCost: Int { state.withLock { $0.totalCost } }

    public func image(forKey key: String) -> DecodedImage? {
        state.withLock { state in
            guard let node = state.nodes[key] else { return nil }
            Self.moveToNewest(node, in: &state)
            return node.image
        }
    }

    public func setImage(_ image: DecodedImage, forKey key: String) {
        let cost = image.cost
        // An image bigger than the whole cache would only flush everything else.
        guard cost <= costLimit else { return }
        state.withLock { state in
            if let node = state.nodes[key] {
                state.totalCost += cost - node.cost
                node.image = image
                node.cost = cost
                Self.moveToNewest(node, in: &state)
            } else {
                let node = Node(key: key, image: image, cost: cost)
                state.nodes[key] = node
                state.totalCost += cost
                Self.insertNewest(node, in: &state)
            }
            while state.totalCost > costLimit || state.nodes.count > countLimit, let oldest = state.oldest {
                Self.remove(oldest, from: &state)
            }
        }
    }

    public func removeImage(forKey key: String) {
        state.withLock { state in
            if let node = state.nodes[key] { Self.remove(node, from: &state) }
        }
    }

    public func removeAll() {
        state.withLock { $0 = State() }
    }

    private static func insertNewest(_ node: Node, in state: inout State) {
        node.older = state.newest
        node.newer = nil
        state.newest?.newer = node
        state.newest = node
        if state.oldest == nil { state.oldest = node }
    }

    private static func unlink(_ node: Node, in state: inout State) {
        node.newer?.older = node.older
        node.older?.newer = node.newer
        if state.newest === node { state.newest = node.older }
        if state.oldest === node { state.oldest = node.newer }
        node.newer = nil
        node.older = nil
    }

    private static func moveToNewest(_ node: Node, in state: inout State) {
        guard state.newest !== node else { return }
        unlink(node, in: &state)
        insertNewest(node, in: &state)
    }

    private static func remove(_ node: Node, from state: inout State) {
        unlink(node, in: &state)
        state.nodes[node.key] = nil
        state.totalCost -= node.cost
    }
}
