import Imago

/// What the platform image views make of what their toolkits report: the screen's
/// scale and how the view scales its image, as the box images are decoded to. Pure
/// functions, so that the Apple views (which only read their properties and call
/// these) decide nothing the Linux tests cannot check. The toolkits' enumerations
/// come in as their raw values, which are fixed by their SDKs.
enum ViewGeometry {
    /// The pixels per point to decode and show images at. UIKit's
    /// `traitCollection.displayScale` is unspecified (0) until the view is in a
    /// window: an unknown scale counts as 3, the largest Apple's screens have, so an
    /// image is never decoded too small, at worst larger than needed.
    static func displayScale(_ reported: Double) -> Double {
        reported.isFinite && reported > 0 ? reported : 3
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

    /// The box a view of `width` × `height` points decodes its images to: nil before
    /// layout gives it a size, or when its mode shows images at their own size.
    static func targetSize(
        width: Double, height: Double, reportedScale: Double, contentMode: TargetSize.ContentMode?
    ) -> TargetSize? {
        guard width > 0, height > 0, let contentMode else { return nil }
        return TargetSize(points: width, height, scale: displayScale(reportedScale), contentMode: contentMode)
    }

    /// The `UIImage.Orientation` of raw value `rawValue` as the EXIF orientation it
    /// stands for (UIKit numbers them differently); nil for an unknown value.
    static func orientation(uiImageOrientation rawValue: Int) -> ImageOrientation? {
        let exif: [ImageOrientation] = [.up, .down, .left, .right, .upMirrored, .downMirrored, .leftMirrored, .rightMirrored]
        return exif.indices.contains(rawValue) ? exif[rawValue] : nil
    }
}
