import Foundation

/// A minimal GIF writer for building test inputs byte by byte.
///
/// Its LZW output is "uncompressed": every pixel is a literal code, and a clear code
/// comes before the string table would grow past the first code width, so the data
/// is valid for any decoder without implementing compression.
public struct TestGIF {
    /// One image of the file: its place on the screen, palette indices and controls.
    public struct Frame {
        /// The frame's place and size on the logical screen.
        public var left = 0, top = 0, width: Int, height: Int
        /// One palette index per pixel, row by row.
        public var indices: [UInt8]
        /// What happens to the frame's area before the next (0–3, as GIF numbers them).
        public var disposal = 0
        /// How long the frame shows, in hundredths of a second.
        public var delay = 0
        /// The palette index that is transparent, if any.
        public var transparent: Int?
        /// Whether the rows are stored in GIF's four interlaced passes.
        public var interlaced = false
        /// A local colour table.
        public var palette: [[UInt8]]?
        /// Whether a Graphics Control Extension precedes the frame.
        public var control = true

        /// A frame with the given fields; the rest as most GIFs have them.
        public init(
            left: Int = 0, top: Int = 0, width: Int, height: Int, indices: [UInt8], disposal: Int = 0, delay: Int = 0,
            transparent: Int? = nil, interlaced: Bool = false, palette: [[UInt8]]? = nil, control: Bool = true
        ) {
            self.left = left
            self.top = top
            self.width = width
            self.height = height
            self.indices = indices
            self.disposal = disposal
            self.delay = delay
            self.transparent = transparent
            self.interlaced = interlaced
            self.palette = palette
            self.control = control
        }
    }

    /// Black, red, green, blue: the letters K, R, G, B in expectations.
    public static let basicPalette: [[UInt8]] = [[0, 0, 0], [255, 0, 0], [0, 255, 0], [0, 0, 255]]
    /// 256 greys, entry n being (n, n, n).
    public static let greyPalette: [[UInt8]] = (0..<256).map { [UInt8($0), UInt8($0), UInt8($0)] }

    /// The logical screen's width.
    public var width: Int
    /// The logical screen's height.
    public var height: Int
    /// The loop count of the application extension; nil writes none.
    public var loop: Int?
    /// The application extension's identifier (NETSCAPE2.0, or another to test).
    public var loopApplication: String
    /// The background colour's palette index.
    public var background: Int
    /// The global colour table; nil writes none.
    public var palette: [[UInt8]]?
    /// The frames, in order.
    public var frames: [Frame] = []

    /// A file with a screen of `width` × `height` and no frames yet.
    public init(width: Int, height: Int, loop: Int? = nil, loopApplication: String = "NETSCAPE2.0",
         background: Int = 0, palette: [[UInt8]]? = TestGIF.basicPalette) {
        self.width = width
        self.height = height
        self.loop = loop
        self.loopApplication = loopApplication
        self.background = background
        self.palette = palette
    }

    /// The bytes of the file.
    public func encode() -> [UInt8] {
        var out = Array("GIF89a".utf8)
        out += le16(width) + le16(height)
        out += [palette.map { 0x80 | 0x70 | Self.sizeBits($0.count) } ?? 0, UInt8(background), 0]
        if let palette { out += Self.table(palette) }
        if let loop {
            out += [0x21, 0xFF, 11] + Array(loopApplication.utf8) + [3, 1] + le16(loop) + [0]
        }
        for frame in frames {
            if frame.control {
                let packed = UInt8(frame.disposal << 2) | (frame.transparent == nil ? 0 : 1)
                out += [0x21, 0xF9, 4, packed] + le16(frame.delay) + [UInt8(frame.transparent ?? 0), 0]
            }
            out += [0x2C] + le16(frame.left) + le16(frame.top) + le16(frame.width) + le16(frame.height)
            out += [(frame.palette.map { 0x80 | Self.sizeBits($0.count) } ?? 0) | (frame.interlaced ? 0x40 : 0)]
            if let local = frame.palette { out += Self.table(local) }
            var rows = Array(0..<frame.height)
            if frame.interlaced {
                rows = Array(stride(from: 0, to: frame.height, by: 8)) + Array(stride(from: 4, to: frame.height, by: 8))
                    + Array(stride(from: 2, to: frame.height, by: 4)) + Array(stride(from: 1, to: frame.height, by: 2))
            }
            let ordered = rows.flatMap { frame.indices[$0 * frame.width..<($0 + 1) * frame.width] }
            let largest = Int(frame.indices.max() ?? 0)
            let codeSize = max(2, (0...8).first { 1 << $0 > largest }!)
            out += [UInt8(codeSize)]
            let data = Self.lzw(ordered, codeSize: codeSize)
            for start in stride(from: 0, to: data.count, by: 255) {
                let block = data[start..<min(start + 255, data.count)]
                out += [UInt8(block.count)] + block
            }
            out += [0]
        }
        out.append(0x3B)
        return out
    }

    private func le16(_ value: Int) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF)] }

    /// The packed-field size bits for a table of `count` entries, padded to a power of 2.
    private static func sizeBits(_ count: Int) -> UInt8 {
        UInt8((1...8).first { 1 << $0 >= count }! - 1)
    }

    private static func table(_ colours: [[UInt8]]) -> [UInt8] {
        let size = 1 << (Int(sizeBits(colours.count)) + 1)
        return colours.flatMap { $0 } + Array(repeating: 0, count: (size - colours.count) * 3)
    }

    /// `indices` as GIF image data of minimum code size `codeSize`, every pixel a literal code.
    public static func lzw(_ indices: [UInt8], codeSize: Int) -> [UInt8] {
        let clear = 1 << codeSize, width = codeSize + 1
        var bytes: [UInt8] = [], accumulator = 0, bits = 0
        func put(_ code: Int) {
            accumulator |= code << bits
            bits += width
            while bits >= 8 {
                bytes.append(UInt8(accumulator & 0xFF))
                accumulator >>= 8
                bits -= 8
            }
        }
        put(clear)
        var sinceClear = 0
        for index in indices {
            // The table grows by one entry a code after the first; the width would
            // step up at the (clear − 1)th code, so clear before then.
            if sinceClear == clear - 2 {
                put(clear)
                sinceClear = 0
            }
            put(Int(index))
            sinceClear += 1
        }
        put(clear + 1)
        if bits > 0 { bytes.append(UInt8(accumulator & 0xFF)) }
        return bytes
    }
}
