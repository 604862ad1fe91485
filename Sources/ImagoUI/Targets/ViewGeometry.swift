import Imago

/// What the platform image views make of what their toolkits report: the screen's
/// scale and how the view scales its image, as the box images are decoded to. Pure
/// functions, so that the Apple views (which only read their properties and call
/// these) decide nothing the Linux tests cannot check. The toolkits' enumerations
/// come in as their raw values, which are fixed by their SDKs.
enum ViewGeometry {
    /// A screen as a view reports it: its size in points and its pixels per point.
    struct Screen: Sendable, Equatable {
        /// Width in points.
        let width: Double
        /// Height in points.
        let height: Double
        /// Pixels per point.
        let scale: Double

        /// A screen of `width` × `height` points at `scale` pixels per point; nil when
        /// any of them is unknown (0, negative, not finite), as a toolkit reports a
        /// screen it has not set up.
        init?(width: Double, height: Double, scale: Double) {
            guard [width, height, scale].allSatisfy({ $0.isFinite && $0 > 0 }) else { return nil }
            self.width = width
            self.height = height
            self.scale = scale
        }
    }

    /// The pixels per point to decode and show images at: the view's own (UIKit's
    /// `traitCollection.displayScale`, unspecified, 0, until the view is in a window),
    /// else its screen's; nil when neither is known. Never a guess: an image decoded
    /// at a guessed scale would be cached under a size no view of the real scale asks
    /// for, and shown at the wrong size in points.
    static func displayScale(reported: Double, screen: Double? = nil) -> Double? {
        if reported.isFinite, reported > 0 { return reported }
        if let screen, screen.isFinite, screen > 0 { return screen }
        return nil
    }

    /// How a `UIImageView` with the `UIView.ContentMode` of raw value `rawValue`
    /// fills its box: nil for the modes that show the image at its own size (centre,
    /// edges, corners), so that it is decoded whole.
    static func contentMode(uiViewContentMode rawValue: Int) -> TargetSize.ContentMode? {
        switch rawValue {
        case 0, 3: .scaleToFill  // .scaleToFill; .redraw, which image views draw stretched
        case 1: .aspectFit
        case 2: .aspectFill
        default: nil
        }
    }

    /// How an `NSImageView` with the `NSImageScaling` of raw value `rawValue` fills
    /// its box: nil for `.scaleNone`, which shows the image at its own size.
    static func contentMode(nsImageScaling rawValue: UInt) -> TargetSize.ContentMode? {
        switch rawValue {
        case 0, 3: .aspectFit  // .scaleProportionallyDown, .scaleProportionallyUpOrDown
        case 1: .scaleToFill  // .scaleAxesIndependently
        default: nil
        }
    }

    /// The box a view of `width` × `height` points decodes its images to, at `scale`
    /// pixels per point (`displayScale`). A view not laid out yet (a cell configured
    /// before its first layout pass, bounds zero) decodes to fit its `screen`: never
    /// larger than the screen can show, where a load at no size would decode a 12 MP
    /// photo whole for a 100-point cell. Nil when the mode shows images at their own
    /// size, or when neither the scale nor (for a view of no size) the screen is known.
    static func targetSize(
        width: Double, height: Double, scale: Double?, screen: Screen?, contentMode: TargetSize.ContentMode?
    ) -> TargetSize? {
        guard let contentMode else { return nil }
        if width.isFinite, height.isFinite, width > 0, height > 0 {
            guard let scale else { return nil }
            return TargetSize(points: width, height, scale: scale, contentMode: contentMode)
        }
        guard let screen else { return nil }
        return TargetSize(points: screen.width, screen.height, scale: screen.scale, contentMode: .aspectFit)
    }

    /// The `UIImage.Orientation` of raw value `rawValue` as the EXIF orientation it
    /// stands for (UIKit numbers them differently); nil for an unknown value.
    static func orientation(uiImageOrientation rawValue: Int) -> ImageOrientation? {
        let exif: [ImageOrientation] = [.up, .down, .left, .right, .upMirrored, .downMirrored, .leftMirrored, .rightMirrored]
        return exif.indices.contains(rawValue) ? exif[rawValue] : nil
    }
}
