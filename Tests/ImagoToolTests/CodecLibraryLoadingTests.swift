#if os(Linux)
import Foundation
import Testing
@_spi(Internals) @testable import Imago
import _ImagoTestSupport

/// libheif, libavif, libjxl and librsvg are opened when an image needs them, not when
/// `imago` starts.
@Suite struct CodecLibraryLoadingTests {
    /// The dynamic loader's own listing (what `ldd` prints) of what the tool loads
    /// when it starts: none of the AV1 and HEVC stack, nor libjxl, librsvg and what
    /// they bring (Highway, cairo, Pango; libcurl has Brotli already).
    @Test func theToolStartsWithoutTheHEIFAndAVIFLibraries() async throws {
        let listing = try await Tool.run(["--help"], environment: ["LD_TRACE_LOADED_OBJECTS": "1"])
        #expect(listing.stdout.contains("libjpeg"), "not the loader's listing:\n\(listing.stdout)")
        for library in ["libheif", "libavif", "libde265", "libdav1d", "libaom", "libx265", "libjxl", "libhwy", "librsvg", "libcairo", "libpango"] {
            #expect(!listing.stdout.contains(library), "\(library) is loaded at start-up")
        }
    }
}
#endif
