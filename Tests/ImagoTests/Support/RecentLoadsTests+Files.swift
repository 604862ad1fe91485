import Foundation
import Testing
@_spi(HTTPCaching) @testable import Imago
import _ImagoTestSupport

/// The large photo of the repeats tests: the library's (ImagoTests) and those of
/// `imago fetch` (ImagoToolTests, where this file is a symbolic link).
extension RecentLoadsTests {
    /// A photo whose pixels (2400×1800, 17 MB) are over the per-entry cap of the
    /// tool's memory tier (16 MB), so only its file can answer repeats.
    static let largePhoto: Data = {
        let width = 2400, height = 1800
        var pixels = [UInt8](repeating: 255, count: width * height * 4)
        for y in 0..<height {
            for x in 0..<width {
                let offset = (y * width + x) * 4
                pixels[offset] = UInt8(truncatingIfNeeded: x * 7 ^ y * 3)
                pixels[offset + 1] = UInt8(truncatingIfNeeded: (x + y) / 5)
                pixels[offset + 2] = UInt8(truncatingIfNeeded: x &* y)
            }
        }
        return try! ImageEncoders.JPEG(quality: 80).encode(Bitmap(width: width, height: height, pixels: pixels))
    }()
}
