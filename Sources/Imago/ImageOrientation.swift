/// The EXIF orientation of a photo: how the stored pixels must be turned to stand
/// upright. Cameras store the sensor's rows as they are and record the turn here.
public enum ImageOrientation: Int, Sendable, Hashable, Codable {
    case up = 1
    case upMirrored = 2
    case down = 3
    case downMirrored = 4
    case leftMirrored = 5
    case right = 6
    case rightMirrored = 7
    case left = 8

    /// Orientations 5–8 swap width and height.
    package var swapsDimensions: Bool { rawValue >= 5 }

    /// Reads the orientation tag from an EXIF block (a TIFF header and its first IFD).
    ///
    /// Returns nil when the block is malformed or has no valid tag: a broken EXIF block
    /// must never make a good image fail to decode.
    public init?(exif: some Collection<UInt8>) {
        let bytes = Array(exif)
        guard bytes.count >= 8 else { return nil }
        let littleEndian: Bool
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): littleEndian = true
        case (0x4D, 0x4D): littleEndian = false
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= bytes.count else { return nil }
            let a = Int(bytes[at]), b = Int(bytes[at + 1])
            return littleEndian ? a | b << 8 : a << 8 | b
        }
        func u32(_ at: Int) -> Int? {
            guard let low = u16(littleEndian ? at : at + 2),
                  let high = u16(littleEndian ? at + 2 : at) else { return nil }
            return low | high << 16
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        for index in 0..<count {
            let entry = ifd + 2 + index * 12
            guard let tag = u16(entry) else { return nil }
            // Tag 0x0112 is Orientation, a SHORT whose value sits in the entry itself.
            if tag == 0x0112 {
                guard u16(entry + 2) == 3, let value = u16(entry + 8) else { return nil }
                self.init(rawValue: value)
                return
            }
        }
        return nil
    }
}
