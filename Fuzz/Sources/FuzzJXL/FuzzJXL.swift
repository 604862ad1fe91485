import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the JPEG XL decoder. The pixel limit is lowered so the
/// fuzzer spends its time on parsing, not on filling huge but legal images, and the
/// first frame has a deadline, as a loader's decodes have.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    // Few frames: each is a whole canvas, and an animation's frames after the first
    // are decoded by its cursor, which is driven to the end here.
    var options = DecodingOptions(maximumPixelCount: 1 << 22, maximumFrameCount: 64)
    options.timeout = 3
    let image = try? ImageDecoders.JXL().decode(data, options: options)
    if let cursor = image?.animation?.makeIterator() {
        while (try? cursor.next()) != nil {}
    }
    return 0
}
