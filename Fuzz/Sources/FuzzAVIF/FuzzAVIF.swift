import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the AVIF decoder. The pixel limit is lowered so the
/// fuzzer spends its time on parsing, not on filling huge but legal images.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    // Few frames: each is a whole canvas, and an animation's frames after the first
    // are decoded by its cursor, which is driven to the end here.
    let image = try? ImageDecoders.AVIF().decode(data, options: DecodingOptions(maximumPixelCount: 1 << 22, maximumFrameCount: 64))
    if let cursor = image?.animation?.makeIterator() {
        while (try? cursor.next()) != nil {}
    }
    // And as a thumbnail, whose still is converted in bands of rows.
    var thumbnail = DecodingOptions(maximumPixelCount: 1 << 22, maximumFrameCount: 64)
    thumbnail.targetSize = .thumbnail(37)
    _ = try? ImageDecoders.AVIF().decode(data, options: thumbnail)
    return 0
}
