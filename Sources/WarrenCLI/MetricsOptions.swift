import ArgumentParser
import Logging
import Warren

/// The Prometheus endpoint options of `warren worker` and `warren schedule`.
public struct MetricsOptions: ParsableArguments {
    @Option(
        name: .customLong("metrics-port"),
        help: """
            Serve Prometheus metrics at http://127.0.0.1:PORT/metrics, and health at /livez and /readyz; 0 picks a \
            free port and logs it (with --log-level warning or below).
            """)
    var metricsPort: UInt16?

    @Option(
        name: .customLong("metrics-host"),
        help: "With --metrics-port: the IPv4 address to listen on, e.g. 0.0.0.0 (default: 127.0.0.1).")
    var metricsHost: String?

    public init() {}

    /// Checks that a host comes with a port: `warren worker` calls it once the environment and its settings file
    /// had their say, `warren schedule` as it validates its options.
    func checkHost() throws {
        if metricsHost != nil && metricsPort == nil { throw ValidationError("--metrics-host needs --metrics-port") }
    }

    /// Starts the endpoint, if asked for: before anything records a metric, since it bootstraps swift-metrics.
    /// - Parameter health: The broker threads whose health `/livez` and `/readyz` report, by name.
    /// - Throws: `ValidationError` for a host that is no IPv4 address; ``WarrenError`` when the port is taken.
    func startServer(logger: Logger, health: KeyValuePairs<String, BrokerThreadHealth>) throws -> MetricsServer? {
        do {
            return try metricsPort.map {
                try MetricsServer.start(
                    host: metricsHost ?? "127.0.0.1", port: $0, health: HealthEndpoint(health), logger: logger)
            }
        } catch let error as WarrenError where error.code == .invalidConfiguration {
            throw ValidationError(error.message)
        }
    }
}
