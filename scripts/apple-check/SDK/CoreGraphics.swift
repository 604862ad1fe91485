// The part of Core Graphics (and of Core Foundation, which it re-exports) that Imago
// uses, declared as the SDK declares it, for scripts/check-apple.sh. Core Foundation's
// types are toll-free bridged to Foundation's on Apple platforms; here they are
// Foundation's own classes, so that `data as CFData` type-checks as it does there; CGFloat and the
// geometry types are Foundation's on Linux, as they are Core Graphics' there.
@_exported import Foundation

public typealias CFData = NSData
public typealias CFMutableData = NSMutableData
public typealias CFDictionary = NSDictionary
public typealias CFString = NSString
public typealias CFTimeInterval = Double

public final class CGColorSpace: @unchecked Sendable {
    nonisolated(unsafe) public static let sRGB: CFString = "kCGColorSpaceSRGB"
    nonisolated(unsafe) public static let displayP3: CFString = "kCGColorSpaceDisplayP3"
    public init?(name: CFString) {}
    public var isWideGamutRGB: Bool { false }
}

public enum CGImageAlphaInfo: UInt32, Sendable {
    case none = 0, premultipliedLast, premultipliedFirst, last, first, noneSkipLast, noneSkipFirst, alphaOnly
}

public struct CGBitmapInfo: OptionSet, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let alphaInfoMask = CGBitmapInfo(rawValue: 0x1F)
    public static let byteOrder32Little = CGBitmapInfo(rawValue: 2 << 12)
    public static let byteOrder32Big = CGBitmapInfo(rawValue: 4 << 12)
}

public enum CGColorRenderingIntent: Int32, Sendable {
    case defaultIntent, absoluteColorimetric, relativeColorimetric, perceptual, saturation
}

public final class CGDataProvider {
    public init?(data: CFData) {}
}

public final class CGImage: @unchecked Sendable {
    public init?(
        width: Int, height: Int, bitsPerComponent: Int, bitsPerPixel: Int, bytesPerRow: Int,
        space: CGColorSpace, bitmapInfo: CGBitmapInfo, provider: CGDataProvider,
        decode: UnsafePointer<CGFloat>?, shouldInterpolate: Bool, intent: CGColorRenderingIntent
    ) {}
    public var width: Int { 0 }
    public var height: Int { 0 }
    public var colorSpace: CGColorSpace? { nil }
}

public final class CGContext {
    public init?(
        data: UnsafeMutableRawPointer?, width: Int, height: Int, bitsPerComponent: Int, bytesPerRow: Int,
        space: CGColorSpace, bitmapInfo: UInt32
    ) {}
    public func draw(_ image: CGImage, in rect: CGRect, byTiling: Bool = false) {}
    public var interpolationQuality: CGInterpolationQuality = .default
}

public enum CGInterpolationQuality: Int32, Sendable {
    case `default` = 0, none = 1, low = 2, medium = 4, high = 3
}

// Added for images made on a bitmap's own pixels, without a copy
// (CGDataProviderCreateWithData in CGDataProvider.h and CoreGraphics.apinotes of the
// iOS 16.5 SDK; `cg_nullable` is empty for Swift, so nothing here is optional).
public typealias CGDataProviderReleaseDataCallback = @convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer, Int) -> Void

extension CGDataProvider {
    @available(macOS 10.0, iOS 2.0, *)
    public convenience init?(
        dataInfo info: UnsafeMutableRawPointer?, data: UnsafeRawPointer, size: Int,
        releaseData: @escaping CGDataProviderReleaseDataCallback
    ) { self.init(data: NSData()) }
}
