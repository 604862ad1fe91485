#if os(Linux)
import Foundation

/// Placeholder until the real decoder lands.
public struct GIFDecoder: ImageDecoding {
    public init() {}
    public func canDecode(_ data: Data, format: ImageFormat?) -> Bool { false }
    public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
        throw .unsupportedFormat(nil)
    }
}
#endif
