// The part of ImageIO that Imago uses, declared as the SDK declares it, for
// scripts/check-apple.sh. C constants are `nonisolated(unsafe)`: imported from C they are
// not checked for Sendable.
@_exported import CoreGraphics

public final class CGImageSource {}
public final class CGImageDestination {}

public enum CGImageSourceStatus: Int32, Sendable {
    case statusUnexpectedEOF = -5, statusInvalidData = -4, statusUnknownType = -3
    case statusReadingHeader = -2, statusIncomplete = -1, statusComplete = 0
}

public func CGImageSourceCreateWithData(_ data: CFData, _ options: CFDictionary?) -> CGImageSource? { nil }
public func CGImageSourceGetCount(_ isrc: CGImageSource) -> Int { 0 }
public func CGImageSourceGetStatus(_ isrc: CGImageSource) -> CGImageSourceStatus { .statusComplete }
public func CGImageSourceGetStatusAtIndex(_ isrc: CGImageSource, _ index: Int) -> CGImageSourceStatus { .statusComplete }
public func CGImageSourceGetPrimaryImageIndex(_ isrc: CGImageSource) -> Int { 0 }
public func CGImageSourceCopyProperties(_ isrc: CGImageSource, _ options: CFDictionary?) -> CFDictionary? { nil }
public func CGImageSourceCopyPropertiesAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CFDictionary? { nil }
public func CGImageSourceCreateImageAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CGImage? { nil }
public func CGImageSourceCreateThumbnailAtIndex(_ isrc: CGImageSource, _ index: Int, _ options: CFDictionary?) -> CGImage? { nil }

public func CGImageDestinationCreateWithData(
    _ data: CFMutableData, _ type: CFString, _ count: Int, _ options: CFDictionary?
) -> CGImageDestination? { nil }
public func CGImageDestinationAddImage(_ idst: CGImageDestination, _ image: CGImage, _ properties: CFDictionary?) {}
public func CGImageDestinationFinalize(_ idst: CGImageDestination) -> Bool { false }

nonisolated(unsafe) public let kCGImageSourceShouldCache: CFString = "kCGImageSourceShouldCache"
nonisolated(unsafe) public let kCGImageSourceShouldCacheImmediately: CFString = "kCGImageSourceShouldCacheImmediately"
nonisolated(unsafe) public let kCGImageSourceCreateThumbnailFromImageAlways: CFString = "kCGImageSourceCreateThumbnailFromImageAlways"
nonisolated(unsafe) public let kCGImageSourceCreateThumbnailWithTransform: CFString = "kCGImageSourceCreateThumbnailWithTransform"
nonisolated(unsafe) public let kCGImageSourceThumbnailMaxPixelSize: CFString = "kCGImageSourceThumbnailMaxPixelSize"
nonisolated(unsafe) public let kCGImageDestinationLossyCompressionQuality: CFString = "kCGImageDestinationLossyCompressionQuality"

nonisolated(unsafe) public let kCGImagePropertyPixelWidth: CFString = "PixelWidth"
nonisolated(unsafe) public let kCGImagePropertyPixelHeight: CFString = "PixelHeight"
nonisolated(unsafe) public let kCGImagePropertyOrientation: CFString = "Orientation"
nonisolated(unsafe) public let kCGImagePropertyDepth: CFString = "Depth"
nonisolated(unsafe) public let kCGImagePropertyJFIFDictionary: CFString = "{JFIF}"
nonisolated(unsafe) public let kCGImagePropertyJFIFIsProgressive: CFString = "IsProgressive"

nonisolated(unsafe) public let kCGImagePropertyGIFDictionary: CFString = "{GIF}"
nonisolated(unsafe) public let kCGImagePropertyGIFLoopCount: CFString = "LoopCount"
nonisolated(unsafe) public let kCGImagePropertyGIFDelayTime: CFString = "DelayTime"
nonisolated(unsafe) public let kCGImagePropertyGIFUnclampedDelayTime: CFString = "UnclampedDelayTime"
nonisolated(unsafe) public let kCGImagePropertyPNGDictionary: CFString = "{PNG}"
nonisolated(unsafe) public let kCGImagePropertyAPNGLoopCount: CFString = "LoopCount"
nonisolated(unsafe) public let kCGImagePropertyAPNGDelayTime: CFString = "DelayTime"
nonisolated(unsafe) public let kCGImagePropertyAPNGUnclampedDelayTime: CFString = "UnclampedDelayTime"
@available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
nonisolated(unsafe) public let kCGImagePropertyWebPDictionary: CFString = "{WebP}"
@available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
nonisolated(unsafe) public let kCGImagePropertyWebPLoopCount: CFString = "LoopCount"
@available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
nonisolated(unsafe) public let kCGImagePropertyWebPDelayTime: CFString = "DelayTime"
@available(macOS 11.0, iOS 14.0, tvOS 14.0, watchOS 7.0, *)
nonisolated(unsafe) public let kCGImagePropertyWebPUnclampedDelayTime: CFString = "UnclampedDelayTime"
@available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *)
nonisolated(unsafe) public let kCGImagePropertyHEICSDictionary: CFString = "{HEICS}"
@available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *)
nonisolated(unsafe) public let kCGImagePropertyHEICSLoopCount: CFString = "LoopCount"
@available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *)
nonisolated(unsafe) public let kCGImagePropertyHEICSDelayTime: CFString = "DelayTime"
@available(macOS 10.15, iOS 13.0, tvOS 13.0, watchOS 6.0, *)
nonisolated(unsafe) public let kCGImagePropertyHEICSUnclampedDelayTime: CFString = "UnclampedDelayTime"
@available(macOS 14.0, iOS 17.0, tvOS 17.0, watchOS 10.0, *)
nonisolated(unsafe) public let kCGImagePropertyAVISDictionary: CFString = "{AVIS}"
