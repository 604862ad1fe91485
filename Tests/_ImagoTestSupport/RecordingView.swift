import Foundation
import Imago
import ImagoUI

/// A view that records everything it is told: every content, in order; the loading
/// state a real view (AsyncImageView, the GTK view) would render from them; how often
/// it heard that a load of its ended cancelled; and, for images made by
/// `NumberedImage`, a log of the URLs the test set and the images shown, checked at
/// the moment each arrives.
@MainActor
open class RecordingView: ImageDisplaying {
    /// One event in the order it happened.
    public enum Entry: Equatable, Sendable {
        /// The test set URL number `n` (by `setImage(with:)` or `imageURL`).
        case set(Int)
        /// The image of URL number `n` was shown.
        case shown(Int)
    }

    /// The loader the view's calls go through.
    public let imageTargetLoader: ImageTargetLoader
    /// The size the view asks its images to be decoded at.
    public var displayTargetSize: TargetSize?
    /// The options the view gives each load.
    public var options = ImageDisplayOptions()
    /// The image the view shows before any load (`displayedImage`).
    public var firstImage: DecodedImage?

    /// Every content given, in order.
    public private(set) var contents: [ImageDisplayContent] = []
    /// What the view would render now.
    public let state = ImageLoadingState(now: { 0 })
    /// How often the view heard that a load of its ended cancelled.
    public private(set) var cancellations = 0

    /// Set by the test before each call: the numbers of the images that may arrive
    /// next, in the order their URLs were set, empty when none may (after a cancel).
    /// An image shown must be one of them, and then those before it may no longer
    /// come (an older image never follows a newer one); any other image shown is
    /// noted in `wrong` at the moment it arrives.
    public var allowed: [Int] = []
    /// The one image that may arrive next (a replacing call: `setImage(with:)`), or
    /// nil when none may; the last of `allowed` when read.
    public var expected: Int? {
        get { allowed.last }
        set { allowed = newValue.map { [$0] } ?? [] }
    }
    /// Every image shown that was not allowed at that moment.
    public private(set) var wrong: [String] = []
    /// The URLs set (noted by the test) and the images shown, in one order.
    public var log: [Entry] = []

    /// A view on `targets`, asking for images of `size`, showing `firstImage` before any load.
    public init(_ targets: ImageTargetLoader, size: TargetSize? = nil, firstImage: DecodedImage? = nil) {
        imageTargetLoader = targets
        displayTargetSize = size
        self.firstImage = firstImage
    }

    /// The options set by the test (`options`).
    public var imageDisplayOptions: ImageDisplayOptions { options }
    /// The image the view shows before any load (`firstImage`).
    public var displayedImage: DecodedImage? { firstImage }
    /// Whether the view is in a view hierarchy, as a test sets it (in one by default).
    public var isInViewHierarchy = true
    /// Whether the system asks for reduced motion, as a test sets it (no by default).
    public var reducesMotion = false

    /// Records `content`, and checks an image shown against the one expected.
    public func display(_ content: ImageDisplayContent) {
        contents.append(content)
        state.apply(content)
        guard content.phase == .success, let image = content.image else { return }
        let number = NumberedImage.number(of: image)
        log.append(.shown(number))
        if let place = allowed.firstIndex(of: number) {
            allowed.removeFirst(place)
        } else {
            wrong.append("showed \(number) while \(allowed.isEmpty ? "nothing (cancelled)" : "\(allowed)") could come")
        }
    }

    /// Counts the cancel and ends the loading state, as a real view stops its indicator.
    public func imageLoadDidCancel() {
        cancellations += 1
        state.endLoading()
    }

    /// Declared here so that subclasses can override it: a protocol's default is not
    /// dispatched to a subclass's method.
    open func bundledImage(named name: String) -> DecodedImage? { nil }

    /// The shade of the image last given (the test images of `pngData` are one colour each).
    public var shade: UInt8? { contents.last?.image?.bitmap[0, 0].r }

    /// The numbers of the images shown, in order.
    public var shown: [Int] {
        log.compactMap { if case .shown(let n) = $0 { n } else { nil } }
    }

    /// The number of the last image shown.
    public var lastShown: Int? { shown.last }

    /// The shown images out of order: for each image shown, the place of the latest
    /// setting of its URL before it; an image whose place is before an earlier
    /// image's place is older than one already shown.
    public var olderAfterNewer: [(earlier: Int, later: Int)] {
        var latestSet: [Int: Int] = [:]
        var newestShown = -1
        var faults: [(Int, Int)] = []
        for (index, entry) in log.enumerated() {
            switch entry {
            case .set(let n):
                latestSet[n] = index
            case .shown(let n):
                let place = latestSet[n] ?? -1
                if place < newestShown { faults.append((newestShown, place)) }
                newestShown = max(newestShown, place)
            }
        }
        return faults
    }
}

/// Images that name the URL they were served for: the first pixel holds the number.
public enum NumberedImage {
    /// A 2×1 PNG whose first pixel names `number` (0–65,535).
    public static func png(_ number: Int) -> Data {
        let pixel: [UInt8] = [UInt8(number >> 8), UInt8(number & 0xFF), 7, 255]
        let pixels = Array([pixel, pixel].joined())
        return try! ImageEncoders.PNG().encode(Bitmap(width: 2, height: 1, pixels: pixels))
    }

    /// The number `image` names.
    public static func number(of image: DecodedImage) -> Int {
        let pixel = image.bitmap[0, 0]
        return Int(pixel.r) << 8 | Int(pixel.g)
    }
}
