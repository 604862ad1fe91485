/// How a file holding several images is read, whichever codec reads it: Imago's own
/// decoders on Linux, ImageIO's image source on Apple platforms, which only reports
/// what the file holds and decodes what it is asked for.
package enum ImageSourceRules {
    /// What is shown of a file holding several images.
    enum Selection: Sendable, Equatable {
        /// One image, at this index: an icon's best entry, a TIFF's first page, a HEIF
        /// collection's primary image.
        case still(index: Int)
        /// Every image, in order, as the frames of an animation (GIF, APNG, animated
        /// WebP, HEIF and AVIF sequences).
        case animation
    }

    /// One image of a file, as its header describes it.
    struct Entry: Sendable, Equatable {
        /// Width in pixels.
        let width: Int
        /// Height in pixels.
        let height: Int
        /// Bits per pixel; deeper colour wins between entries of one size.
        let depth: Int

        /// An entry of `width` × `height` pixels at `depth` bits a pixel.
        init(width: Int, height: Int, depth: Int) {
            self.width = width
            self.height = height
            self.depth = depth
        }
    }

    /// What to show of a `format` file holding `count` images: an animation only for
    /// the animated formats (a HEIF or AVIF file only when it is a sequence), the best
    /// entry of an icon for `target` (`bestEntry`), the primary image of a HEIF or
    /// AVIF collection, the first image of anything else (a TIFF's first page).
    static func selection(
        format: ImageFormat, count: Int, primaryIndex: Int, isSequence: Bool, target: TargetSize?, entry: (Int) -> Entry?
    ) -> Selection {
        guard count > 1 else { return .still(index: 0) }
        switch format {
        case .gif, .png, .webp:
            return .animation
        case .heic, .avif:
            return isSequence ? .animation : .still(index: (0..<count).contains(primaryIndex) ? primaryIndex : 0)
        case .ico:
            let entries = (0..<count).compactMap { index in entry(index).map { (index, $0) } }
            guard let best = bestEntry(entries.map(\.1), for: target) else { return .still(index: 0) }
            return .still(index: entries[best].0)
        default:
            return .still(index: 0)
        }
    }

    /// The entry of an icon to decode: the smallest that covers `target` without
    /// upscaling, or the largest when there is no target or none is large enough,
    /// the deeper colour winning between entries of one size — what browsers pick
    /// for a favicon drawn at a given size. Nil for no entries.
    static func bestEntry(_ entries: [Entry], for target: TargetSize?) -> Int? {
        guard !entries.isEmpty else { return nil }
        func better(_ a: Entry, than b: Entry, preferSmaller: Bool) -> Bool {
            let areaA = a.width * a.height, areaB = b.width * b.height
            if areaA != areaB { return preferSmaller ? areaA < areaB : areaA > areaB }
            return a.depth > b.depth
        }
        func best(of indices: [Int], preferSmaller: Bool) -> Int {
            indices.dropFirst().reduce(indices[0]) { better(entries[$1], than: entries[$0], preferSmaller: preferSmaller) ? $1 : $0 }
        }
        let largest = best(of: Array(entries.indices), preferSmaller: false)
        guard let target else { return largest }
        // Asked with upscaling allowed, the layout says how large the target wants an
        // entry to be; an entry at least that large needs no upscaling.
        let wanted = TargetSize(width: target.width, height: target.height, contentMode: target.contentMode, allowsUpscaling: true)
        let covering = entries.indices.filter { index in
            let layout = wanted.layout(sourceWidth: entries[index].width, sourceHeight: entries[index].height)
            return layout.scaledWidth <= entries[index].width && layout.scaledHeight <= entries[index].height
        }
        return covering.isEmpty ? largest : best(of: covering, preferSmaller: true)
    }

    /// The longest side to decode an upright `width` × `height` image at for
    /// `target`, for a codec that scales while it decodes (ImageIO's thumbnails); nil
    /// to decode it whole, when there is no target or it would not shrink the image.
    static func decodedLongestSide(width: Int, height: Int, target: TargetSize?) -> Int? {
        guard let target, width > 0, height > 0 else { return nil }
        let layout = target.layout(sourceWidth: width, sourceHeight: height)
        guard layout.scaledWidth < width || layout.scaledHeight < height else { return nil }
        return max(layout.scaledWidth, layout.scaledHeight)
    }

    /// A frame's delay as browsers play it: missing, or 10 ms and under (files that
    /// mean "as fast as possible"), it is 100 ms. Every player applies it too, to the
    /// animations it is given made by hand, so that no frame asks for a 1 ms timer.
    package static func frameDelay(_ seconds: Double?) -> Double {
        guard let seconds, seconds.isFinite, seconds > 0.01 else { return 0.1 }
        return seconds
    }
}
