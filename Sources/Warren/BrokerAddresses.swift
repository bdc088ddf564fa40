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

    /// The longest waits between reconnection attempts a worker or scheduler takes: from the first wait, 100 ms, to
    /// an hour.
    static let maxReconnectDelays = Duration.milliseconds(100)...Duration.seconds(3600)

    /// Why `delay` cannot be the longest wait between reconnection attempts, if it cannot.
    static func problem(maxReconnectDelay delay: Duration) -> String? {
        maxReconnectDelays.contains(delay)
            ? nil : "max reconnect delay \(delay) is outside 100 ms (the first wait) to an hour"
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
        switch attempt(fellBack: fellBack) {
        case .success(let connection): return connection
        case .failure(let refusal): throw refusal.error
        }
    }

    /// Opens a connection as ``connect(fellBack:)`` does; while every address fails in a way that time may mend
    /// (nothing listens there yet, a host name not yet known: a broker still starting), tries again with
    /// exponential backoff and jitter, from 100 ms doubling up to `maxDelay`, for up to `patience`.
    /// - Parameters:
    ///   - patience: How long to go on trying; `nil`: as long as it takes, whatever the failures.
    ///   - retrying: Called with each failure that will be tried again.
    ///   - pause: Waits for the duration it is given; returns `false` when the caller must stop instead.
    /// - Returns: The connection, or `nil` when `pause` returned `false`.
    /// - Throws: ``WarrenError`` (`broker`) naming why each address failed, for failures that trying again would not
    ///   mend (a refused password, an untrusted certificate) and once `patience` ran out.
    func connect(
        patience: Duration?, maxDelay: Duration, fellBack: ([String]) -> Void, retrying: (WarrenError) -> Void,
        pause: (Duration) -> Bool
    ) throws -> AMQPConnection? {
        let giveUpAt = patience.map { ContinuousClock.now + $0 }
        var delay = Duration.milliseconds(100)
        while true {
            let refusal: Refusal
            switch attempt(fellBack: fellBack) {
            case .success(let connection): return connection
            case .failure(let failure): refusal = failure
            }
            if let patience, let giveUpAt, !refusal.mayPass || ContinuousClock.now >= giveUpAt {
                guard refusal.mayPass, patience > .zero else { throw refusal.error }
                throw WarrenError(.broker, "\(refusal.error.message) (still, after trying for \(patience))")
            }
            retrying(refusal.error)
            var wait = delay * Double.random(in: 0.75...1.25)
            if let giveUpAt { wait = max(.zero, min(wait, giveUpAt - ContinuousClock.now)) }
            guard pause(wait) else { return nil }
            delay = min(delay * 2, maxDelay)
        }
    }

    /// Why no address accepted a connection, and whether trying again later may mend it.
    struct Refusal: Error {
        let error: WarrenError
        /// Every address failed to open a TCP connection (``AMQPError/Code/connectionFailed``).
        let mayPass: Bool
    }

    private func attempt(fellBack: ([String]) -> Void) -> Result<AMQPConnection, Refusal> {
        var failures: [AMQPError] = []
        for configuration in configurations {
            do {
                let connection = try AMQPConnection(configuration: configuration)
                if !failures.isEmpty { fellBack(failures.map(\.description)) }
                return .success(connection)
            } catch let error as AMQPError {
                failures.append(error)
            } catch {
                failures.append(AMQPError(.library, "\(error)"))
            }
        }
        return .failure(
            Refusal(
                error: WarrenError(.broker, failures.map(\.description).joined(separator: "; ")),
                mayPass: failures.allSatisfy { $0.code == .connectionFailed }))
    }
}
