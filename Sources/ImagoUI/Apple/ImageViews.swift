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
        case .none:
            show(content.image)
        }
    }

    /// Shows `image` at the screen's scale. An animated `UIImage` loops for ever, so
    /// an animation that plays a set number of times goes through `animationImages`
    /// instead, ending on its last frame.
    func show(_ image: DecodedImage?) {
        let platform = image?.platformImage(scale: displayScale)
        stopAnimating()
        if let image, image.loopCount > 0, let platform, let frames = platform.images {
            animationImages = frames
            animationDuration = platform.duration
            animationRepeatCount = image.loopCount
            self.image = frames.last
            startAnimating()
        } else {
            animationImages = nil
            self.image = platform
        }
    }

    /// The screen's pixels per point, 3 while UIKit does not know it yet.
    var displayScale: Double { ViewGeometry.displayScale(Double(traitCollection.displayScale)) }

    /// The view's bounds in pixels, covered, filled or fitted as its content mode
    /// says; nil before layout gives it a size, or when the mode shows images at their
    /// own size.
    public var displayTargetSize: TargetSize? {
        ViewGeometry.targetSize(
            width: Double(bounds.width), height: Double(bounds.height), reportedScale: Double(traitCollection.displayScale),
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
}

#elseif canImport(AppKit)
import AppKit
import Imago

extension NSImageView: ImageDisplaying {
    /// Shows the content's image, fading it in when the content says so, if the view
    /// is layer-backed (the fade is Core Animation's); a fade still running from the
    /// previous image is removed first.
    public func display(_ content: ImageDisplayContent) {
        layer?.removeAnimation(forKey: "imago.crossfade")
        if case .crossfade(let seconds) = content.transition, let layer {
            let fade = CATransition()
            fade.type = .fade
            fade.duration = seconds
            layer.add(fade, forKey: "imago.crossfade")
        }
        AnimationTimer.stop(in: self)
        if let animation = content.image?.appKitAnimation(scale: displayScale) {
            image = animation.frames[animation.timeline.frames[0]]
            AnimationTimer.play(animation, in: self)
        } else {
            image = content.image?.platformImage(scale: displayScale)
        }
    }

    /// The window's pixels per point, else the main screen's.
    var displayScale: Double {
        ViewGeometry.displayScale(Double(window?.backingScaleFactor ?? NSScreen.main?.backingScaleFactor ?? 0))
    }

    /// The view's bounds in pixels at its window's scale, fitted or covered as its
    /// image scaling says; nil before layout, or for `.scaleNone`.
    public var displayTargetSize: TargetSize? {
        ViewGeometry.targetSize(
            width: Double(bounds.width), height: Double(bounds.height), reportedScale: displayScale,
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
}

/// Plays an `AppKitAnimation` in an image view, one tick of its timeline at a time:
/// the view's next display stops it, and so do the view going away, another image set
/// in it, or the last loop ending (on its last frame).
@MainActor
private final class AnimationTimer {
    /// The timer playing in each view, by the view's identity: a new view at a dead
    /// one's address at most ends the dead one's timer, which had nothing to play.
    private static var playing: [ObjectIdentifier: AnimationTimer] = [:]

    private weak var view: NSImageView?
    private let key: ObjectIdentifier
    private let animation: AppKitAnimation
    /// The frame this timer put in the view last.
    private var shown: NSImage?
    private var tick = 0
    private var timer: Timer?

    private init(_ animation: AppKitAnimation, in view: NSImageView) {
        self.animation = animation
        self.view = view
        key = ObjectIdentifier(view)
        shown = view.image
    }

    static func play(_ animation: AppKitAnimation, in view: NSImageView) {
        let player = AnimationTimer(animation, in: view)
        playing[ObjectIdentifier(view)] = player
        player.timer = Timer.scheduledTimer(withTimeInterval: animation.timeline.tick, repeats: true) { _ in
            MainActor.assumeIsolated { player.advance() }
        }
    }

    static func stop(in view: NSImageView) {
        playing.removeValue(forKey: ObjectIdentifier(view))?.end()
    }

    private func advance() {
        guard let view, view.image === shown else {
            end()
            return
        }
        tick += 1
        let (index, isLast) = animation.timeline.frame(atTick: tick, loopCount: animation.loopCount)
        shown = animation.frames[index]
        view.image = shown
        if isLast { end() }
    }

    private func end() {
        timer?.invalidate()
        timer = nil
        if Self.playing[key] === self { Self.playing[key] = nil }
    }
}
#endif
