// The part of AppKit that Imago uses, declared as the SDK declares it (actor
// isolation, availability), for scripts/check-apple.sh. macOS only.
@_exported import CoreGraphics
@_exported import QuartzCore

@available(macOS 10.0, *)
open class NSImage: NSObject {
    public typealias Name = String

    public init?(named name: NSImage.Name) {}
    public init(cgImage: CGImage, size: NSSize) {}
    public init(size: NSSize) {}
    open var size: NSSize = .zero
    open var representations: [NSImageRep] { [] }
    open func addRepresentation(_ imageRep: NSImageRep) {}
    open func cgImage(
        forProposedRect proposedDestRect: UnsafeMutablePointer<NSRect>?, context referenceContext: NSGraphicsContext?,
        hints: [NSImageRep.HintKey: Any]?
    ) -> CGImage? { nil }
}

// The macOS 14 SDK marks the conformance unavailable: an NSImage may not cross
// isolation domains.
@available(*, unavailable)
extension NSImage: @unchecked Sendable {}

open class NSImageRep: NSObject {
    public struct HintKey: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
    }
    open var size: NSSize = .zero
    open var pixelsWide: Int { 0 }
    open var pixelsHigh: Int { 0 }
}

open class NSBitmapImageRep: NSImageRep {
    public init(cgImage: CGImage) {}
    open var cgImage: CGImage? { nil }
}

open class NSGraphicsContext: NSObject {}

@MainActor
open class NSResponder: NSObject {}

@MainActor
open class NSWindow: NSResponder {
    open var backingScaleFactor: CGFloat { 2 }
}

open class NSScreen: NSObject {
    @MainActor open class var main: NSScreen? { nil }
    @MainActor open var backingScaleFactor: CGFloat { 2 }
}

@MainActor
open class NSView: NSResponder {
    public init(frame frameRect: NSRect) {}
    public required init?(coder: NSCoder) {}
    open var bounds: NSRect = .zero
    open var window: NSWindow? { nil }
    open var superview: NSView? { nil }
    open var wantsLayer = false
    open var layer: CALayer?
    open func addSubview(_ view: NSView) {}
    open func removeFromSuperview() {}
    open var isHidden = false
    open var frame: NSRect = .zero
    open func setFrameOrigin(_ newOrigin: NSPoint) {}
    open func layout() {}
}

public enum NSImageScaling: UInt, Sendable {
    case scaleProportionallyDown = 0, scaleAxesIndependently, scaleNone, scaleProportionallyUpOrDown
}

@MainActor
open class NSControl: NSView {}

@MainActor
open class NSImageView: NSControl {
    open var image: NSImage?
    open var imageScaling: NSImageScaling = .scaleProportionallyDown
    open var animates = true
}

// Added for the size of a view's screen, known before the view is laid out
// (NSWindow.screen and NSScreen.frame in Apple's AppKit documentation).
extension NSWindow {
    public var screen: NSScreen? { nil }
}

extension NSScreen {
    @MainActor public var frame: NSRect { .zero }
}

// Added for the loading view's indicators, the buttons' images and the reduced-motion
// setting (NSView, NSProgressIndicator, NSButton and NSWorkspace in Apple's AppKit
// documentation).
@MainActor
open class NSProgressIndicator: NSView {
    public enum Style: UInt, Sendable {
        case bar = 0, spinning = 1
    }

    open var style: NSProgressIndicator.Style = .bar
    open var isIndeterminate = true
    open var isDisplayedWhenStopped = true
    open var doubleValue = 0.0
    open var minValue = 0.0
    open var maxValue = 100.0
    open func startAnimation(_ sender: Any?) {}
    open func stopAnimation(_ sender: Any?) {}
}

@MainActor
open class NSButton: NSControl {
    open var image: NSImage?
    open var alternateImage: NSImage?
}

open class NSWorkspace: NSObject {
    open class var shared: NSWorkspace { NSWorkspace() }
    @available(macOS 10.12, *)
    open var accessibilityDisplayShouldReduceMotion: Bool { false }
}
