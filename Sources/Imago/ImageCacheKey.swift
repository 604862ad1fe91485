/// Names one decoded image: which resource, at what size, with what processing.
///
/// A key is made of its parts, never of a joined string, so no choice of URL or
/// processor identifier can make two different images share a key: a full-size
/// request for `http://h/a.jpg#fit-256x256` is not the 256 px thumbnail of
/// `http://h/a.jpg`. The memory cache stores images under it, identical requests in
/// flight share its work, and the disk tier names processed variants from it.
public struct ImageCacheKey: Hashable, HashCarrying, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The resource: the request's URL as an absolute string, or the key given in its
    /// place (`ImageRequest.imageKey`).
    public let imageKey: String
    /// The size decoded to; nil for full size.
    public let targetSize: TargetSize?
    /// The identifiers of the processors applied after decoding, in order; empty for
    /// none.
    public let processing: [String]
    /// The parts' hash, computed once: a key is hashed by every table it passes
    /// through (memory cache, stages in flight), and a hash table rehashes its
    /// neighbours' keys when it removes one.
    private let hash: Int

    /// The key of `imageKey` at `targetSize` with `processing`.
    public init(imageKey: String, targetSize: TargetSize? = nil, processing: [String] = []) {
        self.imageKey = imageKey
        self.targetSize = targetSize
        self.processing = processing
        var hasher = Hasher()
        hasher.combine(imageKey)
        hasher.combine(targetSize)
        hasher.combine(processing)
        hash = hasher.finalize()
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(hash)
    }

    public static func == (lhs: ImageCacheKey, rhs: ImageCacheKey) -> Bool {
        lhs.hash == rhs.hash && lhs.imageKey == rhs.imageKey && lhs.targetSize == rhs.targetSize
            && lhs.processing == rhs.processing
    }

    /// The key of `imageKey` at `targetSize` after `processors`.
    package init(imageKey: String, targetSize: TargetSize?, processors: [any ImageProcessing]) {
        self.init(imageKey: imageKey, targetSize: targetSize, processing: processors.map(\.identifier))
    }

    /// The hash made with the key: the memory tier's index places the key by it.
    var carriedHash: Int { hash }

    /// The key of a full-size, unprocessed image: `"https://example.com/a.jpg"`.
    public init(stringLiteral imageKey: String) {
        self.init(imageKey: imageKey)
    }

    /// Whether the image is the resource as it decodes, at full size and unprocessed.
    var isOriginal: Bool { targetSize == nil && processing.isEmpty }

    /// The same resource and size without the processing: what processors start from.
    var decodedKey: ImageCacheKey { ImageCacheKey(imageKey: imageKey, targetSize: targetSize) }

    /// A readable form for logs and errors; not unambiguous, and never used as a key.
    public var description: String {
        var text = imageKey
        if let targetSize { text += " @ \(targetSize)" }
        if !processing.isEmpty { text += " + " + processing.joined(separator: " + ") }
        return text
    }

    /// The record name of the processed image in the disk and shared tiers: each part
    /// length-prefixed, so
    /// that the string maps back to exactly one key, and apart from the originals'
    /// names (`originalRecordName`), which start with another letter.
    var variantRecordName: String {
        var name = "v" + Self.field(imageKey) + Self.field(targetSize?.description ?? "")
        name += "\(processing.count):"
        for identifier in processing { name += Self.field(identifier) }
        return name
    }

    /// The record name of the original bytes of `imageKey` in the disk and shared tiers.
    static func originalRecordName(_ imageKey: String) -> String { "o" + field(imageKey) }

    private static func field(_ text: String) -> String { "\(text.utf8.count):" + text }
}
