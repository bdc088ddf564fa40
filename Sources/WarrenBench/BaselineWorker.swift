import AMQP
import Foundation
import Warren

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The baseline worker: a minimal raw client doing exactly what a job costs on the wire, as fast as the protocol
/// allows, and nothing else.
///
/// It consumes with manual acknowledgements and a prefetch, publishes a persistent result for each delivery on a
/// confirm channel, and acknowledges deliveries only once their results are confirmed, with one `basic.ack`
/// (`multiple`) for every delivery whose result the broker confirmed since the last ack. Job bodies are not
/// parsed. It runs in a process of its own (`warren bench baseline-worker`) so that its CPU time and memory are
/// measured exactly as a Warren worker's, and returns once that process (its parent) is gone.
///
/// Thread safety: confined to the thread that calls ``run()``.
public final class BaselineWorker {
    /// What to consume and where to publish results.
    public struct Configuration: Sendable {
        /// Broker URL.
        public var url: String
        /// The job queue to consume (it must exist).
        public var queue: String
        /// The queue results are published to, through the default exchange (it must exist).
        public var resultQueue: String
        /// Most unacknowledged deliveries (`basic.qos`).
        public var prefetch: Int
        /// Warren choices to copy. Default: none.
        public var variants: Set<BaselineVariant> = []

        /// A baseline worker that copies none of Warren's choices.
        public init(url: String, queue: String, resultQueue: String, prefetch: Int) {
            self.url = url
            self.queue = queue
            self.resultQueue = resultQueue
            self.prefetch = prefetch
        }
    }

    private static let jobsChannel: UInt16 = 1
    private static let publishChannel: UInt16 = 2

    private let configuration: Configuration
    private let connection: AMQPConnection
    private let pump: AMQPEventPump
    private let results: ConfirmChannel<Void>
    /// Deliveries whose results are published, oldest first: (the result's publish number, the delivery tag).
    private var unsettled: [(publish: UInt64, deliveryTag: UInt64)] = []
    private var unsettledHead = 0
    /// The process that started this one: when it is gone, no one will stop this worker.
    private let parent = getppid()
    /// With ``BaselineVariant/operationQueue``: where deliveries run, and how their ends come back.
    private let operations: OperationQueue?
    /// The ends of operations on their way back to the connection's thread (Warren's mailbox).
    private let hop = Mailbox<(tag: UInt64, correlationID: String?)>()
    /// With ``BaselineVariant/operationQueue``: deliveries whose results are not confirmed yet, and deliveries whose
    /// results are, not acknowledged yet; operations end in any order.
    private var pendingTags: Set<UInt64> = []
    private var readyTags: [UInt64] = []

    /// Connects, then consumes on one channel and publishes with confirms on another, as a Warren worker does.
    /// - Throws: `AMQPError` when the broker cannot be reached or refuses a request.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        if configuration.variants.contains(.operationQueue) {
            let queue = OperationQueue()
            queue.maxConcurrentOperationCount = configuration.prefetch
            operations = queue
        } else {
            operations = nil
        }
        var broker = try AMQPConfiguration(url: configuration.url)
        broker.connectionName = "warren bench baseline worker"
        connection = try AMQPConnection(configuration: broker)
        pump = AMQPEventPump(connection)
        results = ConfirmChannel(Self.publishChannel, on: connection)
        try results.open()
        pump.route(Self.publishChannel, to: results)
        try connection.openChannel(Self.jobsChannel)
        try connection.qos(prefetchCount: UInt16(configuration.prefetch), channel: Self.jobsChannel)
        try connection.consume(configuration.queue, channel: Self.jobsChannel)
    }

    /// Works until the process is stopped, or until the process that started it is gone.
    /// - Throws: `AMQPError` when the connection fails or the broker refuses a result.
    public func run() throws {
        pump.route(Self.jobsChannel) { [unowned self] delivery in
            guard let operations else {
                return try publishResult(of: delivery.deliveryTag, correlationID: delivery.properties.messageID)
            }
            pendingTags.insert(delivery.deliveryTag)
            let hop = hop
            let (tag, correlationID) = (delivery.deliveryTag, delivery.properties.messageID)
            operations.addOperation { hop.post((tag, correlationID)) }
        }
        while true {
            if operations != nil {
                for ended in hop.drain() { try publishResult(of: ended.tag, correlationID: ended.correlationID) }
            }
            try pump.dispatch()
            if results.takeAnswers().contains(where: { !$0.isAck }) {
                throw AMQPError(.library, "the broker refused a result (basic.nack)")
            }
            try operations == nil ? acknowledgeConfirmed() : acknowledgeConfirmedInTagOrder()
            if getppid() != parent { return connection.close() }
            // The plain baseline waits on its socket alone, as it did before the variant existed.
            if operations == nil {
                connection.waitForActivity(wakeUp: nil, timeout: .seconds(1))
            } else {
                hop.sleep { connection.waitForActivity(wakeUp: hop.wakeUp, timeout: .seconds(1)) }
            }
        }
    }

    /// Publishes the result of the delivery `deliveryTag`, which waits for its confirm.
    private func publishResult(of deliveryTag: UInt64, correlationID: String?) throws {
        let toExchange = configuration.variants.contains(.resultsExchange)
        var properties = Self.resultProperties
        properties.correlationID = correlationID
        let number = try results.publish(
            BaselinePayloads.result, exchange: toExchange ? Topology.resultsExchange : "",
            routingKey: toExchange ? correlationID ?? "" : configuration.resultQueue, properties: properties)
        unsettled.append((number, deliveryTag))
    }

    private static let resultProperties = MessageProperties(contentType: "application/json", persistent: true)

    /// Acknowledges, with one `basic.ack` (`multiple`), the deliveries whose results are confirmed, up to the
    /// first one whose result is not.
    private func acknowledgeConfirmedInTagOrder() throws {
        while unsettledHead < unsettled.count, !results.awaiting.isAwaiting(unsettled[unsettledHead].publish) {
            let tag = unsettled[unsettledHead].deliveryTag
            pendingTags.remove(tag)
            readyTags.append(tag)
            unsettledHead += 1
        }
        let floor = pendingTags.min() ?? .max
        guard let upTo = readyTags.filter({ $0 < floor }).max() else { return }
        try connection.ack(upTo, multiple: true, channel: Self.jobsChannel)
        readyTags.removeAll { $0 <= upTo }
        forgetAcknowledged()
    }

    /// Acknowledges every delivery whose result is confirmed: one `basic.ack` with `multiple` (one per delivery
    /// with the ``BaselineVariant/singleAcks`` variant).
    private func acknowledgeConfirmed() throws {
        let first = unsettledHead
        while unsettledHead < unsettled.count, !results.awaiting.isAwaiting(unsettled[unsettledHead].publish) {
            unsettledHead += 1
        }
        guard unsettledHead > first else { return }
        if configuration.variants.contains(.singleAcks) {
            for entry in unsettled[first..<unsettledHead] {
                try connection.ack(entry.deliveryTag, channel: Self.jobsChannel)
            }
        } else {
            try connection.ack(unsettled[unsettledHead - 1].deliveryTag, multiple: true, channel: Self.jobsChannel)
        }
        forgetAcknowledged()
    }

    /// Drops the settled entries at the front of ``unsettled`` once there are many.
    private func forgetAcknowledged() {
        guard unsettledHead > 1024 else { return }
        unsettled.removeFirst(unsettledHead)
        unsettledHead = 0
    }
}
