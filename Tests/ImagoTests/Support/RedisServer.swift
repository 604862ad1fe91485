#if canImport(CHiredis)
import Foundation
import Testing
@testable import Imago
import _ImagoTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A real `redis-server` (Debian's redis-server package, installed by `make test`)
/// on a free loopback port, in a folder of its own, stopped and deleted when the
/// test lets go of it. It runs under a shell that kills it when the test process
/// is gone, so a crashed run leaves no server behind.
final class RedisServer: @unchecked Sendable {
    let port: Int
    let folder: URL
    private let arguments: [String]
    private var wrapper: Process?
    /// The server's own process id, for the faults the tests inject.
    private(set) var pid: pid_t = 0

    var url: URL { URL(string: "redis://127.0.0.1:\(port)")! }
    var node: RedisNode { RedisNode(host: "127.0.0.1", port: port) }

    /// Starts a server; `options` are redis-server's (`--requirepass`, `--maxmemory`...).
    /// A cluster node needs its port plus 10,000 free too, for the cluster bus.
    init(options: [String] = [], clusterNode: Bool = false) throws {
        port = try Self.freePort(alsoFree: clusterNode ? 10000 : nil)
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("imago-redis-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var arguments = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                         "--dir", folder.path, "--protected-mode", "no", "--loglevel", "warning"]
        if clusterNode {
            arguments += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "60000"]
        }
        self.arguments = arguments + options
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Starts the server (again, after `kill`), on the same port, and waits until it answers.
    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        // The shell watches the test process and the server; when the test is gone
        // it kills the server. The server's output goes to the folder.
        process.arguments = ["-c", "redis-server \"$@\" > \"$REDIS_LOG\" 2>&1 & server=$!; echo $server > \"$REDIS_PID\"; while kill -0 $TEST_PID 2>/dev/null && kill -0 $server 2>/dev/null; do sleep 1; done; kill -9 $server 2>/dev/null", "sh"] + arguments
        let pidFile = folder.appendingPathComponent("pid")
        try? FileManager.default.removeItem(at: pidFile)
        var environment = ProcessInfo.processInfo.environment
        environment["TEST_PID"] = String(getpid())
        environment["REDIS_PID"] = pidFile.path
        environment["REDIS_LOG"] = folder.appendingPathComponent("log").path
        process.environment = environment
        try process.run()
        wrapper = process
        let settings = RedisConnectionSettings(connectTimeout: 1, commandTimeout: 5, user: nil, password: nil, database: 0)
        for _ in 0..<600 {
            if pid == 0 || !FileManager.default.fileExists(atPath: pidFile.path) {
                pid = (try? String(contentsOf: pidFile, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) } ?? 0
            }
            // A server with a password refuses PING but answers NOAUTH: it is up.
            if pid != 0, let connection = try? RedisConnection(node: node, settings: settings),
               let reply = try? connection.run(redisCommand("PING")) {
                if case .status("PONG") = reply { return }
                if case .error(let message) = reply, message.hasPrefix("NOAUTH") { return }
            }
            usleep(50_000)
        }
        let log = (try? String(contentsOf: folder.appendingPathComponent("log"), encoding: .utf8)) ?? ""
        throw RedisServerError(message: "redis-server on port \(port) did not start: \(log)")
    }

    /// Sends `signal` to the server itself (SIGSTOP, SIGCONT).
    func send(_ signal: Int32) {
        if pid != 0 { Glibc.kill(pid, signal) }
    }

    /// Kills the server (SIGKILL) and waits until it is gone.
    func killAndWait() {
        guard pid != 0 else { return }
        Glibc.kill(pid, SIGCONT)
        Glibc.kill(pid, SIGKILL)
        wrapper?.waitUntilExit()
        wrapper = nil
        pid = 0
    }

    func stop() {
        killAndWait()
    }

    /// Runs a command on the server with a connection of its own.
    @discardableResult
    func run(_ command: [Data], password: String? = nil) throws -> RedisReply {
        let settings = RedisConnectionSettings(connectTimeout: 2, commandTimeout: 30, user: nil, password: password, database: 0)
        return try RedisConnection(node: node, settings: settings).run(command)
    }

    /// A port on 127.0.0.1 that nothing listens on (nor, with `alsoFree`, on the port
    /// that far above it): the kernel's choice of an ephemeral port, released.
    private static func freePort(alsoFree offset: Int?) throws -> Int {
        for _ in 0..<50 {
            let port = try bindable(0)
            guard port + (offset ?? 0) < 65536 else { continue }
            if let offset, (try? bindable(port + offset)) == nil { continue }
            return port
        }
        throw RedisServerError(message: "no free port pair")
    }

    private static func bindable(_ port: Int) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RedisServerError(message: "socket: \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw RedisServerError(message: "port \(port) taken") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

struct RedisServerError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// Three masters made into a cluster by `redis-cli --cluster create`, each with a
/// third of the slots.
final class RedisCluster: Sendable {
    let masters: [RedisServer]

    var urls: [URL] { masters.map(\.url) }

    init() throws {
        masters = try (0..<3).map { _ in try RedisServer(clusterNode: true) }
        let result = try runCLI(["--cluster", "create"] + masters.map { "127.0.0.1:\($0.port)" } + ["--cluster-replicas", "0", "--cluster-yes"])
        guard result.status == 0 else { throw RedisServerError(message: "redis-cli --cluster create failed: \(result.output)") }
        // Every node must see every slot served before commands are sent.
        for _ in 0..<600 {
            let states = masters.map { (try? $0.run(redisCommand("CLUSTER", "INFO")))?.data.map { String(decoding: $0, as: UTF8.self) } ?? "" }
            if states.allSatisfy({ $0.contains("cluster_state:ok") }) { return }
            usleep(100_000)
        }
        throw RedisServerError(message: "the cluster did not become ready")
    }

    /// Moves `slots` slots from the first master to the second with
    /// `redis-cli --cluster reshard`, the way an operator would.
    func reshard(slots: Int, from source: RedisServer, to target: RedisServer) throws -> (status: Int32, output: String) {
        func id(_ server: RedisServer) throws -> String {
            guard let data = try server.run(redisCommand("CLUSTER", "MYID")).data else { throw RedisServerError(message: "no node id") }
            return String(decoding: data, as: UTF8.self)
        }
        return try runCLI([
            "--cluster", "reshard", "127.0.0.1:\(source.port)", "--cluster-from", try id(source), "--cluster-to", try id(target),
            "--cluster-slots", String(slots), "--cluster-yes",
        ])
    }

    /// Runs redis-cli (Debian's redis-tools) to its end.
    func runCLI(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/redis-cli")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }
}
#endif
