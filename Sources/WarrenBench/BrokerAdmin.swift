import AMQP
import Warren

/// The benchmark's housekeeping connection: declares and deletes its queues and counts their consumers.
///
/// Thread safety: confined to the thread that runs the benchmark.
final class BrokerAdmin {
    private static let channel: UInt16 = 1
    private let connection: AMQPConnection
    private var declared: Set<String> = []

    init(broker: AMQPConfiguration) throws {
        var broker = broker
        broker.connectionName = "warren bench admin"
        // Idle for minutes while the sides work, and librabbitmq answers heartbeats only inside a call.
        broker.heartbeat = 0
        connection = try AMQPConnection(configuration: broker)
        try connection.openChannel(Self.channel)
    }

    /// Declares a durable classic queue without arguments: what a raw client would use.
    func declarePlainQueue(_ name: String) throws {
        try connection.declareQueue(name, channel: Self.channel)
        declared.insert(name)
    }

    /// Declares a Warren job queue exactly as Warren declares it: by default, or with `priorities` as a worker
    /// started with `--priority-queues` does.
    func declareWarrenQueue(_ name: String, priorities: Bool = false) throws {
        try Topology.declareJobQueue(name, priorities: priorities, on: connection, channel: Self.channel)
        declared.insert(name)
    }

    /// Declares a stream queue as Warren declares `warren.results`: `x-queue-type: stream`, with its age and size
    /// limits.
    func declareResultsStream(_ name: String) throws {
        try connection.declareQueue(
            name,
            arguments: [
                "x-queue-type": "stream", "x-max-age": .string(Topology.resultsRetention),
                "x-max-length-bytes": .int(Topology.resultsMaxBytes),
            ],
            channel: Self.channel)
        declared.insert(name)
    }

    /// How many consumers `queue` has.
    func consumers(of queue: String) throws -> UInt32 {
        try connection.declareQueue(queue, passive: true, channel: Self.channel).consumerCount
    }

    /// Deletes a queue this benchmark declared.
    func delete(_ queue: String) throws {
        try connection.deleteQueue(queue, channel: Self.channel)
        declared.remove(queue)
    }

    /// Deletes every queue still declared, and closes the connection.
    func close() {
        for queue in declared { _ = try? connection.deleteQueue(queue, channel: Self.channel) }
        declared = []
        connection.close()
    }
}
