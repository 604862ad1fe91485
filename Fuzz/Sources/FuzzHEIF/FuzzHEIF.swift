import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the HEIF decoder. The pixel limit is lowered so the
/// fuzzer spends its time on parsing, not on filling huge but legal images.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    _ = try? ImageDecoders.HEIF().decode(data, options: DecodingOptions(maximumPixelCount: 1 << 22))
    // And as a thumbnail, resampled from libheif's pixels as they are.
    _ = try? ImageDecoders.HEIF().decode(data, options: DecodingOptions(targetSize: .thumbnail(37), maximumPixelCount: 1 << 22))
    return 0
}
