import Foundation
import Imago

/// What a view that decodes images to its own laid-out size loaded last, and what a
/// new layout makes of it: SwiftUI reports every geometry change, and a view growing
/// in an animation reports dozens.
///
/// Another URL loads as any load does. The same URL loads again only for a box
/// larger than the one loaded (in either side, in pixels) or of another content mode:
/// a view that shrank keeps its sharper image, a layout pass at the same size loads
/// nothing. Meanwhile the image on screen stays, as its own placeholder, with no
/// activity indicator and no fade when the sharper one replaces it: the view never
/// falls back to its placeholder for a picture it already shows.
struct SizedLoad: Sendable {
    /// A load to start: with this placeholder (nil for the view's own) and options.
    struct Load: Sendable {
        let placeholder: DecodedImage?
        let options: ImageDisplayOptions
    }

    /// The URL loaded last; nil before any load or after `reset()`.
    private(set) var url: URL?
    /// The box it was loaded for; nil for its full size.
    private(set) var size: TargetSize?
    private var hasLoaded = false

    /// No load yet.
    init() {}

    /// The load to start for `url` at `size` with `options`, while the view shows
    /// `current`; nil when what was loaded serves (recorded as loaded otherwise).
    mutating func load(_ url: URL?, at size: TargetSize?, options: ImageDisplayOptions, showing current: DecodedImage?) -> Load? {
        defer { hasLoaded = true }
        // A nil URL is not a picture on screen: each one is shown as it is asked.
        guard hasLoaded, url != nil, url == self.url else {
            self.url = url
            self.size = size
            return Load(placeholder: nil, options: options)
        }
        guard Self.needsReload(loaded: self.size, for: size) else { return nil }
        self.size = size
        guard let current else { return Load(placeholder: nil, options: options) }
        var options = options
        options.showsActivityIndicator = false
        options.crossfadeDuration = 0
        return Load(placeholder: current, options: options)
    }

    /// Forgets what was loaded: the view went away, its next appearance loads again.
    mutating func reset() {
        self = SizedLoad()
    }

    /// Whether an image loaded for the box `loaded` (nil: full size) is too small for
    /// the box `wanted`: larger in either side, or another content mode. An image
    /// loaded at full size serves every box; a box of no size asks for full size.
    static func needsReload(loaded: TargetSize?, for wanted: TargetSize?) -> Bool {
        guard let loaded else { return false }
        guard let wanted else { return true }
        return wanted.width > loaded.width || wanted.height > loaded.height || wanted.contentMode != loaded.contentMode
    }
}
