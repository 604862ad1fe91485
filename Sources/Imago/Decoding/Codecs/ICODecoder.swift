import Foundation

extension ImageDecoders {
    /// ICO and CUR, Imago's own decoder: a directory of images, each a bitmap (with its
    /// 1-bit AND mask for transparency) or a PNG file.
    ///
    /// One entry is decoded: the smallest that covers `DecodingOptions.targetSize` without
    /// upscaling, or the largest when there is no target or none is large enough, with
    /// the deeper colour winning between entries of one size — what browsers pick for a
    /// favicon drawn at a given size. Sizes come from each entry's own header, not the
    /// directory, whose one-byte fields cannot say 256 and are often wrong.
    ///
    /// CUR files decode like ICO (the hotspot is not an image property), and both report
    /// `ImageFormat.ico`.
    @_spi(Internals) public struct ICO: ImageDecoding {
        /// Makes the decoder; it holds no state.
        @_spi(Internals) public init() {}

        /// Takes data sniffed as ICO or CUR, nothing else.
        @_spi(Internals) public func canDecode(_ data: Data, format: ImageFormat?) -> Bool {
            format == .ico
        }

        /// Decodes the best entry. Throws `imageTooLarge` from that entry's header,
        /// before any pixel buffer exists, and `decodingFailed` for truncated or corrupt
        /// data.
        @_spi(Internals) public func decode(_ data: Data, options: DecodingOptions) throws(ImagoError) -> DecodedImage {
            let entry = try data.withBytes { bytes throws(ImagoError) in try Self.choose(LittleEndianBytes(bytes), options: options) }
            switch entry.kind {
            case .png:
                // The PNG decoder of the platform (libpng on Linux, ImageIO on Apple)
                // does the work; the icon's size and format are what the caller sees.
                let png = data.subdata(in: data.startIndex + entry.offset..<data.startIndex + entry.offset + entry.length)
                var pngOptions = options
                pngOptions.targetSize = nil
                let decoders = ImageDecoders.Registry.builtIn.filter { $0.canDecode(png, format: .png) }
                guard let decoder = decoders.first else { throw Self.failure("this platform has no PNG decoder for the PNG entry") }
                do {
                    let image = try decoder.decode(png, options: pngOptions)
                    return DecodedImage(bitmap: image.bitmap, format: .ico)
                } catch {
                    if case .decodingFailed(_, let reason, let codec, _) = error {
                        throw .decodingFailed(format: .ico, reason: "PNG entry: \(reason)", codec: codec)
                    }
                    throw error
                }
            case .dib(let header):
                let bitmap = try data.withBytes { bytes throws(ImagoError) in
                    try DIB.decode(LittleEndianBytes(bytes), header: header, pixelOffset: 0, andMask: true,
                                   format: .ico, options: options)
                }
                return DecodedImage(bitmap: bitmap, format: .ico)
            }
        }

        static func failure(_ reason: String) -> ImagoError {
            .decodingFailed(format: .ico, reason: reason, codec: nil)
        }

        /// One image of the directory, sized from its own header.
        struct Entry {
            enum Kind {
                case png
                case dib(DIB.Header)
            }
            let kind: Kind
            let offset: Int
            let length: Int
            let width: Int
            let height: Int
            let bitCount: Int
        }

        /// Reads the directory and picks the entry to decode. Entries whose header is
        /// unreadable are passed over, as browsers do; a file with no usable entry is an
        /// error naming the first entry's problem.
        static func choose(_ r: LittleEndianBytes, options: DecodingOptions) throws(ImagoError) -> Entry {
            guard r.has(0, 6), r.u16(0) == 0, r.u16(2) == 1 || r.u16(2) == 2 else {
                throw failure("the data is not an ICO or CUR file")
            }
            let count = r.u16(4)
            guard count > 0 else { throw failure("the icon directory is empty") }
            guard r.has(6, 16 * count) else { throw failure("the data ends inside the icon directory") }

            var entries: [Entry] = []
            var firstProblem: ImagoError?
            for index in 0..<count {
                let d = 6 + 16 * index
                let length = Int(r.u32(d + 8)), offset = Int(r.u32(d + 12))
                // An entry reaching past the end means the file was cut short: an error,
                // not a quiet fallback to another entry.
                guard r.has(offset, length) else { throw failure("the data ends before entry \(index + 1) does") }
                guard length >= 16 else {
                    firstProblem = firstProblem ?? failure("entry \(index + 1) is too short to hold an image")
                    continue
                }
                let available = length
                let isPNG = r.has(offset, 24) && r.bytes[offset] == 0x89 && r.bytes[offset + 1] == 0x50
                    && r.bytes[offset + 2] == 0x4E && r.bytes[offset + 3] == 0x47
                if isPNG {
                    // IHDR's width and height, big-endian, right after the signature.
                    func be32(_ o: Int) -> Int {
                        Int(r.bytes[o]) << 24 | Int(r.bytes[o + 1]) << 16 | Int(r.bytes[o + 2]) << 8 | Int(r.bytes[o + 3])
                    }
                    // PNG caps each side at 2³¹ − 1; an entry claiming more is unusable, as
                    // libpng would say, and its area would not fit the comparison below.
                    let width = be32(offset + 16), height = be32(offset + 20)
                    if width <= Int(Int32.max) && height <= Int(Int32.max) {
                        entries.append(Entry(kind: .png, offset: offset, length: available, width: width, height: height, bitCount: 32))
                    } else {
                        firstProblem = firstProblem ?? failure("entry \(index + 1): the PNG header gives \(width)×\(height)")
                    }
                    continue
                }
                do {
                    let header = try DIB.Header(r, at: offset, inIcon: true, format: .ico)
                    entries.append(Entry(kind: .dib(header), offset: offset, length: available,
                                         width: header.width, height: header.height, bitCount: header.bitCount))
                } catch {
                    firstProblem = firstProblem ?? .decodingFailed(
                        format: .ico, reason: "entry \(index + 1): \(error.reasonText)", codec: nil)
                }
            }
            guard !entries.isEmpty else { throw firstProblem ?? failure("the icon has no usable image") }

            let sizes = entries.map { ImageSourceRules.Entry(width: $0.width, height: $0.height, depth: $0.bitCount) }
            guard let best = ImageSourceRules.bestEntry(sizes, for: options.targetSize) else { throw failure("the icon has no usable image") }
            return entries[best]
        }
    }
}

extension ImagoError {
    /// The reason of a decoding error, or its description otherwise: for errors
    /// wrapped into another's message.
    var reasonText: String {
        if case .decodingFailed(_, let reason, _, _) = self { return reason }
        return String(describing: self)
    }
}
