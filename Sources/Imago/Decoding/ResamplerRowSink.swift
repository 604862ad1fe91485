#if os(Linux)
/// Where a codec's rows (libpng's, libheif's) or runs of a row in any order (an
/// interlaced PNG's passes) go for a thumbnail: when the image has straight alpha,
/// converted to sRGB by `colours` and premultiplied in one row of scratch (see
/// `ColourManagement.Plan.convertAndPremultiply`), then into the resampler.
final class ResamplerRowSink {
    let stream: Resampler.Stream
    let premultiplies: Bool
    let colours: ColourManagement.Plan
    let scratch: UnsafeMutableRawBufferPointer

    /// Whether the rows reach the resampler in sRGB already: the decoder then leaves
    /// the thumbnail's colours alone. An opaque image's are converted once small.
    var converts: Bool { premultiplies && colours.converts }

    init(stream: Resampler.Stream, width: Int, premultiplies: Bool, colours: ColourManagement.Plan = .none) {
        self.stream = stream
        self.premultiplies = premultiplies
        self.colours = colours
        scratch = .allocate(byteCount: width * 4, alignment: 16)
    }

    deinit { scratch.deallocate() }

    /// Row `number`, whole, rows in order (`Resampler.Stream.append`).
    func take(_ row: UnsafePointer<UInt8>, number: Int) {
        guard premultiplies else { return stream.append(row: number, row) }
        scratch.copyMemory(from: UnsafeRawBufferPointer(start: row, count: scratch.count))
        colours.convertAndPremultiply(scratch, count: scratch.count / 4)
        stream.append(row: number, scratch.baseAddress!.assumingMemoryBound(to: UInt8.self))
    }

    /// Pixels of row `y`, packed (pixel k is column `first + k × step`), in any order
    /// of rows and runs (`Resampler.Stream.scatter`).
    func take(_ pixels: UnsafePointer<UInt8>, y: Int, first: Int, step: Int, count: Int) {
        guard premultiplies else { return stream.scatter(row: y, pixels, first: first, step: step, count: count) }
        scratch.copyMemory(from: UnsafeRawBufferPointer(start: pixels, count: count * 4))
        colours.convertAndPremultiply(scratch, count: count)
        stream.scatter(row: y, scratch.baseAddress!.assumingMemoryBound(to: UInt8.self), first: first, step: step, count: count)
    }
}
#endif
