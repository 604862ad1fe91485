// imago-gallery: a window with a grid of thumbnails of every image given, loaded
// through Imago into recycled GTK cells; a click, or Enter, opens the full image.

import Foundation
import Imago
import ImagoUI
import ImagoGTK
import Synchronization

let usage = """
    usage: imago-gallery (URL | PATH)... | --input FILE [--size PX] [--screenshot PNG]

    Shows the images at the URLs (http, https, file, data), the image files and the
    images in the folders given, as a grid of thumbnails, loaded through Imago's
    memory and disk caches; the rows on screen load first, and scrolling prefetches
    the rows ahead. The thumbnails are kept on disk apart from the full images, so
    a relaunch shows them from disk however many full images were opened. A failed
    thumbnail shows a broken-picture sign, and why it failed when the pointer rests
    on it. Click a thumbnail, or press Enter on it, to open the full image: the
    thumbnail at once, then the full image, a progressive JPEG or interlaced PNG
    sharpening in place as it arrives. The status line counts loaded, failed and
    in-flight images and cache hits.

    options:
      --input FILE       read URLs or paths from FILE, one a line ('-' for standard
                         input; blank lines and lines starting with # are skipped,
                         and a line naming no image is skipped with a warning)
      --size PX          the thumbnail cells' side, 16 to 1024 (default 128)
      --screenshot PNG   save the window to PNG once the visible thumbnails have
                         loaded (or after 30 s), then quit; exit status 1 when it
                         cannot be written
      --benchmark N      once the first screen has loaded, scroll to the end and
                         back N times at 3,000 points a second, checking every
                         cell on screen by its pixels, then print the figures
                         (first frame, first screen, frame gaps, peak memory) and quit
      --library-defaults load through the grid's defaults (the shared loader, its
                         memory and disk tiers) without the gallery's own caches or
                         heap settings: what a program embedding the grid gets
      --                 what follows is URLs or paths, even one starting with -
      -h, --help         show this help

    """

/// Exit status 2 and the usage for a command line that makes no sense.
func badUsage(_ message: String) -> Never {
    FileHandle.standardError.write(Data("imago-gallery: \(message)\n\n\(usage)".utf8))
    exit(2)
}

struct Options {
    var urls: [URL] = []
    var size = 128
    var screenshot: String?
    var benchmarkPasses: Int?
    var libraryDefaults = false
}

func parse(_ arguments: [String]) -> Options {
    var options = Options()
    var rest = arguments[...]
    func value(for option: String) -> String {
        guard let value = rest.popFirst() else { badUsage("\(option) needs a value") }
        return value
    }
    // Lines of --input files, each with where it came from: a line that names no
    // image is skipped with a warning, as one bad URL in a list of thousands should be;
    // an argument typed on the command line is bad usage.
    var lines: [(text: String, origin: String?)] = []
    var optionsEnded = false
    while let argument = rest.popFirst() {
        if optionsEnded {
            lines.append((argument, nil))
            continue
        }
        switch argument {
        case "--":
            optionsEnded = true
        case "-h", "--help":
            print(usage, terminator: "")
            exit(0)
        case "--input":
            let path = value(for: argument)
            let data = path == "-" ? FileHandle.standardInput.readDataToEndOfFile() : FileManager.default.contents(atPath: path)
            guard let data else { badUsage("cannot read \(path)") }
            let text = String(decoding: data, as: UTF8.self)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.trimmingCharacters(in: .whitespacesAndNewlines)
                if !trimmed.isEmpty && !trimmed.hasPrefix("#") { lines.append((trimmed, "\(path) line \(number + 1)")) }
            }
        case "--size":
            let text = value(for: argument)
            guard let size = Int(text), (16...1024).contains(size) else { badUsage("--size wants 16 to 1024, not '\(text)'") }
            options.size = size
        case "--screenshot":
            options.screenshot = value(for: argument)
        case "--benchmark":
            let text = value(for: argument)
            guard let passes = Int(text), passes > 0 else { badUsage("--benchmark wants a number of passes, not '\(text)'") }
            options.benchmarkPasses = passes
        case "--library-defaults":
            options.libraryDefaults = true
        case let option where option.hasPrefix("-") && option.count > 1:
            badUsage("unknown option '\(option)'")
        default:
            lines.append((argument, nil))
        }
    }
    for line in lines {
        switch urls(for: line.text) {
        case .success(let found): options.urls += found
        case .failure(let problem):
            guard let origin = line.origin else { badUsage(problem.message) }
            FileHandle.standardError.write(Data("imago-gallery: \(origin): \(problem.message); skipped\n".utf8))
        }
    }
    if options.urls.isEmpty { badUsage("no images given") }
    return options
}

/// Why an argument or line names no image.
struct NoImage: Error {
    let message: String
}

/// The file extensions of the images a folder is searched for.
let imageExtensions: Set<String> = ["jpg", "jpeg", "png", "gif", "webp", "avif", "bmp", "ico", "tif", "tiff"]

/// The URL an argument names: a URL as it is, a file as its file URL, a folder as
/// the images in it (sorted by name, not looking into subfolders).
func urls(for argument: String) -> Result<[URL], NoImage> {
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: argument, isDirectory: &isFolder) else {
        guard let url = URL(string: argument), let scheme = url.scheme?.lowercased() else {
            // Something with a scheme that does not parse is a URL gone wrong, not a file.
            let looksLikeURL = argument.contains("://")
            return .failure(NoImage(message: looksLikeURL ? "not a valid URL: '\(argument)'" : "no such file or folder: '\(argument)'"))
        }
        guard ["http", "https", "file", "data"].contains(scheme) else {
            return .failure(NoImage(message: "not an http, https, file or data URL: '\(argument)'"))
        }
        return .success([url])
    }
    let url = URL(fileURLWithPath: argument, isDirectory: isFolder.boolValue).standardizedFileURL
    guard isFolder.boolValue else { return .success([url]) }
    guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else {
        return .failure(NoImage(message: "cannot read the folder '\(argument)'"))
    }
    return .success(names.filter { imageExtensions.contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
        .map { url.appendingPathComponent($0, isDirectory: false) })
}

/// One colour, for the placeholder.
func square(_ side: Int, _ r: UInt8, _ g: UInt8, _ b: UInt8) -> DecodedImage {
    var pixels = [UInt8](repeating: 255, count: side * side * 4)
    for i in stride(from: 0, to: pixels.count, by: 4) {
        (pixels[i], pixels[i + 1], pixels[i + 2]) = (r, g, b)
    }
    return DecodedImage(bitmap: Bitmap(width: side, height: side, pixels: pixels), format: .png)
}

let started = monotonicSeconds()
let options = parse(Array(CommandLine.arguments.dropFirst()))
// Decodes run on many threads, and glibc gives each thread that allocates at once an
// arena of its own, each keeping freed pages: two arenas, whatever the threads, keep
// the heap near what is in use, and the freed pages are handed back after each burst
// of loads.
if !options.libraryDefaults { mallopt(M_ARENA_MAX, 2) }
guard gtk_init_check() != 0 else {
    FileHandle.standardError.write(Data("imago-gallery: cannot open a display (is DISPLAY set? try xvfb-run)\n".utf8))
    exit(1)
}
attachMainActorToGLib()

let window = gtk_window_new()!
gtk_window_set_title(window.cast(GtkWindow.self), "Imago gallery")
gtk_window_set_default_size(window.cast(GtkWindow.self), 900, 640)
var running = true
connectSignal(window.object, "destroy") { _ in running = false }

/// A broken picture: a grey card with a dark frame and a red cross, for a thumbnail
/// that could not be loaded.
func brokenPicture(_ side: Int) -> DecodedImage {
    var pixels = [UInt8](repeating: 255, count: side * side * 4)
    let frame = side / 4, thickness = max(2, side / 32)
    for y in 0..<side {
        for x in 0..<side {
            let i = (y * side + x) * 4
            var rgb: (UInt8, UInt8, UInt8) = (225, 225, 225)
            let inside = (frame..<(side - frame)).contains(x) && (frame..<(side - frame)).contains(y)
            let onFrame = inside && (x < frame + thickness || x >= side - frame - thickness || y < frame + thickness || y >= side - frame - thickness)
            let onCross = inside && (abs(x - y) < thickness || abs(x + y - side + 1) < thickness)
            if onFrame { rgb = (110, 110, 110) } else if onCross { rgb = (200, 50, 50) }
            (pixels[i], pixels[i + 1], pixels[i + 2]) = rgb
        }
    }
    return DecodedImage(bitmap: Bitmap(width: side, height: side, pixels: pixels), format: .png)
}

/// The gallery keeps its thumbnails on disk apart from full images, each in a cache
/// of its own beside Imago's default one: opening large photos never pushes the
/// thumbnails out, so a relaunch shows the grid from disk. Thumbnails are stored as
/// made (small), full images as the server sent them.
let cacheRoot = DiskCache.defaultDirectory.deletingLastPathComponent().appendingPathComponent("imago-gallery", isDirectory: true)
/// In memory, the thumbnails have a cache of their own too, of a few screens' worth
/// (64 MiB: 650 thumbnails of 160 points): scrolled past, a thumbnail comes back from
/// disk, so the process stays as small for 5,000 images as for 500.
func galleryThumbnailLoader() -> ImageTargetLoader {
    ImageTargetLoader(loader: ImageLoader(
        configuration: .init(
            diskCache: DiskCache(directory: cacheRoot.appendingPathComponent("thumbnails", isDirectory: true), sizeLimit: 512 << 20),
            storagePolicy: .processed, concurrentLoads: 6),
        cache: ImageCache(costLimit: 64 << 20)))
}
let fullImageLoader = options.libraryDefaults ? ImageTargetLoader.shared : ImageTargetLoader(loader: ImageLoader(configuration: .init(
    diskCache: DiskCache(directory: cacheRoot.appendingPathComponent("originals", isDirectory: true), sizeLimit: 512 << 20),
    storagePolicy: .originals)))

let grid = options.libraryDefaults
    ? ImageGrid(urls: options.urls, cellSize: options.size)
    : ImageGrid(urls: options.urls, cellSize: options.size, targetLoader: galleryThumbnailLoader())
/// What the cells load through: the gallery's own loader, or the one the grid chose.
let thumbnailLoader = grid.targetLoader
grid.placeholder = square(8, 225, 225, 225)
grid.options.failureImage = brokenPicture(64)
grid.didBind = { cell, _ in gtk_widget_set_tooltip_text(cell.widget, nil) }
grid.didFail = { cell, index, error in
    gtk_widget_set_tooltip_text(cell.widget, "\(grid.accessibleLabel(at: index) ?? ""): \(error)")
}

let status = gtk_label_new("")!
gtk_label_set_xalign(status.opaque, 0)
for margin in [gtk_widget_set_margin_start, gtk_widget_set_margin_end, gtk_widget_set_margin_top, gtk_widget_set_margin_bottom] {
    margin(status, 6)
}
@MainActor
func showStatistics(_ s: ImageGrid.Statistics) {
    gtk_label_set_text(status.opaque, "\(options.urls.count) images · loaded \(s.loaded) · failed \(s.failed) · in flight \(s.inFlight) · cache hits \(s.memoryHits + s.diskHits) (memory \(s.memoryHits), disk \(s.diskHits))")
}
/// Hands freed heap pages back to the system, off the main thread, after every 100
/// images and whenever the loads on screen are done.
final class HeapTrimmer: Sendable {
    private let state = Mutex((busy: false, loadedAtLastTrim: 0))

    func loadsChanged(_ s: ImageGrid.Statistics) {
        let trim = state.withLock { state -> Bool in
            guard !state.busy, s.loaded != state.loadedAtLastTrim,
                s.inFlight == 0 || s.loaded - state.loadedAtLastTrim >= 100
            else { return false }
            state = (true, s.loaded)
            return true
        }
        guard trim else { return }
        DispatchQueue.global(qos: .utility).async {
            malloc_trim(0)
            self.state.withLock { $0.busy = false }
        }
    }
}
let heapTrimmer = HeapTrimmer()
grid.didChangeStatistics = { statistics in
    showStatistics(statistics)
    if !options.libraryDefaults { heapTrimmer.loadsChanged(statistics) }
}
showStatistics(grid.statistics)

let box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 0)!
gtk_box_append(box.cast(GtkBox.self), grid.widget)
gtk_box_append(box.cast(GtkBox.self), status)
gtk_window_set_child(window.cast(GtkWindow.self), box)

/// The full-image windows open now, each with its view.
var detailViews: [UnsafeMutableRawPointer: ImageView] = [:]

grid.didActivate = { index, _ in
    guard let url = grid.url(at: index), let request = grid.request(for: index) else { return }
    let detail = gtk_window_new()!
    gtk_window_set_title(detail.cast(GtkWindow.self), grid.accessibleLabel(at: index) ?? url.absoluteString)
    gtk_window_set_default_size(detail.cast(GtkWindow.self), 800, 600)
    gtk_window_set_transient_for(detail.cast(GtkWindow.self), window.cast(GtkWindow.self))
    let view = ImageView(targetLoader: fullImageLoader, contentMode: .aspectFit)
    gtk_window_set_child(detail.cast(GtkWindow.self), view.widget)
    detailViews[detail.object] = view
    connectSignal(detail.object, "destroy") { _ in detailViews[detail.object] = nil }
    // The thumbnail, already in memory, stands in at once; the full image (at the
    // window's size) replaces it, sharpening in place as its scans or passes arrive
    // when it is a progressive JPEG or an interlaced PNG.
    let thumbnail = thumbnailLoader.loader.cachedImage(for: request)
    let scale = Double(gtk_widget_get_scale_factor(window))
    view.setImage(
        with: url, placeholder: thumbnail,
        options: ImageDisplayOptions(
            targetSize: TargetSize(points: 800, 600, scale: scale, contentMode: .aspectFit), showsProgressivePreviews: true))
    gtk_window_present(detail.cast(GtkWindow.self))
}

// Before the window shows: its first layout binds the first cells.
if let passes = options.benchmarkPasses {
    runBenchmark(grid: grid, window: window, loader: thumbnailLoader.loader, passes: passes, started: started)
}
gtk_window_present(window.cast(GtkWindow.self))

var screenshotFailed = false
if let screenshot = options.screenshot {
    let started = monotonicSeconds()
    var settledAt: Double?
    addTickCallback(to: window) { time in
        let s = grid.statistics
        let settled = s.inFlight == 0 && s.loaded + s.failed > 0
        if settled, settledAt == nil { settledAt = time }
        if !settled { settledAt = nil }
        // Past the crossfades of the last images, or out of patience.
        guard settledAt.map({ time - $0 > 0.6 }) == true || time - started > 30 else { return true }
        if WidgetCapture.savePNG(of: window, to: screenshot) {
            print("saved \(screenshot)")
        } else {
            FileHandle.standardError.write(Data("imago-gallery: could not write \(screenshot)\n".utf8))
            screenshotFailed = true
        }
        gtk_window_destroy(window.cast(GtkWindow.self))
        return false
    }
}

while running {
    g_main_context_iteration(nil, 1)
}
if screenshotFailed { exit(1) }
