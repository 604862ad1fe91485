import Foundation

extension ImageLoader {
    /// Forgets everything this loader keeps, so that the next load of any URL asks
    /// its origin: the memory tier, the files of recent loads
    /// (`Configuration.recentOriginals`), the failures remembered
    /// (`Configuration.recentFailures`), the bodies of transfers cut short
    /// (`Configuration.partialBodies`), the disk tier, and, when
    /// `includingShared` is true, the records of the fleet's shared tier (which
    /// every process of the fleet loses). Kingfisher's `clearCache()`, SDWebImage's
    /// `clearMemory` and `clearDisk` in one call.
    ///
    /// Loads in flight go on and keep what they fetch. The disk tier answers no read
    /// once this returns; its files are deleted by the time it returns too. Throws
    /// only for the shared tier, when Redis cannot be reached (everything else has
    /// been cleared by then).
    ///
    /// ```swift
    /// // "Clear cache" in an app's settings.
    /// try await ImageLoader.shared.removeAllCachedData()
    /// ```
    public func removeAllCachedData(includingShared: Bool = false) async throws(ImagoError) {
        cache?.removeAll()
        configuration.recentOriginals?.removeAll()
        configuration.recentFailures?.removeAll()
        configuration.partialBodies?.removeAll()
        if let disk = configuration.diskCache {
            disk.removeAll()
            await disk.flush()
        }
        guard includingShared, let shared = configuration.sharedCache else { return }
        // Redis is waited on by a thread that may block, never the concurrency pool's.
        let result = await BlockingWork.value { Result { () throws(ImagoError) in try shared.removeAll() } }
        _ = try result.get()
    }
}
