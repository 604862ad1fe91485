// The part of Core Animation that Imago uses, declared as the SDK declares it, for
// scripts/check-apple.sh. Not on watchOS.
@_exported import CoreGraphics

public func CACurrentMediaTime() -> CFTimeInterval { 0 }

public struct CATransitionType: RawRepresentable, Hashable, Sendable {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public static let fade = CATransitionType(rawValue: "fade")
}

open class CAAnimation: NSObject {
    open var duration: CFTimeInterval = 0
}

open class CATransition: CAAnimation {
    open var type: CATransitionType = .fade
}

open class CALayer: NSObject {
    open func add(_ anim: CAAnimation, forKey key: String?) {}
    open func removeAnimation(forKey key: String) {}
}
