import AMQP
import Foundation

/// The broker connection a ``Producer``'s roles share: its event pump, and the publish channel with the broker's
/// answers to what went out on it.
///
/// Jobs, unique locks' tokens and control messages go out on one confirm channel, ``publishChannel``. Every call
/// waits for the broker's answers to all its publishes before it returns (``waitForAnswers()``). The broker's
/// `basic.return`s of mandatory publishes are kept until a call takes them.
///
/// Thread safety: confined to the thread of its ``Producer``.
final class ProducerConnection {
    static let publishChannel: UInt16 = 1

    let connection: AMQPConnection
    let pump: AMQPEventPump
    let metrics: ProducerMetrics
    /// The publish channel; a job's publish waits with its queue and when it left, others with `nil`.
    private let publishes: ConfirmChannel<PublishedJob?>
    /// The numbers of the publishes the broker refused (`basic.nack`) since the last wait for its answers.
    private var refused: Set<UInt64> = []
    /// Routing keys of the publishes the broker returned (`basic.return`), not taken yet.
    private(set) var returnedQueues: [String] = []

    /// A job on its way: its queue, for the metrics, and when it was handed to the connection.
    struct PublishedJob {
        let queue: String
        let sentAt: ContinuousClock.Instant
    }

    /// Connects and opens the publish channel.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL, `broker` when the connection fails).
    init(url: String, metrics: ProducerMetrics) throws {
        self.metrics = metrics
        let addresses = try BrokerAddresses(
            url, connectionName: "warren producer \(ProcessInfo.processInfo.processIdentifier)")
        connection = try addresses.connect()
        pump = AMQPEventPump(connection)
        publishes = ConfirmChannel(Self.publishChannel, on: connection)
        do {
            try publishes.open()
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
        let route = ChannelRoute()
        route.onConfirm = { [unowned self] in confirmed(upTo: $0, multiple: $1, ack: $2) }
        route.onReturn = { [unowned self] in returnedQueues.append($0.routingKey) }
        pump.route(Self.publishChannel, to: route)
    }

    /// Closes the connection; every call after it throws ``closedError``.
    func close() {
        connection.close()
    }

    /// What every call after ``close()`` throws.
    static let closedError = WarrenError(.invalidConfiguration, "the producer was closed")

    /// Runs `body`, with the library's errors as ``WarrenError``: `queueUnreachable` for a queue on a cluster node
    /// that is down, ``closedError`` once the producer was closed, `broker` otherwise.
    func brokerCall<T>(_ body: () throws -> T) throws -> T {
        guard connection.isOpen else { throw Self.closedError }
        do {
            return try body()
        } catch let error as AMQPError where error.code == .closed {
            throw Self.closedError
        } catch let error as AMQPError {
            throw WarrenError(error.isQueueNodeDown ? .queueUnreachable : .broker, error.description)
        }
    }

    /// Publishes on the publish channel and returns the number the broker's answer will have.
    /// - Parameter job: For a job, its queue: the answer's delay is measured (``ProducerMetrics``).
    @discardableResult
    func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties,
        mandatory: Bool = false, job queue: String? = nil
    ) throws -> UInt64 {
        try publishes.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, mandatory: mandatory,
            awaiting: queue.map { PublishedJob(queue: $0, sentAt: .now) })
    }

    /// Waits for the broker's answer to every publish so far, and returns the numbers of those it refused
    /// (`basic.nack`) since the last wait.
    /// - Throws: ``WarrenError`` (`timeout`) when some are not answered within 30 s.
    func waitForAnswers() throws -> Set<UInt64> {
        guard try pump.dispatch(until: .now + .seconds(30), isDone: { publishes.awaiting.isEmpty }) else {
            let count = publishes.awaiting.count
            throw WarrenError(
                .timeout,
                "the broker did not confirm \(count) message\(count == 1 ? "" : "s") within 30 s "
                    + "(\(WarrenError.unconfirmedCauses)): what was sent may still take effect once it reads it")
        }
        defer { refused = [] }
        return refused
    }

    /// Waits for the broker's answer to every publish so far, and throws if it refused any.
    func waitForConfirms() throws {
        guard try waitForAnswers().isEmpty else {
            throw WarrenError(.broker, "the broker refused a published message (basic.nack)")
        }
    }

    /// Whether the broker answered every publish so far.
    var isAnswered: Bool { publishes.awaiting.isEmpty }

    /// Takes in the broker's answer to publishes: notes the refused ones, and measures the jobs'.
    private func confirmed(upTo number: UInt64, multiple: Bool, ack: Bool) {
        publishes.confirmed(upTo: number, multiple: multiple, ack: ack)
        let now = ContinuousClock.now
        for answer in publishes.takeAnswers() {
            if !answer.isAck { refused.insert(answer.number) }
            if let job = answer.payload { metrics.confirmed(queue: job.queue, after: now - job.sentAt) }
        }
    }

    /// Opens the publish channel afresh, its publishes numbered from 1 again; answers still awaited are given up.
    func reopenPublishChannel() throws {
        try publishes.reopen()
        refused = []
    }

    /// Takes out of the returned publishes' queues the ones that match `isIncluded`.
    func takeReturnedQueues(where isIncluded: (String) -> Bool) -> Set<String> {
        let taken = Set(returnedQueues.filter(isIncluded))
        returnedQueues.removeAll(where: isIncluded)
        return taken
    }

    /// Takes every returned publish's queue, in the order they came back.
    func takeReturnedQueues() -> [String] {
        defer { returnedQueues = [] }
        return returnedQueues
    }
}
