import Imago

/// A placeholder sent with an image's URL as a hash, shown while the image loads: a
/// blurred sketch of it in a few dozen bytes (the `thumbhash` and `blurhash` fields
/// APIs such as Mastodon's and Unsplash's return).
///
/// Decoding makes a small bitmap (ThumbHash: at most 32 pixels on its long side, in
/// the image's aspect ratio; BlurHash: the size asked for); a view scales it up to
/// its frame, which blurs it further. Pass `image` as the placeholder of
/// `setImage(with:placeholder:options:)`, or draw `bitmap()` yourself.
public enum ImagePlaceholder: Sendable, Hashable {
    /// A ThumbHash in base64 (Evan Wallace's format): keeps the aspect ratio and alpha.
    case thumbHash(String)
    /// A BlurHash (Wolt's format), decoded at `size`: the hash has no aspect ratio of
    /// its own, so give the image's (32 × 32 by default).
    case blurHash(String, size: Size = Size(width: 32, height: 32))

    /// A BlurHash's decoded size in pixels; each side is clamped to 1...512.
    public struct Size: Sendable, Hashable {
        /// Width in pixels.
        public var width: Int
        /// Height in pixels.
        public var height: Int

        /// A size of `width` × `height` pixels.
        public init(width: Int, height: Int) {
            self.width = width
            self.height = height
        }
    }

    /// The placeholder's pixels; `ImagoError.invalidHash` when the hash is malformed.
    public func bitmap() throws(ImagoError) -> Bitmap {
        switch self {
        case .thumbHash(let hash): try ThumbHash.decode(base64: hash)
        case .blurHash(let hash, let size): try BlurHash.decode(hash, width: size.width, height: size.height)
        }
    }

    /// The placeholder as an image for the views (`setImage(with:placeholder:)`); nil
    /// when the hash is malformed, so that a bad hash shows no placeholder rather than
    /// failing the load.
    public var image: DecodedImage? {
        guard let bitmap = try? bitmap() else { return nil }
        return DecodedImage(bitmap: bitmap, format: .png)
    }
}
