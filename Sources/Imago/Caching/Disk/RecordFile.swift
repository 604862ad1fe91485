import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Reading record files back: every byte checked against the format and the
/// checksum before a record is believed.
enum RecordFile {
    /// What a read found.
    enum Outcome {
        /// No regular file under the name.
        case missing
        /// A file that is damaged, truncated, foreign, of another format version or
        /// (`expired`) older than the maximum age; `identity` says which file it was,
        /// so that only that one is deleted.
        case invalid(FileIdentity, expired: Bool)
        /// A valid record of the key (or its head), and the size of its file.
        case found(Found, size: Int)
    }

    /// What a read of a valid record hands back.
    enum Found {
        /// The whole record, its checksum checked.
        case record(DiskCache.Record)
        /// Its metadata and the length of its body, read without the body: the
        /// checksum, which covers the body, is checked when the body is wanted.
        case head(metadata: Data, bodyCount: Int)
    }

    /// Reads the record for `key` at `path`, its body too when `wholeBody`. An expired
    /// record is told from its header alone, before the rest is read. A whole read
    /// marks the file as used at `time` (its modification time) when the last mark is
    /// older than `touchInterval`.
    static func read(
        _ path: String, key: String, wholeBody: Bool, at time: Double, touchInterval: Double,
        isExpired: (_ storedAt: Double) -> Bool
    ) -> Outcome {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .missing }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, DiskFiles.isRegularFile(info) else { return .missing }
        let identity = FileIdentity(info)
        let size = Int(info.st_size)
        var headerBytes = Data(count: RecordFormat.headerSize)
        guard size >= RecordFormat.headerSize + RecordFormat.trailerSize, DiskFiles.readAll(fd, into: &headerBytes),
              let header = RecordFormat.Header(headerBytes), header.fileSize == size
        else { return .invalid(identity, expired: false) }
        if isExpired(header.storedAt) { return .invalid(identity, expired: true) }

        var keyAndMetadata = Data(count: header.keyCount + header.metadataCount)
        guard DiskFiles.readAll(fd, into: &keyAndMetadata), keyAndMetadata.prefix(header.keyCount).elementsEqual(key.utf8) else {
            return .invalid(identity, expired: false)
        }
        let metadata = keyAndMetadata.subdata(in: header.keyCount..<keyAndMetadata.count)
        guard wholeBody else { return .found(.head(metadata: metadata, bodyCount: header.bodyCount), size: size) }

        var body = Data(count: header.bodyCount + RecordFormat.trailerSize)
        guard DiskFiles.readAll(fd, into: &body) else { return .invalid(identity, expired: false) }
        var checksum = headerBytes.withUnsafeBytes { CRC32.update(0, $0) }
        checksum = keyAndMetadata.withUnsafeBytes { CRC32.update(checksum, $0) }
        let stored = body.withUnsafeBytes { bytes -> UInt32 in
            checksum = CRC32.update(checksum, UnsafeRawBufferPointer(rebasing: bytes.prefix(header.bodyCount)))
            return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: header.bodyCount, as: UInt32.self))
        }
        guard stored == checksum else { return .invalid(identity, expired: false) }
        body.count = header.bodyCount
        if time - DiskFiles.modificationTime(info) >= touchInterval {
            DiskFiles.setTimes(fd, to: time)
        }
        let record = DiskCache.Record(data: body, metadata: metadata, storedAt: Date(timeIntervalSince1970: header.storedAt))
        return .found(.record(record), size: size)
    }

    /// The header of the file at `path` when every byte of the file agrees with its
    /// checksum and the header's size, read a mebibyte at a time whatever the size of
    /// the record; for a prune that looks for damaged bodies too.
    static func intactHeader(at path: String) -> RecordFormat.Header? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        var headerBytes = Data(count: RecordFormat.headerSize)
        guard fstat(fd, &info) == 0, DiskFiles.readAll(fd, into: &headerBytes),
              let header = RecordFormat.Header(headerBytes), header.fileSize == Int(info.st_size)
        else { return nil }
        var checksum = headerBytes.withUnsafeBytes { CRC32.update(0, $0) }
        var remaining = header.fileSize - RecordFormat.headerSize - RecordFormat.trailerSize
        var chunk = Data(count: min(remaining, 1 << 20))
        while remaining > 0 {
            if chunk.count > remaining { chunk.count = remaining }
            guard DiskFiles.readAll(fd, into: &chunk) else { return nil }
            checksum = chunk.withUnsafeBytes { CRC32.update(checksum, $0) }
            remaining -= chunk.count
        }
        var trailer = Data(count: RecordFormat.trailerSize)
        guard DiskFiles.readAll(fd, into: &trailer),
              trailer.withUnsafeBytes({ UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }) == checksum
        else { return nil }
        return header
    }

    /// The header of the file at `path`, if it starts with one; for scans that want
    /// the time stored without reading whole records.
    static func header(at path: String) -> RecordFormat.Header? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = Data(count: RecordFormat.headerSize)
        guard DiskFiles.readAll(fd, into: &bytes) else { return nil }
        return RecordFormat.Header(bytes)
    }
}
