import Foundation
import Hummingbird
import Logging
import Warren

/// A web dashboard of a Warren fleet: queues, workers, jobs, results, dead letters and schedules, with the controls
/// the CLI has. It talks to the broker as the CLI does, on threads of its own, and serves pages from what it last
/// learnt, so that a slow or lost broker never holds a page up.
///
/// ```swift
/// let dashboard = try Dashboard(configuration: .init(url: "amqp://guest:guest@localhost/%2F"))
/// try await dashboard.run()   // http://127.0.0.1:8080/, until SIGINT or SIGTERM
/// ```
///
/// Thread safety: immutable.
public final class Dashboard: Sendable {
    /// Where the dashboard listens, what it reads and who may use it.
    public struct Configuration: Sendable {
        /// The broker URL, as every command takes it.
        public var url: String
        /// The address to listen on. Default: `127.0.0.1`. Any other needs a ``credential``.
        public var host = "127.0.0.1"
        /// The port to listen on; 0 picks a free one. Default: 8080.
        public var port = 8080
        /// The secret a request must carry: the password of HTTP basic auth, any user name, or a bearer token.
        /// Default: `nil`, which only a loopback ``host`` allows.
        public var credential: String?
        /// The recurring jobs the Schedules page lists. Default: none.
        public var schedules: [Schedule] = []
        /// The file ``schedules`` came from, which the Schedules page names. Default: `nil`.
        public var scheduleFile: String?
        /// How far back the Results page starts reading the results stream. Default: an hour.
        public var resultsSince = Duration.seconds(3600)
        /// Seconds between two polls of the fleet. Default: 2.
        public var pollInterval = 2.0
        /// Job queues to show even when no live worker consumes them. Default: none.
        public var queues: [String] = []
        /// Default: `warren.dashboard`.
        public var logger = Logger(label: "warren.dashboard")

        /// The defaults, with the broker at `url`.
        public init(url: String) {
            self.url = url
        }
    }

    /// What the dashboard was made with.
    public let configuration: Configuration

    /// Checks the configuration.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a host beyond loopback without a credential, an empty
    ///   credential, or a port outside 0...65535.
    public init(configuration: Configuration) throws {
        if configuration.credential?.isEmpty == true {
            throw WarrenError(.invalidConfiguration, "the dashboard's credential is empty")
        }
        if !Self.isLoopback(configuration.host) && configuration.credential == nil {
            throw WarrenError(
                .invalidConfiguration,
                "the dashboard listens on \(configuration.host), beyond this machine: give it a credential "
                    + "($WARREN_DASHBOARD_TOKEN or --credential-file)")
        }
        guard (0...65_535).contains(configuration.port) else {
            throw WarrenError(.invalidConfiguration, "port \(configuration.port) is outside 0...65535")
        }
        _ = try BrokerAddresses(configuration.url, connectionName: "warren dashboard")
        self.configuration = configuration
    }

    /// Whether `host` is a loopback address, reachable from this machine only.
    public static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127.")
    }

    /// Serves the dashboard until SIGTERM or SIGINT (with `handlingSignals`), or until the task is cancelled.
    /// - Parameter listening: Called with the port once the server listens.
    /// - Throws: What the server throws when it cannot listen.
    public func run(
        handlingSignals: Bool = true, listening: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws {
        let configuration = configuration
        let since = Date(timeIntervalSinceNow: -Double(configuration.resultsSince.components.seconds))
        let feed = ResultFeed(url: configuration.url, since: since)
        var options = FleetMonitor.Options()
        options.interval = configuration.pollInterval
        options.queues = configuration.queues
        let monitor = FleetMonitor(url: configuration.url, options: options) { feed.learn(from: $0) }
        let actions = try FleetActions(url: configuration.url)
        feed.start()
        monitor.start()
        defer {
            monitor.stop()
            feed.stop()
            actions.close()
        }
        let router = Router()
        router.add(middleware: AccessGuard(credential: configuration.credential))
        DashboardRoutes(
            monitor: monitor, feed: feed, actions: actions, token: Self.randomToken(),
            schedules: configuration.schedules,
            scheduleFile: configuration.scheduleFile
        ).add(to: router)
        let application = Application(
            router: router,
            configuration: .init(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in listening(channel.localAddress?.port ?? configuration.port) },
            logger: configuration.logger)
        try await application.runService(gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [])
    }

    /// 32 random bytes as hex.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}
