/// The derivation references (`dimg`) of a HEIF file, where a grid or overlay image
/// names the images it is made of, and the auxiliary ones (`auxl`), where an alpha
/// plane names its image. libheif 1.15 follows them without checking for a cycle,
/// so a grid that names itself, directly or through another, recursed until the stack
/// overflowed (and, with a thread per tile, until the process ran out of threads).
/// Read here from the boxes, before libheif decodes anything.
enum HEIFReferences {
    /// How many derived images may stand on one another; real files use one (a grid
    /// of coded tiles), and the format leaves room for an overlay of grids.
    static let maximumDepth = 4

    /// Why `bytes` must not be decoded, or nil when its references are sound (or
    /// there are none, or the boxes cannot be read: libheif then says what is wrong).
    static func problem(in bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let meta = children(of: bytes, in: 0..<bytes.count).first(where: { $0.type == "meta" }),
              meta.body.count >= 4
        else { return nil }
        var derived: [UInt32: [UInt32]] = [:]
        for iref in children(of: bytes, in: meta.body.lowerBound + 4..<meta.body.upperBound)
        where iref.type == "iref" && iref.body.count >= 4 {
            let wide = bytes[iref.body.lowerBound] != 0  // version 1: 32-bit item IDs
            for reference in children(of: bytes, in: iref.body.lowerBound + 4..<iref.body.upperBound)
            where reference.type == "dimg" || reference.type == "auxl" {
                var reader = Reader(bytes: bytes, range: reference.body)
                guard let from = reader.id(wide: wide), let count = reader.uint16() else { continue }
                var to: [UInt32] = []
                for _ in 0..<count {
                    guard let id = reader.id(wide: wide) else { break }
                    to.append(id)
                }
                if reference.type == "dimg" {
                    derived[from, default: []] += to
                } else {
                    // `auxl` runs from the auxiliary image (an alpha plane, a depth
                    // map) to its image, and decoding the image decodes it too: a
                    // fuzzed file's alpha plane was a grid of its own image.
                    for image in to { derived[image, default: []].append(from) }
                }
            }
        }
        // Depth-first from every derived image: a path that meets itself is a
        // cycle; one longer than the limit is refused as well.
        var settled = Set<UInt32>()
        func visit(_ item: UInt32, path: [UInt32]) -> String? {
            if path.contains(item) { return "image \(item) is derived from itself" }
            if settled.contains(item) { return nil }
            guard let parts = derived[item] else { return nil }
            if path.count >= maximumDepth { return "derived images are nested more than \(maximumDepth) deep" }
            for part in parts {
                if let problem = visit(part, path: path + [item]) { return problem }
            }
            settled.insert(item)
            return nil
        }
        for item in derived.keys.sorted() {
            if let problem = visit(item, path: []) { return problem }
        }
        return nil
    }

    /// How many items of `type` (`av01`, `hvc1`: coded images) the file declares, 0
    /// when its boxes cannot be read. libavif opens an AV1 decoder for each tile of
    /// a grid and keeps them all until the image is made, some 400 KB each: a
    /// 50 KB file of a thousand tiles took 475 MB. Items of the type that are not
    /// tiles (a thumbnail) are few, and counted too.
    static func itemCount(ofType type: String, in bytes: UnsafeBufferPointer<UInt8>) -> Int {
        guard let meta = children(of: bytes, in: 0..<bytes.count).first(where: { $0.type == "meta" }),
              meta.body.count >= 4
        else { return 0 }
        var count = 0
        for iinf in children(of: bytes, in: meta.body.lowerBound + 4..<meta.body.upperBound)
        where iinf.type == "iinf" && iinf.body.count >= 6 {
            // Version 0 counts its entries in 16 bits, later ones in 32.
            let start = iinf.body.lowerBound + (bytes[iinf.body.lowerBound] == 0 ? 6 : 8)
            for infe in children(of: bytes, in: min(start, iinf.body.upperBound)..<iinf.body.upperBound) where infe.type == "infe" {
                var reader = Reader(bytes: bytes, range: infe.body)
                // Versions 2 and 3 name the item's type, after its ID (32 bits in 3).
                guard let version = reader.read(1), version >= 2, reader.read(3) != nil,
                      reader.id(wide: version >= 3) != nil, reader.uint16() != nil,
                      reader.type() == type
                else { continue }
                count += 1
            }
        }
        return count
    }

    struct Box {
        let type: String
        let body: Range<Int>
    }

    /// The boxes one after another in `range`. A box that claims more than is left
    /// is read to the end of the range and is the last: libheif reads such a box's
    /// fields as far as they go, so a reference in it still counts.
    static func children(of bytes: UnsafeBufferPointer<UInt8>, in range: Range<Int>) -> [Box] {
        var boxes: [Box] = []
        var reader = Reader(bytes: bytes, range: range)
        while true {
            let start = reader.offset
            guard let size32 = reader.uint32(), let type = reader.type() else { break }
            var size = Int(size32)
            if size32 == 1 {
                guard let large = reader.uint64(), large <= UInt64(Int.max) else { break }
                size = Int(large)
            } else if size32 == 0 {
                size = range.upperBound - start
            }
            let header = reader.offset - start
            guard size >= header else { break }
            guard size <= range.upperBound - start else {
                boxes.append(Box(type: type, body: reader.offset..<range.upperBound))
                break
            }
            boxes.append(Box(type: type, body: reader.offset..<start + size))
            reader.offset = start + size
        }
        return boxes
    }

    /// Big-endian fields read within a range, nil past its end.
    struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        let range: Range<Int>
        var offset: Int

        init(bytes: UnsafeBufferPointer<UInt8>, range: Range<Int>) {
            self.bytes = bytes
            self.range = range
            offset = range.lowerBound
        }

        mutating func read(_ count: Int) -> UInt64? {
            guard offset >= range.lowerBound, range.upperBound - offset >= count else { return nil }
            var value: UInt64 = 0
            for i in 0..<count { value = value << 8 | UInt64(bytes[offset + i]) }
            offset += count
            return value
        }

        mutating func uint16() -> UInt16? { read(2).map { UInt16($0) } }
        mutating func uint32() -> UInt32? { read(4).map { UInt32($0) } }
        mutating func uint64() -> UInt64? { read(8) }
        mutating func id(wide: Bool) -> UInt32? { read(wide ? 4 : 2).map { UInt32($0) } }
        mutating func type() -> String? {
            read(4).map { value in String(decoding: (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }, as: UTF8.self) }
        }
    }
}
