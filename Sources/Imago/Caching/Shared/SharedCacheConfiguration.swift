import Foundation

extension SharedCache {
    /// A cache shared by a fleet of machines, on Redis or Redis Cluster: what one loader
    /// fetched or made (originals with their HTTP metadata, sized and processed
    /// variants) is found by the others, between their own disk tiers and the network.
    ///
    /// Available where hiredis is (Linux, `libhiredis-dev`); elsewhere a loader given
    /// one goes without it. The tier never fails a load: Redis down, slow, hung or
    /// refusing only sends loads to the network, with at most one command timeout of
    /// delay before the circuit breaker stops asking for a while.
    public struct Configuration: Sendable {
        /// `redis://[user:password@]host:port[/db]`: one server, or any masters of a
        /// cluster (the rest are found with `CLUSTER SLOTS`).
        public var servers: [URL]
        /// The prefix of every key, one per deployment: a value stored under another
        /// namespace is never served, since the namespace is inside the record too.
        public var namespace: String
        /// How long a connection may take to open, in seconds.
        public var connectTimeout: Double
        /// How long a command may wait for each read of its reply, in seconds; a reply
        /// still coming after twenty of these (a second at least) is cut off, so a load
        /// waits no longer than that for the tier.
        public var commandTimeout: Double
        /// The largest value written or read, in bytes (8 MiB): larger images go
        /// without the tier.
        public var maximumValueSize: Int
        /// How long a lease taken before asking the origin holds, in seconds: the time
        /// the other machines trust its holder to fetch the image and store it. A
        /// holder that dies lets it expire.
        public var leaseDuration: Double
        /// How long a load waits for the value another machine is fetching, in seconds,
        /// before it asks the origin itself.
        public var leaseWait: Double
        /// Failed commands in a row after which the tier is not asked for `pause`.
        public var failuresBeforePause: Int
        /// How long the tier rests after `failuresBeforePause` failures, in seconds;
        /// then a probe asks it again.
        public var pause: Double
        /// Writes queued at most; more are dropped and counted, so that a slow Redis
        /// never holds memory or a load.
        public var maximumPendingWrites: Int
        /// Told, once per kind, when the tier is turned away (a wrong password, a
        /// forbidden command) or stops answering; nil to write the line to standard
        /// error.
        public var warningHandler: (@Sendable (String) -> Void)?

        /// A tier on `servers` under `namespace`, with timeouts of 50 ms.
        public init(servers: [URL], namespace: String = "imago") {
            self.servers = servers
            self.namespace = namespace
            connectTimeout = 0.05
            commandTimeout = 0.05
            maximumValueSize = 8 << 20
            leaseDuration = 10
            leaseWait = 5
            failuresBeforePause = 3
            pause = 5
            maximumPendingWrites = 64
        }

        /// The servers of a comma-separated list of `redis://` URLs, as `imago --redis`
        /// takes them; each checked as ``SharedCache`` will read it.
        package static func servers(fromList list: String) throws(ImagoError) -> [URL] {
            var servers: [URL] = []
            for item in list.split(separator: ",", omittingEmptySubsequences: true) {
                let text = item.trimmingCharacters(in: .whitespaces)
                guard let url = URL(string: text), RedisAddress(url) != nil else {
                    throw .invalidRequest(url: text, reason: "not a redis://[user:password@]host:port[/db] URL")
                }
                servers.append(url)
            }
            guard !servers.isEmpty else { throw .invalidRequest(url: list, reason: "no Redis URL given") }
            return servers
        }
    }
}

/// A `redis://` URL taken apart.
struct RedisAddress: Equatable, Sendable {
    let host: String
    let port: Int
    let user: String?
    let password: String?
    let database: Int

    init?(_ url: URL) {
        guard url.scheme?.lowercased() == "redis", let host = url.host, !host.isEmpty else { return nil }
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = url.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard path.isEmpty || Int(path) != nil, url.query == nil else { return nil }
        self.host = host
        port = url.port ?? 6379
        // A URL with only a password has it in the user part: redis://:secret@host.
        let user = components?.percentEncodedUser.flatMap { $0.removingPercentEncoding }
        let password = components?.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        self.user = user?.isEmpty == false ? user : nil
        self.password = password
        database = Int(path) ?? 0
        guard (1...65535).contains(port), database >= 0 else { return nil }
    }
}
