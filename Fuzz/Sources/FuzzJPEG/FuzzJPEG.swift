import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the JPEG decoder, at full size and as a thumbnail (a
/// reduced decode whose rows go to the resampler a band at a time). The pixel limit
/// is lowered so the fuzzer spends its time on parsing, not on filling huge but legal
/// images.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    _ = try? ImageDecoders.JPEG().decode(data, options: DecodingOptions(maximumPixelCount: 1 << 22))
    _ = try? ImageDecoders.JPEG().decode(data, options: DecodingOptions(targetSize: .thumbnail(37), maximumPixelCount: 1 << 22))
    return 0
}
