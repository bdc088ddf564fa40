import AMQP
import Foundation

/// The baseline's producer: raw publishes with a sliding window of unconfirmed messages, as a C client would, and a
/// durable result queue its worker publishes to.
///
/// Thread safety: confined to the thread that runs the benchmark.
final class BaselineSide: BenchSide {
    private static let channel: UInt16 = 1

    let kind = SideKind.baseline
    private let url: String
    private let connection: AMQPConnection
    private let window: Int
    private let resultQueue: String
    private let admin: BrokerAdmin
    private let variants: Set<BaselineVariant>
    private var confirms = ConfirmTracker()

    /// Connects and declares the result queue `resultQueue`.
    init(
        url: String, broker: AMQPConfiguration, admin: BrokerAdmin, resultQueue: String, window: Int,
        variants: Set<BaselineVariant>
    ) throws {
        self.url = url
        self.admin = admin
        self.resultQueue = resultQueue
        self.window = window
        self.variants = variants
        var broker = broker
        broker.connectionName = "warren bench baseline producer"
        connection = try AMQPConnection(configuration: broker)
        try connection.openChannel(Self.channel)
        try connection.enableConfirms(channel: Self.channel)
        try admin.declarePlainQueue(resultQueue)
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
    }

    var resultSource: ResultCollector.Source {
        variants.contains(.resultsExchange) ? .resultsExchange : .queue(resultQueue)
    }

    func publish(_ ids: [String], to queue: String) throws {
        var properties = MessageProperties(contentType: "application/json", persistent: true)
        if variants.contains(.priorityQueue) { properties.priority = 3 }
        var deadline = ContinuousClock.now + Self.confirmTimeout
        for id in ids {
            while confirms.outstanding >= window { try readConfirms(until: deadline) }
            deadline = ContinuousClock.now + Self.confirmTimeout
            properties.messageID = id
            try connection.publish(
                BaselinePayloads.descriptor, exchange: "", routingKey: queue, properties: properties,
                channel: Self.channel)
            _ = confirms.publish()
        }
        while confirms.outstanding > 0 { try readConfirms(until: deadline) }
    }

    /// How long publishing may wait for the broker without a confirm arriving, as long as Warren's producer waits.
    private static let confirmTimeout = Duration.seconds(30)

    /// Reads what the broker sent, waiting for something if nothing arrived yet.
    /// - Throws: ``BenchError`` past `deadline`.
    private func readConfirms(until deadline: ContinuousClock.Instant) throws {
        guard ContinuousClock.now < deadline else {
            throw BenchError("the broker did not confirm \(confirms.outstanding) baseline jobs within 30 s")
        }
        var read = false
        while let event = try connection.nextEvent() {
            read = true
            switch event {
            case .confirm(_, let tag, let multiple, let ack):
                guard ack else { throw BenchError("the broker refused a baseline job (basic.nack)") }
                confirms.confirm(tag, multiple: multiple)
            case .channelClosed(let error):
                throw error
            default:
                break
            }
        }
        if !read { connection.waitForActivity(wakeUp: nil, timeout: .seconds(1)) }
    }

    func close() {
        try? admin.delete(resultQueue)
        connection.close()
    }
}
