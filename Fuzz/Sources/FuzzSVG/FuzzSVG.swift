import Foundation
@_spi(Internals) import Imago

/// Feeds libFuzzer's input to the SVG decoder, drawn at a thumbnail's size so the
/// fuzzer spends its time in librsvg's parsing and drawing, not in filling pixels,
/// and with a deadline, as a loader's decodes have: the render is watched, and a
/// document made to be slow stops well within libFuzzer's own timeout.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let data = Data(bytes: bytes, count: count)
    var options = DecodingOptions(targetSize: .thumbnail(64), maximumPixelCount: 1 << 20)
    options.timeout = 3
    _ = try? ImageDecoders.SVG().decode(data, options: options)
    return 0
}

/// LeakSanitizer's suppressions, for allocations inside the libraries librsvg uses,
/// not Imago: libxml2 2.9.14 (Debian 12) leaks an entity's value when librsvg stops
/// at an entity loop; fontconfig, Pango, HarfBuzz and GLib keep caches and type
/// data for the process's life, which LeakSanitizer reports at exit.
@_cdecl("__lsan_default_suppressions")
public func leakSuppressions() -> UnsafePointer<CChar> {
    let text: StaticString = "leak:libxml2.so\nleak:libfontconfig.so\nleak:libpango\nleak:libharfbuzz.so\nleak:libglib-2.0.so\nleak:libgobject-2.0.so\n"
    return UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}
