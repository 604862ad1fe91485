import Foundation

/// The record file format, version 1. All integers little-endian.
///
///     offset  size  field
///          0     8  magic: 89 'I' 'M' 'G' 'O' 0D 0A 1A
///          8     4  format version (1)
///         12     4  key length K (UTF-8 bytes)
///         16     4  metadata length M
///         20     4  reserved, zero
///         24     8  body length B
///         32     8  time stored: IEEE 754 double, seconds since 1970
///         40     K  key
///       40+K     M  metadata
///     40+K+M     B  body
///   40+K+M+B     4  CRC-32 (ISO-HDLC, as zlib and PNG) of every byte before it
///
/// The stored key catches name collisions and foreign files; the checksum
/// (``CRC32``) catches damage. The shared tier keeps its values in the same format,
/// one record a value, its key naming the namespace too.
enum RecordFormat {
    static let magic: [UInt8] = [0x89, 0x49, 0x4D, 0x47, 0x4F, 0x0D, 0x0A, 0x1A]
    static let version: UInt32 = 1
    static let headerSize = 40
    static let trailerSize = 4
    /// Temporary files: `.tmp.<pid>.<serial>.<name>`; hidden, and never a record name.
    static let temporaryPrefix = ".tmp."

    /// The fixed-size start of a record file.
    struct Header {
        let keyCount: Int
        let metadataCount: Int
        let bodyCount: Int
        let storedAt: Double
        var fileSize: Int { RecordFormat.fileSize(key: keyCount, metadata: metadataCount, body: bodyCount) }

        /// Parses the first ``RecordFormat/headerSize`` bytes; nil if they are not a
        /// header of this format version.
        init?(_ bytes: Data) {
            guard bytes.count >= RecordFormat.headerSize, bytes.prefix(8).elementsEqual(RecordFormat.magic) else { return nil }
            func field(_ offset: Int, _ size: Int) -> UInt64 {
                var value: UInt64 = 0
                for index in (0..<size).reversed() { value = value << 8 | UInt64(bytes[bytes.startIndex + offset + index]) }
                return value
            }
            guard field(8, 4) == RecordFormat.version, field(20, 4) == 0 else { return nil }
            let body = field(24, 8)
            // Bounds that keep the size arithmetic from overflowing on garbage.
            guard body < 1 << 48 else { return nil }
            keyCount = Int(field(12, 4))
            metadataCount = Int(field(16, 4))
            bodyCount = Int(body)
            storedAt = Double(bitPattern: field(32, 8))
            guard storedAt.isFinite else { return nil }
        }
    }

    static func fileSize(key: Int, metadata: Int, body: Int) -> Int {
        headerSize + key + metadata + body + trailerSize
    }

    /// A record name: 64 lowercase hex digits.
    static func isRecordName(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// Header, key and metadata: everything before the body.
    static func prefix(key: String, metadata: Data, bodyCount: Int, storedAt: Double) -> Data {
        let keyBytes = Array(key.utf8)
        var data = Data(capacity: headerSize + keyBytes.count + metadata.count)
        data += magic
        data += littleEndian(UInt64(version), count: 4)
        data += littleEndian(UInt64(keyBytes.count), count: 4)
        data += littleEndian(UInt64(metadata.count), count: 4)
        data += littleEndian(0, count: 4)
        data += littleEndian(UInt64(bodyCount), count: 8)
        data += littleEndian(storedAt.bitPattern, count: 8)
        data += keyBytes
        data += metadata
        return data
    }

    /// The checksum that ends a record of `prefix` and `body`: the body is written
    /// between the two as it is, never copied into one buffer with them. With the
    /// body's own CRC (known when it came out of a checked record) the body is not
    /// read again.
    static func trailer(prefix: Data, body: Data, bodyChecksum: UInt32? = nil) -> Data {
        let head = prefix.withUnsafeBytes { CRC32.update(0, $0) }
        let checksum = bodyChecksum.map { CRC32.combine(head, $0, secondCount: body.count) }
            ?? body.withUnsafeBytes { CRC32.update(head, $0) }
        return littleEndian(UInt64(checksum), count: 4)
    }

    /// A whole record in one buffer, as the shared tier keeps it.
    static func encode(key: String, metadata: Data, body: Data, storedAt: Double) -> Data {
        let prefix = prefix(key: key, metadata: metadata, bodyCount: body.count, storedAt: storedAt)
        return prefix + body + trailer(prefix: prefix, body: body)
    }

    /// The metadata, body and time stored of a record in one buffer, if it is a whole
    /// record of this format version stored under `key` whose checksum holds; with
    /// the CRC of the body alone, which a copy of the body under another key (the
    /// disk tier's) is checksummed from without a second pass.
    static func decode(_ record: Data, key: String) -> (metadata: Data, body: Data, storedAt: Double, bodyChecksum: UInt32)? {
        guard let header = Header(record), header.fileSize == record.count else { return nil }
        let checked = record.count - trailerSize
        let bodyOffset = headerSize + header.keyCount + header.metadataCount
        let (head, bodyChecksum, stored) = record.withUnsafeBytes { bytes in
            (CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[..<bodyOffset])),
             CRC32.update(0, UnsafeRawBufferPointer(rebasing: bytes[bodyOffset..<checked])),
             UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: checked, as: UInt32.self)))
        }
        let keyStart = record.startIndex + headerSize, metadataStart = keyStart + header.keyCount
        let bodyStart = metadataStart + header.metadataCount
        guard CRC32.combine(head, bodyChecksum, secondCount: checked - bodyOffset) == stored,
              record[keyStart..<metadataStart].elementsEqual(key.utf8)
        else { return nil }
        return (Data(record[metadataStart..<bodyStart]), Data(record[bodyStart..<(bodyStart + header.bodyCount)]), header.storedAt, bodyChecksum)
    }

    static func littleEndian(_ value: UInt64, count: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: value >> UInt64($0 * 8)) })
    }
}
