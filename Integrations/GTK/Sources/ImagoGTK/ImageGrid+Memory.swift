import Foundation
import Imago
import ImagoUI

/// The memory tier of a grid made with the default target loader: sized from what the
/// grid shows, not from the machine.
///
/// `ImageCache.shared` takes a fifth of memory, up to 512 MiB: right for an app's
/// screens of assorted images, wrong for a grid scrolled through thousands of
/// thumbnails, where it fills with images the disk tier already holds (5,200 photos
/// scrolled end to end in 160-point cells kept some 500 MiB of thumbnails). A grid
/// shows a screen of cells at a time; what is worth keeping decoded is that screen,
/// the rows it prefetches ahead and a couple of screens behind, for a scroll back.
/// Anything further comes back from the disk tier at the cost of one small decode.
///
/// So a grid given `ImageTargetLoader.shared` (the default) loads through a loader
/// of its own made like `ImageLoader.shared`, with the same data loader, disk tier,
/// freshness and number of transfers, whose memory tier is an `ImageCache` of the
/// grid's own (`memoryCache`), its limits set again whenever the grid's size, cell
/// size, scale factor or `prefetchRows` change. A grid given any other target loader
/// uses that loader's caches as they are: pass
/// `ImageTargetLoader(loader: .shared)` to share the process's memory tier.
///
/// With the memory tier this small, the disk tier must answer a scroll back, so the
/// grid's loader keeps the thumbnails there and not the originals
/// (`StoragePolicy.processed`): a photo's original is a hundred times its
/// thumbnail, and under the shared policy (`.both`) a few thousand of them pushed
/// the thumbnails out of the 512 MiB disk tier, so scrolling back asked the server
/// for nearly every image again (9,366 requests for 5,200 URLs down and back).
/// Opening an item's full image through another loader fetches its original then.
extension ImageGrid {
    /// Screens of rows kept decoded behind the scroll position.
    static let screensBehind = 2
    /// How many times a cell's pixels an image may take in the budget: a photo
    /// filling a square cell is decoded to the cell's short side, so its long side
    /// overflows the cell (by half for a 3:2 photo). The count limit, one image a
    /// cell, bounds the usual case; this bounds wide panoramas.
    static let fillOverflow = 2
    /// The rows on screen assumed before the grid has a size.
    static let provisionalRowsOnScreen = 8

    /// The loader a grid made with the default target loader uses: `ImageLoader.shared`'s
    /// configuration (its data loader, disk tier and freshness) and transfer limits,
    /// storing thumbnails rather than originals on disk, over `cache`.
    static func ownTargetLoader(over cache: ImageCache) -> ImageTargetLoader {
        let shared = ImageLoader.shared
        var configuration = shared.configuration
        configuration.storagePolicy = .processed
        let loader = ImageLoader(configuration: configuration, cache: cache)
        loader.concurrentLoads = shared.concurrentLoads
        loader.loadingTimeout = shared.loadingTimeout
        return ImageTargetLoader(loader: loader)
    }

    /// The limits the grid's memory tier should have now: one image for each cell of
    /// the rows on screen, the rows loaded next to them, the rows prefetched ahead
    /// and `screensBehind` screens of rows behind; each image at most `fillOverflow`
    /// times a cell's pixels at the screen's scale factor.
    public var memoryBudget: (cost: Int, count: Int) {
        let page = gtk_adjustment_get_page_size(verticalAdjustment)
        let rowsOnScreen = page > 0 ? Int((page / cellExtent.height).rounded(.up)) + 1 : Self.provisionalRowsOnScreen
        let rows = rowsOnScreen * (1 + Self.screensBehind) + 2 * Self.nearRows + max(0, prefetchRows)
        let count = max(1, columns) * rows
        let scale = max(1, Int(gtk_widget_get_scale_factor(gridView)))
        let pixels = cellTargetSize.map { $0.width * $0.height } ?? cellSize * cellSize * scale * scale
        return (count * max(1, pixels) * 4 * Self.fillOverflow, count)
    }

    /// Sets the grid's own memory tier's limits to `memoryBudget`, trimming it when
    /// they shrink; nothing for a grid loading through a target loader it was given.
    func updateMemoryBudget() {
        guard let memoryCache else { return }
        let budget = memoryBudget
        guard budget.cost != memoryCache.costLimit || budget.count != memoryCache.countLimit else { return }
        memoryCache.setLimits(cost: budget.cost, count: budget.count)
    }
}
