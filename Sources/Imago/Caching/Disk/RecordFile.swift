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
        /// A valid record, and the size of its file.
        case hit(DiskCache.Record, size: Int)
    }

    /// Reads the record for `key` at `path`. An expired record is told from its
    /// header alone, before its body is read. A hit marks the file as used at `time`
    /// (its modification time) when the last mark is older than `touchInterval`.
    static func read(
        _ path: String, key: String, at time: Double, touchInterval: Double, isExpired: (_ storedAt: Double) -> Bool
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
        var body = Data(count: header.bodyCount + RecordFormat.trailerSize)
        guard DiskFiles.readAll(fd, into: &keyAndMetadata), DiskFiles.readAll(fd, into: &body) else {
            return .invalid(identity, expired: false)
        }
        var checksum = headerBytes.withUnsafeBytes { CRC32.update(0, $0) }
        checksum = keyAndMetadata.withUnsafeBytes { CRC32.update(checksum, $0) }
        let stored = body.withUnsafeBytes { bytes -> UInt32 in
            checksum = CRC32.update(checksum, UnsafeRawBufferPointer(rebasing: bytes.prefix(header.bodyCount)))
            return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: header.bodyCount, as: UInt32.self))
        }
        guard stored == checksum, keyAndMetadata.prefix(header.keyCount).elementsEqual(key.utf8) else {
            return .invalid(identity, expired: false)
        }
        body.count = header.bodyCount
        if time - DiskFiles.modificationTime(info) >= touchInterval {
            DiskFiles.setTimes(fd, to: time)
        }
        let metadata = keyAndMetadata.subdata(in: header.keyCount..<keyAndMetadata.count)
        return .hit(DiskCache.Record(data: body, metadata: metadata, storedAt: Date(timeIntervalSince1970: header.storedAt)), size: size)
    }

    /// What a read of a record's head found.
    enum HeadOutcome {
        /// No regular file under the name.
        case missing
        /// A file that is not a record of `key` by its head, or (`expired`) one older
        /// than the maximum age.
        case invalid(FileIdentity, expired: Bool)
        /// The metadata of a record of `key`, and the length of its body.
        case head(metadata: Data, bodyCount: Int)
    }

    /// Reads the header, key and metadata of the record for `key` at `path`, not the
    /// body: the checksum, which covers the body, is checked by `read` when the body
    /// is wanted.
    static func readHead(_ path: String, key: String, isExpired: (_ storedAt: Double) -> Bool) -> HeadOutcome {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .missing }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, DiskFiles.isRegularFile(info) else { return .missing }
        let identity = FileIdentity(info)
        var headerBytes = Data(count: RecordFormat.headerSize)
        guard Int(info.st_size) >= RecordFormat.headerSize + RecordFormat.trailerSize, DiskFiles.readAll(fd, into: &headerBytes),
              let header = RecordFormat.Header(headerBytes), header.fileSize == Int(info.st_size)
        else { return .invalid(identity, expired: false) }
        if isExpired(header.storedAt) { return .invalid(identity, expired: true) }
        var keyAndMetadata = Data(count: header.keyCount + header.metadataCount)
        guard DiskFiles.readAll(fd, into: &keyAndMetadata), keyAndMetadata.prefix(header.keyCount).elementsEqual(key.utf8) else {
            return .invalid(identity, expired: false)
        }
        return .head(metadata: keyAndMetadata.subdata(in: header.keyCount..<keyAndMetadata.count), bodyCount: header.bodyCount)
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
