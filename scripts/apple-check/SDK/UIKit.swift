// The part of UIKit that Imago uses, declared as the SDK declares it (actor
// isolation, availability), for scripts/check-apple.sh. What watchOS lacks (every
// view, layout and trait class) is left out of its configuration, as it is
// unavailable there.
@_exported import CoreGraphics
#if !os(watchOS)
@_exported import QuartzCore
#endif

@available(iOS 2.0, tvOS 9.0, watchOS 2.0, visionOS 1.0, *)
open class UIImage: NSObject, @unchecked Sendable {
    public enum Orientation: Int, Sendable {
        case up, down, left, right, upMirrored, downMirrored, leftMirrored, rightMirrored
    }

    public init?(named name: String) {}
    public init(cgImage: CGImage) {}
    public init(cgImage: CGImage, scale: CGFloat, orientation: UIImage.Orientation) {}
    open var cgImage: CGImage? { nil }
    open var size: CGSize { .zero }
    open var scale: CGFloat { 1 }
    open var imageOrientation: UIImage.Orientation { .up }
    open var images: [UIImage]? { nil }
    open var duration: TimeInterval { 0 }
    open class func animatedImage(with images: [UIImage], duration: TimeInterval) -> UIImage? { nil }
}

#if !os(watchOS)
@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIResponder: NSObject {}

@available(iOS 8.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
open class UITraitCollection: NSObject, @unchecked Sendable {
    open var displayScale: CGFloat { 0 }
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIView: UIResponder {
    public enum ContentMode: Int, Sendable {
        case scaleToFill, scaleAspectFit, scaleAspectFill, redraw, center, top, bottom, left, right
        case topLeft, topRight, bottomLeft, bottomRight
    }

    public struct AnimationOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let allowUserInteraction = AnimationOptions(rawValue: 1 << 1)
        public static let beginFromCurrentState = AnimationOptions(rawValue: 1 << 2)
        public static let transitionCrossDissolve = AnimationOptions(rawValue: 5 << 20)
    }

    public init(frame: CGRect) {}
    public required init?(coder: NSCoder) {}
    public override convenience init() { self.init(frame: .zero) }
    open var bounds: CGRect = .zero
    open var frame: CGRect = .zero
    open var contentMode: UIView.ContentMode = .scaleToFill
    open var traitCollection: UITraitCollection { UITraitCollection() }
    open var layer: CALayer { CALayer() }
    open var translatesAutoresizingMaskIntoConstraints = true
    open var centerXAnchor: NSLayoutXAxisAnchor { NSLayoutXAxisAnchor() }
    open var centerYAnchor: NSLayoutYAxisAnchor { NSLayoutYAxisAnchor() }
    open func addSubview(_ view: UIView) {}
    open func bringSubviewToFront(_ view: UIView) {}
    open class func transition(
        with view: UIView, duration: TimeInterval, options: UIView.AnimationOptions = [],
        animations: (() -> Void)?, completion: ((Bool) -> Void)? = nil
    ) {}
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIImageView: UIView {
    public init(image: UIImage?) { super.init(frame: .zero) }
    public override init(frame: CGRect) { super.init(frame: frame) }
    public required init?(coder: NSCoder) { super.init(coder: coder) }
    open var image: UIImage?
    open var animationImages: [UIImage]?
    open var animationDuration: TimeInterval = 0
    open var animationRepeatCount = 0
    open func startAnimating() {}
    open func stopAnimating() {}
    open var isAnimating: Bool { false }
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIActivityIndicatorView: UIView {
    public enum Style: Int, Sendable {
        @available(iOS 13.0, tvOS 13.0, visionOS 1.0, *) case medium = 100
        @available(iOS 13.0, tvOS 13.0, visionOS 1.0, *) case large = 101
    }

    public init(style: UIActivityIndicatorView.Style) { super.init(frame: .zero) }
    public required init(coder: NSCoder) { super.init(coder: coder)! }
    open var style: UIActivityIndicatorView.Style = .medium
    open var hidesWhenStopped = true
    open func startAnimating() {}
    open func stopAnimating() {}
    open var isAnimating: Bool { false }
}

@available(iOS 6.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class NSLayoutConstraint: NSObject {
    open class func activate(_ constraints: [NSLayoutConstraint]) {}
}

@available(iOS 9.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class NSLayoutAnchor<AnchorType: AnyObject>: NSObject {
    open func constraint(equalTo anchor: NSLayoutAnchor<AnchorType>) -> NSLayoutConstraint { NSLayoutConstraint() }
}

@available(iOS 9.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class NSLayoutXAxisAnchor: NSLayoutAnchor<NSLayoutXAxisAnchor> {}

@available(iOS 9.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class NSLayoutYAxisAnchor: NSLayoutAnchor<NSLayoutYAxisAnchor> {}
#endif

// Added for the scale and size of a view's screen, known before the view is in a
// window (UIView.h, UIWindow.h and UIScreen.h of the iOS 16.5 SDK; UIScreen and
// UIWindow.screen are not in visionOS, per Apple's documentation).
#if !os(watchOS)
extension UIView {
    public var window: UIWindow? { nil }
    public var superview: UIView? { nil }
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIWindow: UIView {
    @available(iOS 3.2, tvOS 9.0, *)
    @available(visionOS, unavailable)
    open var screen: UIScreen { UIScreen() }
}

@available(iOS 2.0, tvOS 9.0, *)
@available(watchOS, unavailable)
@available(visionOS, unavailable)
@MainActor
open class UIScreen: NSObject {
    open class var main: UIScreen { UIScreen() }
    open var bounds: CGRect { .zero }
    @available(iOS 4.0, tvOS 9.0, *)
    open var scale: CGFloat { 0 }
}
#endif

// Added for the loading views' indicators and the buttons' images by state
// (UIView.h, NSLayoutAnchor.h, NSLayoutConstraint.h, UIProgressView.h, UIControl.h,
// UIButton.h and UIAccessibility.h of the iOS 16.5 SDK).
#if !os(watchOS)
extension UIView {
    public func removeFromSuperview() {}
    public var isHidden: Bool {
        get { false }
        set {}
    }
    @available(iOS 9.0, tvOS 9.0, visionOS 1.0, *)
    public var widthAnchor: NSLayoutDimension { NSLayoutDimension() }
}

extension NSLayoutConstraint {
    @available(iOS 8.0, tvOS 9.0, visionOS 1.0, *)
    public var isActive: Bool {
        get { false }
        set {}
    }
}

@available(iOS 9.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class NSLayoutDimension: NSLayoutAnchor<NSLayoutDimension> {
    open func constraint(equalTo anchor: NSLayoutDimension, multiplier m: CGFloat) -> NSLayoutConstraint { NSLayoutConstraint() }
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIProgressView: UIView {
    public enum Style: Int, Sendable {
        case `default` = 0
        @available(tvOS, unavailable) case bar = 1
    }

    public init(progressViewStyle style: UIProgressView.Style) { super.init(frame: .zero) }
    public required init?(coder: NSCoder) { super.init(coder: coder) }
    open func setProgress(_ progress: Float, animated: Bool) {}
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIControl: UIView {
    public struct State: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let normal = State([])
        public static let highlighted = State(rawValue: 1 << 0)
        public static let disabled = State(rawValue: 1 << 1)
        public static let selected = State(rawValue: 1 << 2)
    }
}

@available(iOS 2.0, tvOS 9.0, visionOS 1.0, *)
@available(watchOS, unavailable)
@MainActor
open class UIButton: UIControl {
    open func setImage(_ image: UIImage?, for state: UIControl.State) {}
    open func setBackgroundImage(_ image: UIImage?, for state: UIControl.State) {}
    open func image(for state: UIControl.State) -> UIImage? { nil }
    open func backgroundImage(for state: UIControl.State) -> UIImage? { nil }
}

public enum UIAccessibility {
    @available(iOS 8.0, tvOS 9.0, visionOS 1.0, *)
    public static var isReduceMotionEnabled: Bool { false }
}
#endif
