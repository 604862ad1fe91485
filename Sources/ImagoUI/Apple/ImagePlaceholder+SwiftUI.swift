// The hash placeholder as a SwiftUI image, for `RemoteImage`'s placeholder content.
// Decoding is the platform-neutral `ImagePlaceholder`'s; this only wraps its bitmap,
// as `RemoteImage` wraps a loaded one. Not compiled on Linux.

#if canImport(SwiftUI) && (canImport(UIKit) || canImport(AppKit))
import SwiftUI
import Imago

extension ImagePlaceholder {
    /// The placeholder as a SwiftUI `Image` at `scale` pixels per point (make it
    /// `resizable()` to fill the view); nil when the hash is malformed.
    ///
    /// ```swift
    /// RemoteImage(url: url) { $0.resizable() } placeholder: {
    ///     ImagePlaceholder.thumbHash(hash).swiftUIImage(scale: 1)?.resizable()
    /// }
    /// ```
    @MainActor
    public func swiftUIImage(scale: Double) -> Image? {
        guard let platform = image?.platformImage(scale: scale) else { return nil }
        #if canImport(UIKit)
        return Image(uiImage: platform)
        #else
        return Image(nsImage: platform)
        #endif
    }
}
#endif
