import AMQP
import Foundation

/// The baseline's producer: raw publishes with a sliding window of unconfirmed messages, as a C client would, and a
/// durable result queue its worker publishes to. With ``BaselineVariant/resultsStream``, also the stream queue its
/// worker appends results to, unique to the side and deleted with it.
///
/// Thread safety: confined to the thread that runs the benchmark.
final class BaselineSide: BenchSide {
    private static let channel: UInt16 = 1

    let kind: SideKind
    private let url: String
    private let connection: AMQPConnection
    private let window: Int
    private let resultQueue: String
    private let resultsStream: String?
    private let admin: BrokerAdmin
    private let variants: Set<BaselineVariant>
    private let pump: AMQPEventPump
    private let jobs: ConfirmChannel<Void>

    /// Connects and declares the result queue `resultQueue`, and with ``BaselineVariant/resultsStream`` the stream
    /// queue `resultQueue-stream`.
    /// - Parameter kind: ``SideKind/baseline`` or ``SideKind/floor``: which side these variants make.
    init(
        kind: SideKind, url: String, broker: AMQPConfiguration, admin: BrokerAdmin, resultQueue: String, window: Int,
        variants: Set<BaselineVariant>
    ) throws {
        self.kind = kind
        self.url = url
        self.admin = admin
        self.resultQueue = resultQueue
        resultsStream = variants.contains(.resultsStream) ? resultQueue + "-stream" : nil
        self.window = window
        self.variants = variants
        var broker = broker
        broker.connectionName = "warren bench baseline producer"
        connection = try AMQPConnection(configuration: broker)
        pump = AMQPEventPump(connection)
        jobs = ConfirmChannel(Self.channel, on: connection)
        try jobs.open()
        pump.route(Self.channel, to: jobs)
        try admin.declarePlainQueue(resultQueue)
        if let resultsStream { try admin.declareResultsStream(resultsStream) }
    }

    func declare(_ queue: String, admin: BrokerAdmin) throws {
        if variants.contains(.priorityQueue) {
            try admin.declareWarrenQueue(queue, priorities: true)
        } else {
            try admin.declarePlainQueue(queue)
        }
    }

    func workerArguments(queue: String, prefetch: Int) -> [String] {
        [
            "bench", "baseline-worker", "--url", url, "--queue", queue, "--result-queue", resultQueue,
            "--prefetch", "\(prefetch)",
        ] + variants.sorted { $0.rawValue < $1.rawValue }.flatMap { ["--variant", $0.rawValue] }
            + (resultsStream.map { ["--results-stream", $0] } ?? [])
    }

    var resultSource: ResultCollector.Source {
        variants.contains(.resultsExchange) ? .resultsExchange : .queue(resultQueue)
    }

    func publish(_ ids: [String], to queue: String) throws {
        var properties = MessageProperties(contentType: "application/json", persistent: true)
        if variants.contains(.priorityQueue) { properties.priority = 3 }
        for id in ids {
            try awaitConfirms(leaving: window - 1)
            properties.messageID = id
            try jobs.publish(BaselinePayloads.descriptor, exchange: "", routingKey: queue, properties: properties)
        }
        try awaitConfirms(leaving: 0)
    }

    /// How long publishing may wait for the broker without a confirm arriving, as long as Warren's producer waits.
    private static let confirmTimeout = Duration.seconds(30)

    /// Reads what the broker sent until at most `most` publishes wait for their confirms.
    /// - Throws: ``BenchError`` when the broker refused a job, or did not confirm enough of them within 30 s.
    private func awaitConfirms(leaving most: Int) throws {
        let confirmed = try pump.dispatch(until: .now + Self.confirmTimeout) { jobs.awaiting.count <= most }
        if jobs.takeAnswers().contains(where: { !$0.isAck }) {
            throw BenchError("the broker refused a baseline job (basic.nack)")
        }
        guard confirmed else {
            throw BenchError("the broker did not confirm \(jobs.awaiting.count) baseline jobs within 30 s")
        }
    }

    func close() {
        try? admin.delete(resultQueue)
        if let resultsStream { try? admin.delete(resultsStream) }
        connection.close()
    }
}
