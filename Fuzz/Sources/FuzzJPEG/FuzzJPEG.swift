import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the JPEG decoder. The pixel limit is lowered so the
/// fuzzer spends its time on parsing, not on filling huge but legal images.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    _ = try? ImageDecoders.JPEG().decode(data, options: DecodingOptions(maximumPixelCount: 1 << 22))
    return 0
}
