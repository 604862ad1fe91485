// Apple platforms only: Imago's bitmaps to and from Core Graphics, for ImageIO's
// decoding and for the UIKit and AppKit images of ImagoUI. Nothing is converted: the
// layouts are the same.
#if canImport(CoreGraphics)
import CoreGraphics
import Foundation

extension Bitmap {
    /// The pixels as a Core Graphics image: 8 bits, premultiplied RGBA, exactly the
    /// bitmap's own layout, so nothing is converted; and nothing is copied either: the
    /// image reads this bitmap's own pixels, which it keeps alive until Core Graphics
    /// lets go of it (an animation's frame on screen and in the memory cache is held
    /// once, and showing it costs no copy on the main thread).
    public func makeCGImage() -> CGImage? {
        makeCGImage(alpha: .premultipliedLast)
    }

    /// The pixels as a Core Graphics image with `alpha` as the fourth byte's meaning
    /// (`.noneSkipLast` for a bitmap already flattened onto a background), made on the
    /// pixels in place.
    func makeCGImage(alpha: CGImageAlphaInfo) -> CGImage? {
        guard let space = CGColorSpace(name: colorSpace.coreGraphicsName) else { return nil }
        let held = holdPixels()
        guard let provider = CGDataProvider(
            dataInfo: held.info, data: held.base, size: held.count,
            releaseData: { info, _, _ in if let info { Bitmap.releasePixels(info) } })
        else {
            Bitmap.releasePixels(held.info)
            return nil
        }
        let info = CGBitmapInfo(rawValue: alpha.rawValue).union(.byteOrder32Big)
        return CGImage(
            width: width, height: height, bitsPerComponent: 8, bitsPerPixel: 32,
            bytesPerRow: bytesPerRow, space: space, bitmapInfo: info, provider: provider,
            decode: nil, shouldInterpolate: true, intent: .defaultIntent)
    }

    /// Draws `image` into a new bitmap of its size; the one copy on the way out of
    /// ImageIO. A wide-gamut image (a Display P3 photo, Adobe RGB, BT.2020) is drawn in
    /// Display P3, which keeps the colours an iPhone takes that sRGB would clip;
    /// anything else in sRGB, converted by Core Graphics from its own profile.
    package static func drawing(_ image: CGImage, format: ImageFormat) throws(ImagoError) -> Bitmap {
        let width = image.width, height = image.height
        let target: ColorSpace = image.colorSpace?.isWideGamutRGB == true ? .displayP3 : .sRGB
        return try Bitmap.make(width: width, height: height, colorSpace: target) { pixels throws(ImagoError) in
            pixels.initializeMemory(as: UInt8.self, repeating: 0)
            guard let space = CGColorSpace(name: target.coreGraphicsName),
                  let context = CGContext(
                    data: pixels.baseAddress, width: width, height: height, bitsPerComponent: 8,
                    bytesPerRow: width * 4, space: space,
                    bitmapInfo: CGImageAlphaInfo.premultipliedLast.rawValue | CGBitmapInfo.byteOrder32Big.rawValue)
            else {
                throw .decodingFailed(format: format, reason: "Core Graphics could not make a bitmap context", codec: nil)
            }
            context.draw(image, in: CGRect(x: 0, y: 0, width: width, height: height))
        }
    }
}
extension Bitmap.ColorSpace {
    /// Core Graphics' name of the space.
    var coreGraphicsName: CFString {
        switch self {
        case .sRGB: CGColorSpace.sRGB
        case .displayP3: CGColorSpace.displayP3
        }
    }
}
#endif
