import Foundation
@_spi(Internals) import Imago

/// The disk cache and the folder its records live in, made once per process.
private let cache: DiskCache = {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-fuzz-record-\(getpid())")
    return DiskCache(directory: folder, sizeLimit: 64 << 20, maximumAge: nil)
}()

/// Puts libFuzzer's input where the record of one key lives and reads it back
/// through the disk cache, as a damaged, truncated or foreign file would be met: it
/// must be a miss (and deleted), or a record whose bytes came whole from the file.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> CInt {
    let key = "https://example.com/fuzz.jpg"
    let file = cache.fileURL(forKey: key)
    try? Data(bytes: bytes, count: count).write(to: file)
    if let record = cache.record(forKey: key) {
        precondition(record.data.count + record.metadata.count < count, "a record larger than its file")
    }
    cache.removeRecord(forKey: key)
    return 0
}
