import ArgumentParser
import Foundation

/// The broker URL option every command shares.
public struct BrokerOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "Broker URL, amqp://user:password@host:port/vhost (default: $WARREN_URL, else amqp://guest:guest@localhost:5672/%2F).",
            valueName: "url"))
    var url: String?

    public init() {}

    /// The URL in force: `--url`, else `$WARREN_URL` (when not empty), else the local default.
    public var brokerURL: String {
        url ?? ProcessInfo.processInfo.environment["WARREN_URL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "amqp://guest:guest@localhost:5672/%2F"
    }
}
