extension DiskCache {
    /// The former name of `StoragePolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "StoragePolicy")
    public typealias Policy = StoragePolicy
    /// The former name of `FreshnessPolicy`, which governs the shared tier too.
    @available(*, deprecated, renamed: "FreshnessPolicy")
    public typealias FreshnessPolicy = Imago.FreshnessPolicy
}
