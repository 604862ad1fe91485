import Foundation
import Imago
import ImagoCommandLine
import ImagoUI

/// The cost of a memory-cache hit through `setImage(with:)` and through `imageURL` on
/// a view, against the least a cache hit can cost: a look-up in a dictionary behind a
/// lock, and the assignment of what it found.
@MainActor
enum ViewBenchmark {
    /// A view that keeps what it is told to show, as an image view keeps its image.
    private final class View: ImageDisplaying {
        var image: DecodedImage?
        let imageTargetLoader: ImageTargetLoader

        init(_ targets: ImageTargetLoader) { imageTargetLoader = targets }

        func display(_ content: ImageDisplayContent) { image = content.image }
    }

    /// A lock around a dictionary: the baseline.
    private final class LockedTable: @unchecked Sendable {
        // Only touched with `lock` held.
        private var table: [URL: DecodedImage] = [:]
        private let lock = NSLock()

        subscript(url: URL) -> DecodedImage? {
            get { lock.lock(); defer { lock.unlock() }; return table[url] }
            set { lock.lock(); defer { lock.unlock() }; table[url] = newValue }
        }
    }

    struct Figures {
        let setImageNanoseconds: Double
        let imageURLNanoseconds: Double
        let baselineNanoseconds: Double
    }

    static func measure() -> Figures {
        let image = DecodedImage(bitmap: Bitmap(width: 1, height: 1, pixels: [1, 2, 3, 255]), format: .png)
        let urls = (0..<100).map { URL(string: "https://example.com/\($0).jpg")! }
        let loader = ImageLoader(configuration: .init(), cache: ImageCache(memoryPressure: nil))
        let targets = ImageTargetLoader(loader: loader)
        let baseline = LockedTable()
        for url in urls {
            loader.cache?.setImage(image, forKey: ImageRequest(url: url).cacheKey)
            baseline[url] = image
        }
        let views = (0..<20).map { _ in View(targets) }
        // The three ways in turns, the fastest turn of each, timed in the thread's own
        // CPU time: the loops are single-threaded, so time spent waiting for a core on a
        // busy machine counts for none.
        let rounds = 20_000
        var viaSetImage = Double.infinity, viaImageURL = Double.infinity, viaTable = Double.infinity
        for _ in 0..<20 {
            var start = threadCPUSeconds()
            for n in 0..<rounds { views[n % views.count].setImage(with: urls[n % urls.count]) }
            viaSetImage = min(viaSetImage, (threadCPUSeconds() - start) / Double(rounds))
            start = threadCPUSeconds()
            for n in 0..<rounds { views[n % views.count].imageURL = urls[n % urls.count] }
            viaImageURL = min(viaImageURL, (threadCPUSeconds() - start) / Double(rounds))
            start = threadCPUSeconds()
            for n in 0..<rounds { views[n % views.count].image = baseline[urls[n % urls.count]] }
            viaTable = min(viaTable, (threadCPUSeconds() - start) / Double(rounds))
        }
        precondition(views.allSatisfy { $0.image != nil }, "the view benchmark missed the cache")
        return Figures(
            setImageNanoseconds: viaSetImage * 1e9, imageURLNanoseconds: viaImageURL * 1e9, baselineNanoseconds: viaTable * 1e9)
    }

    /// The CPU time the calling thread has used, in seconds.
    private static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func printFigures(json: Bool) {
        let figures = measure()
        if json {
            struct Record: Encodable {
                let measure: String
                let setImageNanoseconds: Double
                let imageURLNanoseconds: Double
                let baselineNanoseconds: Double
            }
            Output.json(Record(
                measure: "view memory hit", setImageNanoseconds: figures.setImageNanoseconds,
                imageURLNanoseconds: figures.imageURLNanoseconds, baselineNanoseconds: figures.baselineNanoseconds))
            return
        }
        func line(_ name: String, _ nanoseconds: Double) -> String {
            "memory hit via \(name)   \(Int(nanoseconds)) ns   locked dictionary + assignment: "
                + "\(Int(figures.baselineNanoseconds)) ns   "
                + "\(String(format: "%.1f", nanoseconds / figures.baselineNanoseconds))× (goal ≤ 3×)"
        }
        Output.line("""

            views
            \(line("setImage(with:)", figures.setImageNanoseconds))
            \(line("imageURL       ", figures.imageURLNanoseconds))
            """)
    }
}
