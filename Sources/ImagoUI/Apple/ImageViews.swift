// The Apple image views as `ImageDisplaying` targets: they only render what the
// shared code decided (placeholder, image, transition); every decision is made, and
// tested, in platform-neutral code. Not compiled on Linux.

#if canImport(UIKit) && !os(watchOS)
import UIKit
import Imago

extension UIImageView: ImageDisplaying {
    /// Shows the content's image, cross-dissolving when the content says so; an
    /// `AsyncImageView` renders it with its indicator and crossfade settings.
    public func display(_ content: ImageDisplayContent) {
        if let view = self as? AsyncImageView {
            view.render(content)
            return
        }
        switch content.transition {
        case .crossfade(let seconds):
            UIView.transition(with: self, duration: seconds, options: [.transitionCrossDissolve, .allowUserInteraction]) {
                self.show(content.image)
            }
        case .custom(let custom):
            custom.animate(self) { [weak self] in self?.show(content.image) }
        case .none:
            show(content.image)
        }
    }

    /// Reduce Motion, from the accessibility settings.
    public var reducesMotion: Bool { UIAccessibility.isReduceMotionEnabled }

    /// Shows `image` at the scale it was decoded for (the screen's; a toolkit image
    /// at its own). An animation shows its first frame at once and plays from there,
    /// its frames decoded a few ahead off the main thread (`AnimationDriver`).
    func show(_ image: DecodedImage?) {
        animationImages = nil
        stopAnimating()
        AnimationDriver.show(
            image, scale: shownScale, in: ObjectIdentifier(self), isOnScreen: { [weak self] in self?.window != nil },
            currentImage: { [weak self] in self?.image }, set: { [weak self] in self?.image = $0 })
    }

    /// The screen's pixels per point: the view's traits', else its screen's; nil
    /// while neither is known (never a guess).
    var displayScale: Double? {
        ViewGeometry.displayScale(reported: Double(traitCollection.displayScale), screen: screen.map { Double($0.scale) })
    }

    /// The scale images are shown at: the screen's, else UIKit's own default of one
    /// pixel a point, as for any `UIImage` of no stated scale.
    private var shownScale: Double { displayScale ?? 1 }

    /// The screen the view is on, else the device's: known before the view is in a
    /// window or laid out. None on visionOS, which has no screens.
    private var screen: ViewGeometry.Screen? {
        #if os(visionOS)
        return nil
        #else
        let screen = window?.screen ?? UIScreen.main
        return ViewGeometry.Screen(
            width: Double(screen.bounds.width), height: Double(screen.bounds.height), scale: Double(screen.scale))
        #endif
    }

    /// The view's bounds in pixels, covered, filled or fitted as its content mode
    /// says; before layout gives it a size, its screen's; nil when the mode shows
    /// images at their own size.
    public var displayTargetSize: TargetSize? {
        ViewGeometry.targetSize(
            width: Double(bounds.width), height: Double(bounds.height), scale: displayScale, screen: screen,
            contentMode: ViewGeometry.contentMode(uiViewContentMode: contentMode.rawValue))
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

    /// In a window, or in a view that may be put in one.
    public var isInViewHierarchy: Bool { window != nil || superview != nil }
}

#elseif canImport(AppKit)
import AppKit
import Imago

extension NSImageView: ImageDisplaying {
    /// Shows the content's image, fading it in when the content says so, if the view
    /// is layer-backed (the fade is Core Animation's); a fade still running from the
    /// previous image is removed first.
    public func display(_ content: ImageDisplayContent) {
        if let view = self as? AsyncImageView {
            view.render(content)
            return
        }
        layer?.removeAnimation(forKey: "imago.crossfade")
        if case .custom(let custom) = content.transition {
            custom.animate(self) { [weak self] in self?.show(content.image) }
            return
        }
        if case .crossfade(let seconds) = content.transition, let layer {
            let fade = CATransition()
            fade.type = .fade
            fade.duration = seconds
            layer.add(fade, forKey: "imago.crossfade")
        }
        show(content.image)
    }

    /// Reduce motion, from the accessibility display settings.
    public var reducesMotion: Bool { NSWorkspace.shared.accessibilityDisplayShouldReduceMotion }

    /// An `AsyncImageView`'s own transition and indicator settings; the defaults for
    /// any other image view.
    public var imageDisplayOptions: ImageDisplayOptions {
        (self as? AsyncImageView)?.loadingState.displayOptions ?? ImageDisplayOptions()
    }

    /// An `AsyncImageView` stops its indicator; the image stays.
    public func imageLoadDidCancel() {
        (self as? AsyncImageView)?.renderEndOfLoading()
    }

    /// Shows `image` at the scale it was decoded for (the window's; a toolkit image at
    /// its own). An animation shows its first frame at once and plays from there, its
    /// frames decoded a few ahead off the main thread (`AnimationDriver`).
    func show(_ image: DecodedImage?) {
        AnimationDriver.show(
            image, scale: shownScale, in: ObjectIdentifier(self), isOnScreen: { [weak self] in self?.window != nil },
            currentImage: { [weak self] in self?.image }, set: { [weak self] in self?.image = $0 })
    }

    /// The window's pixels per point, else the main screen's; nil while neither is
    /// known (never a guess).
    var displayScale: Double? {
        ViewGeometry.displayScale(
            reported: Double(window?.backingScaleFactor ?? 0), screen: (NSScreen.main?.backingScaleFactor).map(Double.init))
    }

    /// The scale images are shown at: the screen's, else one pixel a point.
    private var shownScale: Double { displayScale ?? 1 }

    /// The screen the view's window is on, else the main screen: known before the
    /// view is laid out.
    private var screen: ViewGeometry.Screen? {
        guard let screen = window?.screen ?? NSScreen.main else { return nil }
        return ViewGeometry.Screen(
            width: Double(screen.frame.width), height: Double(screen.frame.height), scale: Double(screen.backingScaleFactor))
    }

    /// The view's bounds in pixels at its window's scale, fitted or covered as its
    /// image scaling says; before layout, its screen's; nil for `.scaleNone`.
    public var displayTargetSize: TargetSize? {
        ViewGeometry.targetSize(
            width: Double(bounds.width), height: Double(bounds.height), scale: displayScale, screen: screen,
            contentMode: ViewGeometry.contentMode(nsImageScaling: imageScaling.rawValue))
    }

    /// The bundle image from AppKit's named-image cache.
    public func bundledImage(named name: String) -> DecodedImage? {
        NSImage(named: NSImage.Name(name)).flatMap(DecodedImage.init(platformImage:))
    }

    /// The view's `image`, the placeholder of loads that name none.
    public var displayedImage: DecodedImage? {
        image.flatMap(DecodedImage.init(platformImage:))
    }

    /// In a window, or in a view that may be put in one.
    public var isInViewHierarchy: Bool { window != nil || superview != nil }
}

#endif
