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
/// parsed. Its ``BaselineVariant``s copy Warren's choices one by one; with ``BaselineVariant/operationQueue`` and
/// ``BaselineVariant/resultsStream`` together, it is the design's floor: what Warren's model costs at the least. It runs in a process of its own (`warren bench baseline-worker`) so that its CPU time and memory are
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
        /// The stream queue results are also appended to, with ``BaselineVariant/resultsStream`` (it must exist).
        /// Default: `nil`, none.
        public var resultsStream: String?

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
    private static let storeChannel: UInt16 = 3

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
    /// With ``BaselineVariant/operationQueue`` or ``BaselineVariant/resultsStream``: deliveries not ready for their
    /// ack yet, and deliveries ready, not acknowledged yet; operations end, and batches are stored, in any order.
    private var pendingTags: Set<UInt64> = []
    private var readyTags: [UInt64] = []
    /// With ``BaselineVariant/resultsStream``: where results are also stored, and the deliveries that met one of
    /// the two conditions of their ack (result confirmed, batch stored) but not the other yet.
    private let stream: BaselineResultsStream?
    private var halfSettled: Set<UInt64> = []
    /// Deliveries handed to the operation queue whose results are not published yet: while there are none, the
    /// stream's batch goes at once, as Warren's does when no job is left in flight.
    private var running = 0

    /// Connects, then consumes on one channel and publishes with confirms on another, as a Warren worker does; with
    /// ``BaselineVariant/resultsStream``, stores results with confirms on a third.
    /// - Throws: `AMQPError` when the broker cannot be reached or refuses a request; ``BenchError`` for
    ///   ``BaselineVariant/resultsStream`` without ``Configuration/resultsStream``.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        let storesResults = configuration.variants.contains(.resultsStream)
        guard !storesResults || configuration.resultsStream != nil else {
            throw BenchError("the results-stream variant needs the stream queue to append results to")
        }
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
        if storesResults, let name = configuration.resultsStream {
            stream = try BaselineResultsStream(
                stream: name, threshold: configuration.prefetch, channel: Self.storeChannel, on: connection,
                pump: pump)
        } else {
            stream = nil
        }
        try connection.openChannel(Self.jobsChannel)
        try connection.qos(prefetchCount: UInt16(configuration.prefetch), channel: Self.jobsChannel)
        try connection.consume(configuration.queue, channel: Self.jobsChannel)
    }

    /// Works until the process is stopped, or until the process that started it is gone.
    /// - Throws: `AMQPError` when the connection fails or the broker refuses a result.
    public func run() throws {
        let acksInTagOrder = operations != nil || stream != nil
        pump.route(Self.jobsChannel) { [unowned self] delivery in
            if acksInTagOrder { pendingTags.insert(delivery.deliveryTag) }
            guard let operations else {
                return try publishResult(of: delivery.deliveryTag, correlationID: delivery.properties.messageID)
            }
            running += 1
            let hop = hop
            let (tag, correlationID) = (delivery.deliveryTag, delivery.properties.messageID)
            operations.addOperation { hop.post((tag, correlationID)) }
        }
        while true {
            if operations != nil {
                for ended in hop.drain() {
                    running -= 1
                    try publishResult(of: ended.tag, correlationID: ended.correlationID)
                }
            }
            try pump.dispatch()
            if results.takeAnswers().contains(where: { !$0.isAck }) {
                throw AMQPError(.library, "the broker refused a result (basic.nack)")
            }
            try stream?.storeIfDue(force: running == 0)
            try acksInTagOrder ? acknowledgeConfirmedInTagOrder() : acknowledgeConfirmed()
            if getppid() != parent { return connection.close() }
            // The plain baseline waits on its socket alone, as it did before the variants existed.
            if operations == nil {
                connection.waitForActivity(wakeUp: nil, timeout: pollTimeout)
            } else {
                hop.sleep { connection.waitForActivity(wakeUp: hop.wakeUp, timeout: pollTimeout) }
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
        stream?.append(deliveryTag)
    }

    /// How long the loop waits for the broker at most: until the stream's batch is due, and a second otherwise.
    private var pollTimeout: Duration {
        guard let dueAt = stream?.dueAt else { return .seconds(1) }
        return min(max(dueAt - .now, .zero), .seconds(1))
    }

    private static let resultProperties = MessageProperties(contentType: "application/json", persistent: true)

    /// Acknowledges, with one `basic.ack` (`multiple`), the deliveries ready for their ack, up to the first one
    /// that is not: its result is not confirmed, or (with the stream) its batch is not stored.
    private func acknowledgeConfirmedInTagOrder() throws {
        while unsettledHead < unsettled.count, !results.awaiting.isAwaiting(unsettled[unsettledHead].publish) {
            settledOnce(unsettled[unsettledHead].deliveryTag)
            unsettledHead += 1
        }
        if let stream {
            for tag in try stream.takeReleased() { settledOnce(tag) }
        }
        let floor = pendingTags.min() ?? .max
        guard let upTo = readyTags.filter({ $0 < floor }).max() else { return }
        try connection.ack(upTo, multiple: true, channel: Self.jobsChannel)
        readyTags.removeAll { $0 <= upTo }
        forgetAcknowledged()
    }

    /// Notes that one condition of delivery `tag`'s ack holds: its result is confirmed, or its batch stored. With
    /// the stream both must hold; without, the first is enough.
    private func settledOnce(_ tag: UInt64) {
        if stream != nil {
            guard !halfSettled.insert(tag).inserted else { return }
            halfSettled.remove(tag)
        }
        pendingTags.remove(tag)
        readyTags.append(tag)
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
