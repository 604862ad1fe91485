import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the SVG decoder, drawn at a thumbnail's size so the
/// fuzzer spends its time in librsvg's parsing and drawing, not in filling pixels.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    _ = try? ImageDecoders.SVG().decode(data, options: DecodingOptions(targetSize: .thumbnail(64), maximumPixelCount: 1 << 20))
    return 0
}
