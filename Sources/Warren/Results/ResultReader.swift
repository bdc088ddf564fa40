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

    /// What follow mode reads.
    public enum Event: Sendable {
        case result(Result<JobResult, WarrenError>)
        case progress(ProgressMessage)
    }

    /// Waits up to `timeout` for the next result or progress report, consuming the results queue and a private
    /// queue bound to every progress report (for follow mode).
    public func next(waitingUpTo timeout: Duration) throws -> Event? {
        do {
            if !consuming {
                try connection.qos(prefetchCount: 100, channel: Self.channel)
                try connection.consume(Topology.resultsQueue, channel: Self.channel)
                try Topology.declareProgress(on: connection, channel: Self.channel)
                let progress = try connection.declareQueue(
                    "", durable: false, exclusive: true, autoDelete: true, channel: Self.channel
                ).name
                try connection.bindQueue(progress, to: Topology.progressExchange, routingKey: "#", channel: Self.channel)
                try connection.consume(progress, noAck: true, channel: Self.channel)
                consuming = true
            }
            let deadline = ContinuousClock.now + timeout
            while true {
                if let event = try connection.nextEvent() {
                    guard case .delivery(let delivery) = event else { continue }
                    if delivery.exchange == Topology.progressExchange {
                        if let report = try? ProgressMessage.decode(delivery.body) { return .progress(report) }
                        continue
                    }
                    return .result(decode(delivery))
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
