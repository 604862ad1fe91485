import Foundation
import Imago
import ImagoCommandLine

/// `imago sheet URL... -o sheet.png`: a contact sheet, loaded as a batch. Each cell
/// shows its image decoded to fit the cell's box, or a placeholder when the load
/// failed.
let sheetCommand = Command(
    name: "sheet",
    synopsis: "URL... | --input FILE -o PATH [--size PX] [--columns N] [--cache-dir DIR | --no-disk-cache] [--header 'NAME: VALUE']... [--redis URL[,URL...]] [--concurrency N] [--json]",
    summary: """
        Load images (URLs or file paths) through the full pipeline into the cells of a contact sheet and \
        write it as one PNG (or .jpg, .webp by extension). Each image is fitted to its \
        cell; a URL that fails gets a crossed gray placeholder, its reason on \
        standard error and exit status 1, and the sheet is still written. The file \
        appears whole or not at all.
        """,
    options: [
        .value("-o", "PATH", "where to write the sheet (required)"),
        .value("--output", "PATH", "the same as -o"),
        .value("--input", "FILE", "read URLs or file paths from FILE, one per line ('-' for standard input; blank lines and # comments skipped)"),
        .value("--size", "PX", "the side of each square cell in pixels (default \(SheetLayout.defaultCell))"),
        .value("--columns", "N", "cells per row (default \(SheetLayout.defaultColumns); fewer when there are fewer URLs)"),
    ] + LoaderOptions.table + [
        .flag("--json", "print one JSON record per URL in input order (with its cell and --input line), then a summary record"),
    ],
    run: { arguments in await runSheet(arguments) })

/// Where the cells go: `columns` across, as many rows as the URLs need, no gaps.
struct SheetLayout: Sendable {
    static let defaultCell = 256
    static let defaultColumns = 6
    /// The most pixels a sheet may have (about 1 GB of RGBA): more is refused as bad
    /// usage before anything loads, rather than failing after every transfer.
    static let maximumPixels = 256 * 1024 * 1024

    let count: Int
    let cell: Int
    let columns: Int

    init(count: Int, cell: Int, columns: Int) {
        self.count = count
        self.cell = cell
        self.columns = max(1, min(columns, count))
    }

    var rows: Int { (count + columns - 1) / columns }
    var width: Int { columns * cell }
    var height: Int { rows * cell }

    /// The top-left corner of cell `index`, counted row by row.
    func origin(of index: Int) -> (x: Int, y: Int) {
        ((index % columns) * cell, (index / columns) * cell)
    }
}

/// The sheet's pixels, which the cells draw into. Opaque: images with alpha are
/// composited over the background, so the PNG looks the same in any viewer.
@MainActor
final class SheetCanvas {
    /// A dark gray, against which both light and dark images stand out.
    static let background: (r: UInt8, g: UInt8, b: UInt8) = (32, 32, 32)

    let layout: SheetLayout
    private(set) var pixels: [UInt8]

    init(layout: SheetLayout) {
        self.layout = layout
        let bg = Self.background
        pixels = [UInt8](repeating: 255, count: layout.width * layout.height * 4)
        for i in stride(from: 0, to: pixels.count, by: 4) {
            pixels[i] = bg.r
            pixels[i + 1] = bg.g
            pixels[i + 2] = bg.b
        }
    }

    /// Clears cell `index` to the background and draws `bitmap` centred in it
    /// (cropped to the cell if it is larger).
    func draw(_ bitmap: Bitmap?, inCell index: Int) {
        let (cellX, cellY) = layout.origin(of: index)
        let size = layout.cell, stride = layout.width * 4
        let bg = Self.background
        pixels.withUnsafeMutableBufferPointer { out in
            for y in cellY..<cellY + size {
                var i = y * stride + cellX * 4
                for _ in 0..<size {
                    out[i] = bg.r
                    out[i + 1] = bg.g
                    out[i + 2] = bg.b
                    out[i + 3] = 255
                    i += 4
                }
            }
            guard let bitmap else { return }
            let w = min(bitmap.width, size), h = min(bitmap.height, size)
            let left = cellX + (size - w) / 2, top = cellY + (size - h) / 2
            let sourceX = (bitmap.width - w) / 2, sourceY = (bitmap.height - h) / 2
            bitmap.pixels.withUnsafeBufferPointer { source in
                for row in 0..<h {
                    var s = (sourceY + row) * bitmap.bytesPerRow + sourceX * 4
                    var d = (top + row) * stride + left * 4
                    for _ in 0..<w {
                        // Premultiplied "over" an opaque background: colour + bg × (1 − alpha).
                        let rest = 255 - UInt32(source[s + 3])
                        out[d] = Self.over(source[s], bg.r, rest)
                        out[d + 1] = Self.over(source[s + 1], bg.g, rest)
                        out[d + 2] = Self.over(source[s + 2], bg.b, rest)
                        out[d + 3] = 255
                        s += 4
                        d += 4
                    }
                }
            }
        }
    }

    private static func over(_ colour: UInt8, _ background: UInt8, _ rest: UInt32) -> UInt8 {
        UInt8(min(255, UInt32(colour) + (UInt32(background) * rest + 127) / 255))
    }

    /// The background left around a placeholder.
    static func placeholderInset(cell: Int) -> Int { max(1, cell / 32) }

    var bitmap: Bitmap { Bitmap(width: layout.width, height: layout.height, pixels: pixels) }

    /// What a failed cell shows: a mid gray box crossed corner to corner in a darker
    /// gray, plainly not an image; inset from the cell's edges, so that failed cells
    /// side by side stay apart.
    static func placeholder(cell: Int) -> DecodedImage {
        let size = cell - 2 * placeholderInset(cell: cell)
        let fill: UInt8 = 128, cross: UInt8 = 72
        let thickness = max(1, size / 64)
        var pixels = [UInt8](repeating: 255, count: size * size * 4)
        for y in 0..<size {
            for x in 0..<size {
                let onCross = abs(x - y) < thickness || abs(x - (size - 1 - y)) < thickness
                let value = onCross ? cross : fill
                let i = (y * size + x) * 4
                pixels[i] = value
                pixels[i + 1] = value
                pixels[i + 2] = value
            }
        }
        return DecodedImage(bitmap: Bitmap(width: size, height: size, pixels: pixels), format: .png)
    }
}

/// What `--json` prints for each URL.
private struct SheetRecord: Encodable {
    let url: String
    var line: Int?
    let cell: Int
    var ok = false
    var error: String?
    var width: Int?
    var height: Int?
    var source: String?
    var bytes: Int?
}

private struct SheetSummary: Encodable {
    struct Counts: Encodable {
        let items: Int
        let failed: Int
        let bytes: Int
        let hits: [String: Int]
        let transfers: Int
        let retries: Int
        let seconds: Double
        let output: String
        let width: Int
        let height: Int
        let columns: Int
        let rows: Int
    }
    let summary: Counts
}

@MainActor
private func runSheet(_ arguments: Arguments) async -> Int32 {
    let urls: [InputURL]
    let options: LoaderOptions
    let layout: SheetLayout
    let output: String
    let format: ImageFormat
    do throws(UsageError) {
        guard let path = arguments.string("-o") ?? arguments.string("--output") else {
            throw UsageError(message: "sheet needs -o PATH, where to write the sheet")
        }
        output = path
        format = try outputFormat(of: path, option: "-o")
        urls = try InputReader(arguments, command: "sheet").readAll()
        guard !urls.isEmpty else {
            throw UsageError(message: "sheet needs at least one URL, and --input \(arguments.string("--input") ?? "-") held none")
        }
        options = try LoaderOptions(arguments)
        layout = SheetLayout(
            count: urls.count, cell: try arguments.integer("--size", in: 8...4096) ?? SheetLayout.defaultCell,
            columns: try arguments.integer("--columns", in: 1...1000) ?? SheetLayout.defaultColumns)
        guard layout.width * layout.height <= SheetLayout.maximumPixels else {
            throw UsageError(message: """
                a sheet of \(urls.count) cells of \(layout.cell) px would be \(layout.width)×\(layout.height) pixels, \
                more than \(SheetLayout.maximumPixels / 1_048_576) megapixels: give a smaller --size or fewer URLs
                """)
        }
    } catch {
        Output.error(error.message)
        return ExitStatus.usage
    }
    let json = arguments.flag("--json")
    let counter = CountingLoader(options.makeDataLoader(), policy: options.retryPolicy)
    let loader = options.makeLoader(counter: counter, repeats: Set(urls.map(\.text)).count < urls.count)
    let canvas = SheetCanvas(layout: layout)
    let placeholder = SheetCanvas.placeholder(cell: layout.cell)
    let bar = ProgressBar(total: urls.count)
    var records = urls.enumerated().map { SheetRecord(url: $1.text, line: $1.line, cell: $0) }
    let start = ContinuousClock.now

    // Identical URLs coalesce, and the loader's queue keeps `concurrency` transfers
    // running. Text that is not a URL never reaches the loader; its cell gets the
    // placeholder a failed load shows.
    let box = TargetSize(width: layout.cell, height: layout.cell, contentMode: .aspectFit)
    var cells: [Int] = []
    var requests: [ImageRequest] = []
    for (index, input) in urls.enumerated() {
        guard let url = input.url else {
            canvas.draw(placeholder.bitmap, inCell: index)
            records[index].error = ImagoError.invalidURL(input.text).description
            bar.advance(bytes: 0)
            continue
        }
        cells.append(index)
        requests.append(ImageRequest(url: url, targetSize: box))
    }
    for await item in loader.images(for: requests) {
        let cell = cells[item.index]
        counter.loadEnded(item.request.url)
        switch item.result {
        case .success(let response):
            canvas.draw(response.image.bitmap, inCell: cell)
            records[cell].ok = true
            records[cell].width = response.image.width
            records[cell].height = response.image.height
            records[cell].source = response.source.rawValue
            records[cell].bytes = response.metrics.bytes
            bar.advance(bytes: response.metrics.bytes)
        case .failure(let error):
            canvas.draw(placeholder.bitmap, inCell: cell)
            records[cell].error = error.description
            bar.advance(bytes: 0)
        }
    }
    bar.finish()
    // Revalidations of stale images served meanwhile, then disk writes, go on in the
    // background; the process must not end before them (the first within a bound:
    // a slow server must not hold a finished run).
    await loader.waitForBackgroundWork(timeout: LoaderOptions.backgroundWorkTimeout)
    await options.disk?.flush()
    options.finishSharedWrites()

    let written: Bool
    do throws(ImagoError) {
        try DecodedImage(bitmap: canvas.bitmap, format: format).write(to: URL(fileURLWithPath: output), format: format)
        written = true
    } catch {
        Output.error("the sheet was not written: \(error)")
        written = false
    }

    let elapsed = (ContinuousClock.now - start).seconds
    let failed = records.filter { !$0.ok }
    var hits: [String: Int] = [:]
    for record in records where record.ok { hits[record.source ?? "?", default: 0] += 1 }
    let counts = LoadSummary(items: urls.count, failed: failed.count, hits: hits, counter: counter, seconds: elapsed, shared: options.shared)
    if json {
        for record in records { Output.json(record) }
        Output.json(SheetSummary(summary: .init(
            items: counts.items, failed: counts.failed, bytes: counts.bytes, hits: counts.hits, transfers: counts.transfers,
            retries: counts.retries, seconds: counts.seconds, output: written ? output : "", width: layout.width, height: layout.height,
            columns: layout.columns, rows: layout.rows)))
    } else {
        for record in failed { Output.error(failureLine(url: record.url, line: record.line, error: record.error ?? "failed")) }
        Output.line(counts.text)
        if written {
            Output.line("wrote \(output): \(layout.columns)×\(layout.rows) cells of \(layout.cell) px, \(layout.width)×\(layout.height) pixels")
        }
    }
    if !written { return ExitStatus.someFailed }
    return failed.isEmpty ? ExitStatus.success : ExitStatus.someFailed
}
