import Foundation

extension ImageLoaderConfiguration {
    /// A stored variant's image: the compact lossless form, or PNG or JPEG as earlier
    /// versions kept them; nil when it does not decode.
    func decodeVariant(_ data: Data) -> DecodedImage? {
        if VariantCodec.isVariant(data) {
            return VariantCodec.decode(data, maximumPixelCount: maximumPixelCount)
        }
        return try? decoders.decode(data, options: DecodingOptions(maximumPixelCount: maximumPixelCount))
    }

    /// The options a decode of an original runs with: the size wanted, the pixel
    /// limit, the memory budget, and the load's timeout as the decode's own (a file made to be slow to
    /// decode must not hold a core past the time its transfer was allowed).
    func decodingOptions(targetSize: TargetSize?, timeout: Double) -> DecodingOptions {
        var options = DecodingOptions(targetSize: targetSize, maximumPixelCount: maximumPixelCount)
        options.timeout = timeout
        options.memoryBudget = decodeMemoryBudget
        return options
    }
}
