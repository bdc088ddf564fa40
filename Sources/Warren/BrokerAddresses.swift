import AMQP
import Foundation

/// One or more broker URLs, separated by commas (the nodes of a cluster), tried in turn.
///
/// Thread safety: immutable.
struct BrokerAddresses: Sendable {
    let configurations: [AMQPConfiguration]

    /// Parses `amqp://…[,amqp://…]`, naming every connection `connectionName`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for an empty list or a malformed URL.
    init(_ urls: String, connectionName: String) throws {
        do {
            configurations = try urls.split(separator: ",").map { url in
                var configuration = try AMQPConfiguration(url: url.trimmingCharacters(in: .whitespaces))
                configuration.connectionName = connectionName
                return configuration
            }
        } catch let error as AMQPError {
            throw WarrenError(.invalidConfiguration, error.message)
        }
        guard !configurations.isEmpty else { throw WarrenError(.invalidConfiguration, "no broker URL given") }
    }

    /// Opens a connection to the first address that accepts one.
    /// - Throws: ``WarrenError`` (`broker`) naming why each address failed.
    func connect() throws -> AMQPConnection {
        var failures: [String] = []
        for configuration in configurations {
            do {
                return try AMQPConnection(configuration: configuration)
            } catch let error as AMQPError {
                failures.append(error.description)
            }
        }
        throw WarrenError(.broker, failures.joined(separator: "; "))
    }
}
