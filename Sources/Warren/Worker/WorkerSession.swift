import AMQP
import Foundation
import Logging

/// The broker side of a worker: owns the connection and runs the loop that consumes, publishes, confirms and acks.
///
/// Thread safety: confined. Created and run on the broker thread; other threads reach it only through the
/// worker's ``Mailbox``.
final class WorkerSession {
    static let jobsChannel: UInt16 = 1
    static let publishChannel: UInt16 = 2
    static let controlChannel: UInt16 = 3

    let worker: Worker
    let connection: AMQPConnection
    let localQueues: [String: LocalQueue]
    let jobDecoder: JobDecoder
    var logger: Logger
    var inFlight: [String: InFlightJob] = [:]
    var unconfirmed: [UInt64: Settlement] = [:]
    var publishCount: UInt64 = 0
    var cancellations = CancellationRegistry()
    /// Job queue consumed, by consumer tag.
    var jobConsumers: [String: String] = [:]
    var stopDeadline: ContinuousClock.Instant?

    var configuration: Worker.Configuration { worker.configuration }

    init(worker: Worker) throws {
        self.worker = worker
        logger = worker.configuration.logger
        logger[metadataKey: "worker"] = "\(worker.configuration.workerID)"
        do {
            connection = try AMQPConnection(configuration: worker.broker)
        } catch let error as AMQPError {
            throw WarrenError(.broker, error.description)
        }
        jobDecoder = JobDecoder(maxMessageBytes: worker.configuration.maxMessageBytes)
        localQueues = worker.configuration.localQueues.reduce(into: [:]) { queues, entry in
            queues[entry.key] = LocalQueue(name: entry.key, width: entry.value)
        }
    }

    func run() throws {
        defer { connection.close() }
        do {
            try declareAndConsume()
            logger.info(
                "worker started",
                metadata: [
                    "broker": "\(worker.broker.redactedURL)", "queues": "\(configuration.queues)",
                    "prefetch": "\(configuration.effectivePrefetch)",
                    "localQueues": "\(localQueues.values.map { "\($0.name)=\($0.width)" }.sorted())",
                ])
            while true {
                for message in worker.mailbox.drain() { try handle(message) }
                try readEvents()
                if let stopDeadline, ContinuousClock.now >= stopDeadline { cancelAll(reason: "shutdown") }
                if isDone { break }
                connection.waitForActivity(wakeUp: worker.mailbox.wakeUp, timeout: pollTimeout)
            }
            logger.info("worker stopped")
        } catch let error as AMQPError {
            abandonAll()
            throw WarrenError(.broker, "lost the broker at \(worker.broker.redactedURL): \(error)")
        }
    }

    private var isDone: Bool {
        stopDeadline != nil && inFlight.isEmpty && unconfirmed.isEmpty
    }

    private var pollTimeout: Duration {
        let heartbeat = Duration.seconds(max(worker.broker.heartbeat, 2)) / 2
        guard let stopDeadline else { return heartbeat }
        return min(heartbeat, max(stopDeadline - ContinuousClock.now, .milliseconds(1)))
    }

    private func declareAndConsume() throws {
        try connection.openChannel(Self.publishChannel)
        try Topology.declareResults(on: connection, channel: Self.publishChannel)
        try Topology.declareDeadLetters(on: connection, channel: Self.publishChannel)
        try connection.enableConfirms(channel: Self.publishChannel)
        try consumeControl()
        try connection.openChannel(Self.jobsChannel)
        let prefetch = UInt16(configuration.effectivePrefetch)
        try connection.qos(prefetchCount: prefetch, global: configuration.queues.count > 1, channel: Self.jobsChannel)
        for queue in configuration.queues {
            try Topology.declareJobQueue(queue, on: connection, channel: Self.jobsChannel)
            jobConsumers[try connection.consume(queue, channel: Self.jobsChannel)] = queue
        }
    }

    // MARK: - Events

    private func readEvents() throws {
        var budget = 512
        while budget > 0, let event = try connection.nextEvent() {
            budget -= 1
            switch event {
            case .delivery(let delivery) where delivery.channel == Self.controlChannel:
                try handleControl(delivery)
            case .delivery(let delivery):
                try handleJob(delivery)
            case .confirm(_, let tag, let multiple, let ack):
                try settle(upTo: tag, multiple: multiple, ack: ack)
            case .channelClosed(let error):
                throw error
            case .consumerCancelled(_, let tag):
                throw AMQPError(.channelClosed, "the broker cancelled consumer '\(tag)' (was its queue deleted?)")
            case .blocked(let reason):
                logger.warning("the broker blocked this connection", metadata: ["reason": "\(reason)"])
            case .unblocked:
                logger.info("the broker unblocked this connection")
            case .returned:
                break
            }
        }
    }

    private func handle(_ message: WorkerMessage) throws {
        switch message {
        case .finished(let finished):
            try finish(finished)
        case .stop where stopDeadline == nil:
            logger.info("stopping: no new jobs; executing ones get \(configuration.shutdownGracePeriod) to finish")
            stopDeadline = .now + configuration.shutdownGracePeriod
            for tag in jobConsumers.keys { try connection.cancelConsumer(tag, channel: Self.jobsChannel) }
            for job in inFlight.values where !job.operation.isExecuting {
                job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is stopping"))
            }
        case .stop:
            logger.info("stopping now: cancelling executing jobs")
            stopDeadline = .now
        }
    }

    private func cancelAll(reason: String) {
        for job in inFlight.values where !job.operation.isFinished {
            job.operation.cancel(Cancellation(reason: reason, message: "the worker is stopping"))
        }
    }

    /// The connection is gone: the broker requeued every unacknowledged delivery, so local copies stop.
    private func abandonAll() {
        for job in inFlight.values {
            job.operation.cancel(Cancellation(reason: "connectionLost", message: "the worker lost its broker"))
        }
        inFlight = [:]
    }

    // MARK: - Publishing and settling

    /// Publishes on the confirm channel and returns the publish's confirm number.
    func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties
    ) throws -> UInt64 {
        try connection.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, channel: Self.publishChannel)
        publishCount += 1
        return publishCount
    }

    /// Settles `deliveryTag` (ack or requeue) once every publish in `confirms` is confirmed.
    func settle(_ deliveryTag: UInt64, action: Settlement.Action, after confirms: [UInt64]) throws {
        guard !confirms.isEmpty else {
            return try apply(Settlement(deliveryTag: deliveryTag, action: action, unconfirmed: 0))
        }
        let settlement = Settlement(deliveryTag: deliveryTag, action: action, unconfirmed: confirms.count)
        for confirm in confirms { unconfirmed[confirm] = settlement }
    }

    private func settle(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        let confirmed = multiple ? unconfirmed.keys.filter { $0 <= tag }.sorted() : [tag]
        for number in confirmed {
            guard let settlement = unconfirmed.removeValue(forKey: number) else { continue }
            settlement.unconfirmed -= 1
            if !ack { settlement.refused = true }
            if settlement.unconfirmed == 0 { try apply(settlement) }
        }
    }

    private func apply(_ settlement: Settlement) throws {
        if settlement.refused {
            logger.error("the broker refused a result; requeueing the job so it runs again")
        }
        if settlement.action == .ack && !settlement.refused {
            try connection.ack(settlement.deliveryTag, channel: Self.jobsChannel)
        } else {
            try connection.nack(settlement.deliveryTag, requeue: true, channel: Self.jobsChannel)
        }
    }
}
