// The Apple image views as `ImageDisplaying` targets: they only render what the
// shared code decided (placeholder, image, transition); every decision is made, and
// tested, in platform-neutral code. Not compiled on Linux.

#if canImport(UIKit) && !os(watchOS)
import UIKit

extension UIImageView: ImageDisplaying {
    /// Shows the content's image, cross-dissolving when the content says so; an
    /// `AsyncImageView` renders it with its indicator and crossfade settings.
    public func display(_ content: ImageDisplayContent) {
        if let view = self as? AsyncImageView {
            view.render(content)
            return
        }
        let image = content.image?.platformImage
        switch content.transition {
        case .crossfade(let seconds):
            UIView.transition(with: self, duration: seconds, options: [.transitionCrossDissolve, .allowUserInteraction]) {
                self.image = image
            }
        case .none:
            self.image = image
        }
    }

    /// The view's bounds in pixels, filled or fitted as its content mode says; nil
    /// before layout gives it a size.
    public var displayTargetSize: TargetSize? {
        guard bounds.width > 0, bounds.height > 0 else { return nil }
        let fills = contentMode == .scaleAspectFill || contentMode == .scaleToFill
        return TargetSize(
            points: Double(bounds.width), Double(bounds.height), scale: Double(traitCollection.displayScale),
            contentMode: fills ? .aspectFill : .aspectFit)
    }

    /// The bundle image from UIKit's named-image cache.
    public func bundledImage(named name: String) -> DecodedImage? {
        UIImage(named: name).flatMap(DecodedImage.init(platformImage:))
    }

    /// An `AsyncImageView`'s own crossfade and indicator settings; the defaults for
    /// any other image view.
    public var imageDisplayOptions: ImageDisplayOptions {
        (self as? AsyncImageView)?.loadingState.displayOptions ?? ImageDisplayOptions()
    }

    /// The view's `image`, the placeholder of loads that name none.
    public var displayedImage: DecodedImage? {
        image.flatMap(DecodedImage.init(platformImage:))
    }

    /// An `AsyncImageView` stops its indicator; the image stays.
    public func imageLoadDidCancel() {
        (self as? AsyncImageView)?.renderEndOfLoading()
    }
}

#elseif canImport(AppKit)
import AppKit

extension NSImageView: ImageDisplaying {
    /// Shows the content's image, fading it in when the content says so.
    public func display(_ content: ImageDisplayContent) {
        let image = content.image?.platformImage
        guard case .crossfade(let seconds) = content.transition else {
            self.image = image
            return
        }
        let fade = CATransition()
        fade.type = .fade
        fade.duration = seconds
        wantsLayer = true
        layer?.add(fade, forKey: "imago.crossfade")
        self.image = image
    }

    /// The view's bounds in pixels at its window's scale; nil before layout.
    public var displayTargetSize: TargetSize? {
        guard bounds.width > 0, bounds.height > 0 else { return nil }
        let scale = window?.backingScaleFactor ?? NSScreen.main?.backingScaleFactor ?? 2
        let fills = imageScaling == .scaleAxesIndependently
        return TargetSize(
            points: Double(bounds.width), Double(bounds.height), scale: Double(scale),
            contentMode: fills ? .aspectFill : .aspectFit)
    }

    /// The bundle image from AppKit's named-image cache.
    public func bundledImage(named name: String) -> DecodedImage? {
        NSImage(named: NSImage.Name(name)).flatMap(DecodedImage.init(platformImage:))
    }

    /// The view's `image`, the placeholder of loads that name none.
    public var displayedImage: DecodedImage? {
        image.flatMap(DecodedImage.init(platformImage:))
    }
}
#endif
