import AMQP
import Foundation
import Logging

/// Results for the jobs the broker dead-letters itself.
///
/// RabbitMQ dead-letters a job to `warren.dead` without a worker's say when an operator's policy tells it to: the
/// job's time to live passed (`expired`), its queue was at its length limit (`maxlen`), a quorum queue delivered it
/// more often than its delivery limit (`delivery_limit`), or a consumer rejected it without requeueing it
/// (`rejected`). No worker ended such a job, so none published its result, and its dependents and waiters would
/// wait for good. Every worker consumes ``Topology/deadWatchQueue``, which holds a copy of each dead letter; the one
/// that takes the copy of such a letter publishes a `failed` result (`brokerDeadLettered`) for its job, and
/// acknowledges the copy once that is confirmed. The letter itself stays in `warren.dead`, for `warren dead list`
/// and `warren dead requeue`. The copies of the letters workers make, which carry their reason in their headers,
/// are acknowledged at once: those jobs have their results.
/// Thread safety: confined to the worker's broker thread.
final class DeadLetterWatch {
    private let link: BrokerLink
    private let settlements: Settlements
    private let locks: UniqueLockReleaser
    private let logger: Logger
    private let quorumQueues: Bool
    private let maxMessageBytes: Int
    private let workerID: String
    /// The consumer of ``Topology/deadWatchQueue`` on this connection, while there is one.
    private(set) var consumer: String?

    /// How many copies a worker holds at once.
    static let prefetch: UInt16 = 20

    init(
        link: BrokerLink, settlements: Settlements, locks: UniqueLockReleaser, configuration: Worker.Configuration,
        logger: Logger
    ) {
        self.link = link
        self.settlements = settlements
        self.locks = locks
        self.logger = logger
        quorumQueues = configuration.quorumQueues
        maxMessageBytes = configuration.maxMessageBytes
        workerID = configuration.workerID
    }

    /// Declares and consumes ``Topology/deadWatchQueue``; without it (its cluster node is down, or the broker
    /// refuses it), the worker goes on, with a warning.
    func watch() throws {
        consumer = nil
        let connection = link.connection
        do {
            try connection.openChannel(BrokerLink.Channel.deadWatch)
            guard
                try Topology.declareDeadLetterWatch(
                    quorum: quorumQueues, on: connection, channel: BrokerLink.Channel.deadWatch)
            else {
                return logger.warning(
                    """
                    the queue of dead letters' copies is on a cluster node that is down: jobs the broker \
                    dead-letters itself get no result from this worker until it reconnects
                    """,
                    metadata: ["queue": "\(Topology.deadWatchQueue)"])
            }
            try connection.qos(prefetchCount: Self.prefetch, channel: BrokerLink.Channel.deadWatch)
            let route = ChannelRoute { [unowned self] in try handle($0) }
            route.onConsumerCancel = { [unowned self] tag in
                guard tag == consumer else { throw BrokerLink.consumerCancelled(tag) }
                cancelled()
            }
            link.pump.route(BrokerLink.Channel.deadWatch, to: route)
            consumer = try connection.consume(Topology.deadWatchQueue, channel: BrokerLink.Channel.deadWatch)
        } catch let error as AMQPError where error.code == .channelClosed {
            // A refusal (no configure or read permission on the queue, say) closes only the channel it came on.
            logger.warning(
                "cannot consume the queue of dead letters' copies: jobs the broker dead-letters itself get no result",
                metadata: ["queue": "\(Topology.deadWatchQueue)", "error": "\(error)"])
        }
    }

    /// Stops taking copies, as the worker stops or retires: those the broker sent already still come and are
    /// handled; those not settled when the connection closes go back to the queue.
    func stopWatching() throws {
        guard let tag = consumer else { return }
        consumer = nil
        try link.connection.cancelConsumer(tag, channel: BrokerLink.Channel.deadWatch, awaitingReply: false)
    }

    /// The broker cancelled the consumer of the copies (their queue was deleted, or its cluster node went down):
    /// the worker goes on without it until it next connects.
    func cancelled() {
        consumer = nil
        logger.warning(
            """
            the broker cancelled the consumer of dead letters' copies (was the queue deleted, or its node lost?): \
            jobs the broker dead-letters itself get no result from this worker until it reconnects
            """,
            metadata: ["queue": "\(Topology.deadWatchQueue)"])
    }

    /// A copy of a dead letter: a `failed` result for a job the broker dead-lettered; nothing for the others. Read
    /// by its headers first: the copies of workers' own letters, and of messages of Warren's own queues (a unique
    /// job's lock, a fleet-wide rate limit's turn, which a catch-all `dead-letter-exchange` policy sends to
    /// `warren.dead` as they expire: they are no jobs), are acknowledged without reading their bodies.
    func handle(_ delivery: Delivery) throws {
        guard let (reason, queue) = DeadLetter.brokerDeath(of: delivery.properties),
            !(queue.map(Topology.isOwnQueue) ?? false)
        else { return try link.connection.ack(delivery.deliveryTag, channel: BrokerLink.Channel.deadWatch) }
        // An oversized body is not read, as a job's is not.
        let letter = DeadLetter(delivery, readingBody: delivery.body.count <= maxMessageBytes)
        guard let jobID = letter.jobID else {
            logger.warning(
                "the broker dead-lettered a message that names no job: no result for it",
                metadata: ["reason": "\(reason)", "queue": "\(queue ?? "-")"])
            return try link.connection.ack(delivery.deliveryTag, channel: BrokerLink.Channel.deadWatch)
        }
        let error = JobError(
            code: "brokerDeadLettered",
            message: "RabbitMQ dead-lettered the job from queue '\(queue ?? "?")' before a worker ended it "
                + "(x-death reason '\(reason)': \(Self.explanation(ofBrokerReason: reason)))")
        let salvaged = letter.salvaged
        let result = JobResult(
            jobID: jobID, type: letter.type, sequence: salvaged.sequence ?? 0, key: salvaged.key, status: .failed,
            error: error, attempt: delivery.sentAttempt, redelivered: reason == "delivery_limit",
            requeuedAt: delivery.requeuedAt, workerID: workerID, timings: JobTimings(finishedAt: Date()))
        logger.warning(
            "the broker dead-lettered a job; publishing its failed result",
            metadata: ["job": "\(jobID)", "reason": "\(reason)", "queue": "\(queue ?? "-")"])
        try locks.release(HeldLock(salvaged))
        let settlement = settlements.settlement(of: delivery.deliveryTag, channel: BrokerLink.Channel.deadWatch)
        try settlements.publish(result, replyTo: delivery.replyQueue, settling: settlement)
        try settlements.settle(settlement)
    }

    /// What RabbitMQ's dead-lettering `reason` means for a job.
    static func explanation(ofBrokerReason reason: String) -> String {
        switch reason {
        case "expired": "its time to live passed, under a message-ttl policy or expiration"
        case "maxlen": "its queue was at a max-length or max-length-bytes limit"
        case "delivery_limit": "the quorum queue delivered it more often than its delivery-limit"
        case "rejected": "a consumer rejected it without requeueing it"
        default: "see RabbitMQ's dead-lettering documentation"
        }
    }
}
