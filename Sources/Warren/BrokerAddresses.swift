import AMQP
import Foundation

/// One or more broker URLs, separated by commas (the nodes of a cluster), tried in turn.
///
/// Thread safety: immutable.
package struct BrokerAddresses: Sendable {
    let configurations: [AMQPConfiguration]

    /// Parses `amqp://…[,amqp://…]`, naming every connection `connectionName`.
    ///
    /// Only a comma before `amqp://` or `amqps://` separates URLs, so a password with a comma stays whole (and is
    /// not shown, in part, by the error about a URL cut in two).
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for an empty list or a malformed URL.
    package init(_ urls: String, connectionName: String) throws {
        do {
            configurations = try Self.split(urls).map { url in
                var configuration = try AMQPConfiguration(url: url.trimmingCharacters(in: .whitespaces))
                configuration.connectionName = connectionName
                return configuration
            }
        } catch let error as AMQPError {
            throw WarrenError(.invalidConfiguration, error.message)
        }
        guard !configurations.isEmpty else { throw WarrenError(.invalidConfiguration, "no broker URL given") }
    }

    /// `urls` cut at each comma that starts another `amqp://` or `amqps://` URL; empty pieces dropped.
    static func split(_ urls: String) -> [Substring] {
        var pieces: [Substring] = []
        var start = urls.startIndex
        for index in urls.indices
        where urls[index] == "," && AMQPConfiguration.startsAMQPURL(urls[urls.index(after: index)...]) {
            pieces.append(urls[start..<index])
            start = urls.index(after: index)
        }
        pieces.append(urls[start...])
        return pieces.filter { !$0.allSatisfy(\.isWhitespace) }
    }

    /// Opens a connection to the first address that accepts one.
    /// - Parameter fellBack: Called with why each address before it failed, when a later one accepts: a refused
    ///   password or a dead node is worth a warning even though a later address served.
    /// - Throws: ``WarrenError`` (`broker`) naming why each address failed.
    func connect(fellBack: ([String]) -> Void = { _ in }) throws -> AMQPConnection {
        var failures: [String] = []
        for configuration in configurations {
            do {
                let connection = try AMQPConnection(configuration: configuration)
                if !failures.isEmpty { fellBack(failures) }
                return connection
            } catch let error as AMQPError {
                failures.append(error.description)
            }
        }
        throw WarrenError(.broker, failures.joined(separator: "; "))
    }
}
