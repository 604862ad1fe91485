import Foundation

/// Turns a bitmap into the bytes of an image file.
public protocol ImageEncoding: Sendable {
    /// The format this encoder writes.
    var format: ImageFormat { get }
    /// Encodes `bitmap`; throws only `ImagoError.encodingFailed`.
    func encode(_ bitmap: Bitmap) throws(ImagoError) -> Data
}

extension Bitmap {
    /// The pixels with alpha divided out again, tightly packed: what file formats
    /// store. Without `alpha`, three bytes a pixel (RGB), for opaque images.
    public func straightAlphaPixels(alpha: Bool = true) -> [UInt8] {
        let channels = alpha ? 4 : 3
        let count = width * height * channels
        return [UInt8](unsafeUninitializedCapacity: count) { out, initialized in
            pixels.withUnsafeBufferPointer { source in
                var d = 0
                for y in 0..<height {
                    var s = y * bytesPerRow
                    for _ in 0..<width {
                        let a = UInt32(source[s + 3])
                        for c in 0..<3 {
                            let v = UInt32(source[s + c])
                            out[d + c] = a == 255 || a == 0 ? UInt8(v) : UInt8(min(255, (v * 255 + a / 2) / a))
                        }
                        if alpha { out[d + 3] = UInt8(a) }
                        s += 4
                        d += channels
                    }
                }
            }
            initialized = count
        }
    }
}
