import AMQP
import Foundation

/// Reads results from the queue that keeps them (`warren.results`), acknowledging each one it returns.
///
/// Thread safety: confined, like ``Producer``: use it from the thread that created it.
public final class ResultReader {
    static let channel: UInt16 = 1
    let connection: AMQPConnection
    private var consuming = false

    /// Connects and declares the results queue.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails).
    public init(url: String) throws {
        connection = try BrokerAddresses(url, connectionName: "warren results").connect()
        do {
            try connection.openChannel(Self.channel)
            try Topology.declareResults(on: connection, channel: Self.channel)
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    /// The next stored result, or `nil` when none is waiting. Results that do not decode are returned as errors
    /// in `Result.failure`, never dropped silently.
    public func next() throws -> Result<JobResult, WarrenError>? {
        do {
            guard let delivery = try connection.get(Topology.resultsQueue, channel: Self.channel) else { return nil }
            return decode(delivery)
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    /// Waits up to `timeout` for the next result, consuming the queue (for follow mode).
    public func next(waitingUpTo timeout: Duration) throws -> Result<JobResult, WarrenError>? {
        do {
            if !consuming {
                try connection.qos(prefetchCount: 100, channel: Self.channel)
                try connection.consume(Topology.resultsQueue, channel: Self.channel)
                consuming = true
            }
            let deadline = ContinuousClock.now + timeout
            while true {
                if let event = try connection.nextEvent() {
                    if case .delivery(let delivery) = event { return decode(delivery) }
                    continue
                }
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return nil }
                connection.waitForActivity(wakeUp: nil, timeout: min(left, .seconds(1)))
            }
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
    }

    private func decode(_ delivery: Delivery) -> Result<JobResult, WarrenError> {
        try? connection.ack(delivery.deliveryTag, channel: delivery.channel)
        do {
            return .success(try JobResult.decode(delivery.body))
        } catch {
            return .failure(WarrenError(.wireFormat, "unreadable result message: \(error)"))
        }
    }

    /// Closes the connection.
    public func close() {
        connection.close()
    }
}
