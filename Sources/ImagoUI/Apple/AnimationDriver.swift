// Apple platforms only: the timer that drives an `AnimationPlayback` in a UIKit,
// AppKit or SwiftUI view. Every decision (which frame, when, whether on screen or
// paused) is the playback's, tested on Linux; this file only keeps the time.

#if canImport(UIKit) || canImport(AppKit)
import Foundation
import Imago

/// Plays an animation in one view: at each tick the playback says which frame to
/// show and when to tick again. The timer runs in the run loop's common modes, so the
/// animation goes on while a menu is tracked, a window live-resized or a scroll view
/// tracked; off screen it only looks, twice a second, whether the view is back, and
/// decodes nothing. The view's next display, the view going away or another image set
/// in it (`isShowing` false) end it.
@MainActor
final class AnimationDriver {
    /// The driver playing in each view, by the view's identity: a new view at a dead
    /// one's address at most ends the dead one's driver, which had nothing to play.
    private static var playing: [ObjectIdentifier: AnimationDriver] = [:]
    /// How often a view off screen, or paused by memory pressure, is looked at.
    static let offScreenInterval = 0.5

    private let key: ObjectIdentifier
    private let playback: AnimationPlayback
    private let isOnScreen: @MainActor () -> Bool
    private let currentImage: @MainActor () -> AnyObject?
    private let show: @MainActor (DecodedImage.Frame) -> AnyObject?
    /// The toolkit image this driver put in the view last: any other there ends it.
    private var shown: AnyObject?
    private var timer: Timer?

    private init(
        key: ObjectIdentifier, playback: AnimationPlayback, shown: AnyObject?, isOnScreen: @escaping @MainActor () -> Bool,
        currentImage: @escaping @MainActor () -> AnyObject?, show: @escaping @MainActor (DecodedImage.Frame) -> AnyObject?
    ) {
        self.key = key
        self.playback = playback
        self.shown = shown
        self.isOnScreen = isOnScreen
        self.currentImage = currentImage
        self.show = show
    }

    /// Plays `image` (an animation whose first frame, `shown`, the view shows already)
    /// in the view `key` names, replacing what played there: `show` puts a frame in
    /// the view and returns the toolkit image it made, `currentImage` is the view's.
    static func play(
        _ image: DecodedImage, in key: ObjectIdentifier, shown: AnyObject?, isOnScreen: @escaping @MainActor () -> Bool,
        currentImage: @escaping @MainActor () -> AnyObject?, show: @escaping @MainActor (DecodedImage.Frame) -> AnyObject?
    ) {
        stop(in: key)
        let driver = AnimationDriver(
            key: key, playback: AnimationPlayback(image), shown: shown, isOnScreen: isOnScreen, currentImage: currentImage,
            show: show)
        playing[key] = driver
        driver.tick()
    }

    /// Puts `image` in the view `key` names through `set` (nil for none), at `scale`
    /// pixels per point, and plays it there when it is an animation: its first frame
    /// at once, then each frame `set` in turn. The one way every view (UIKit, AppKit,
    /// SwiftUI) shows an image; `currentImage` is the view's, `isOnScreen` whether it
    /// is in a window.
    static func show(
        _ image: DecodedImage?, scale: Double, in key: ObjectIdentifier, isOnScreen: @escaping @MainActor () -> Bool,
        currentImage: @escaping @MainActor () -> AnyObject?, set: @escaping @MainActor (PlatformImage?) -> Void
    ) {
        stop(in: key)
        let first = image?.platformImage(scale: scale)
        set(first)
        guard let image, image.isAnimated, let first else { return }
        play(image, in: key, shown: first, isOnScreen: isOnScreen, currentImage: currentImage) { frame in
            let next = DecodedImage.platformImage(frame.bitmap, scale: scale)
            set(next)
            return next
        }
    }

    /// Ends what plays in the view `key` names.
    static func stop(in key: ObjectIdentifier) {
        playing.removeValue(forKey: key)?.end()
    }

    private func tick() {
        guard let shown, currentImage() === shown else {
            end()
            return
        }
        let now = ProcessInfo.processInfo.systemUptime
        playback.setOnScreen(isOnScreen(), at: now)
        if let frame = playback.advance(at: now) { self.shown = show(frame) }
        if let delay = playback.nextTick(at: now) {
            schedule(after: delay)
        } else if playback.isFinished {
            end()
        } else {
            schedule(after: Self.offScreenInterval)
        }
    }

    private func schedule(after delay: Double) {
        let timer = Timer(timeInterval: delay, repeats: false) { [weak self] _ in
            MainActor.assumeIsolated { self?.tick() }
        }
        RunLoop.main.add(timer, forMode: .common)
        self.timer = timer
    }

    private func end() {
        timer?.invalidate()
        timer = nil
        if Self.playing[key] === self { Self.playing[key] = nil }
    }
}
#endif
