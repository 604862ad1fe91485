import Foundation

/// Memory this process may use, for sizing caches.
enum SystemMemory {
    /// Physical memory, or the cgroup limit when that is smaller: inside a container
    /// `ProcessInfo.physicalMemory` is the host's.
    static var usable: UInt64 {
        let physical = ProcessInfo.processInfo.physicalMemory
        #if os(Linux)
        if let limit = LinuxCgroups.current.memoryLimit, limit > 0 { return min(physical, limit) }
        #endif
        return physical
    }
}
