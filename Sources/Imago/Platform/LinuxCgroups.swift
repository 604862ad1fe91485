#if os(Linux)
import Foundation
import Glibc

/// Where this process's cgroups are, found once from /proc/self/cgroup and
/// /proc/self/mountinfo.
struct LinuxCgroups: Sendable {
    /// This process's directory in the cgroup v2 hierarchy, when mounted.
    var v2Directory: String?
    /// Whether ``v2Directory`` is the hierarchy's root, which has no memory files of
    /// its own beyond the machine's.
    var v2IsRoot = true
    /// The v2 hierarchy's mount point.
    var v2Mount: String?
    /// This process's directory in the cgroup v1 memory hierarchy, when mounted.
    var v1MemoryDirectory: String?

    static let current = LinuxCgroups.discover()

    /// The tightest memory limit on this process's cgroup and its ancestors, if any.
    var memoryLimit: UInt64? {
        var limit: UInt64?
        if var directory = v2Directory, let mount = v2Mount {
            while directory.count > mount.count {
                if let text = LinuxFiles.contents(of: directory + "/memory.max"),
                   let value = UInt64(text.trimmingCharacters(in: .whitespacesAndNewlines)) {
                    limit = min(limit ?? value, value)
                }
                directory = String(directory[..<(directory.lastIndex(of: "/") ?? directory.startIndex)])
            }
        }
        if let directory = v1MemoryDirectory {
            // hierarchical_memory_limit already folds in the ancestors' limits.
            let stat = LinuxFiles.contents(of: directory + "/memory.stat") ?? ""
            let hierarchical = stat.split(separator: "\n")
                .first { $0.hasPrefix("hierarchical_memory_limit ") }
                .flatMap { UInt64($0.split(separator: " ")[1]) }
            let own = LinuxFiles.contents(of: directory + "/memory.limit_in_bytes")
                .flatMap { UInt64($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if let value = hierarchical ?? own { limit = min(limit ?? value, value) }
        }
        return limit
    }

    private static func discover() -> LinuxCgroups {
        var result = LinuxCgroups()
        guard let membership = LinuxFiles.contents(of: "/proc/self/cgroup"),
              let mounts = LinuxFiles.contents(of: "/proc/self/mountinfo", limit: 1 << 20) else { return result }
        var v2Path: String?, v1Path: String?
        for line in membership.split(separator: "\n") {
            let fields = line.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count == 3 else { continue }
            if fields[0] == "0", fields[1].isEmpty {
                v2Path = String(fields[2])
            } else if fields[1].split(separator: ",").contains("memory") {
                v1Path = String(fields[2])
            }
        }
        // mountinfo: id parent dev root mountpoint options [optional…] - type source superoptions
        for line in mounts.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard let dash = fields.firstIndex(of: "-"), dash >= 5, fields.count > dash + 3 else { continue }
            let root = String(fields[3]), point = String(fields[4])
            if fields[dash + 1] == "cgroup2", result.v2Mount == nil, let path = v2Path {
                result.v2Mount = point
                (result.v2Directory, result.v2IsRoot) = resolve(path, root: root, mountPoint: point)
            } else if fields[dash + 1] == "cgroup", result.v1MemoryDirectory == nil, let path = v1Path,
                      fields[dash + 3].split(separator: ",").contains("memory") {
                result.v1MemoryDirectory = resolve(path, root: root, mountPoint: point).directory
            }
        }
        return result
    }

    /// The directory of cgroup `path` under a mount of the hierarchy's `root`.
    private static func resolve(_ path: String, root: String, mountPoint: String) -> (directory: String, isRoot: Bool) {
        var relative = Substring(path)
        if root != "/", relative.hasPrefix(root) { relative = relative.dropFirst(root.count) }
        relative = relative.drop { $0 == "/" }
        if relative.isEmpty { return (mountPoint, true) }
        let directory = mountPoint + "/" + relative
        // Seen through a cgroup namespace the path may not exist under the mount:
        // the mount's root is then the nearest cgroup visible.
        return access(directory, F_OK) == 0 ? (directory, false) : (mountPoint, true)
    }
}

#endif
