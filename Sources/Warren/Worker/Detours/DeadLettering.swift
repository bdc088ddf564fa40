import AMQP
import Foundation
import Logging

/// Jobs that end in `warren.dead`: the job message, untouched, republished to the dead-letter exchange with the
/// reason in its headers, and acknowledged once the broker confirmed it (and the job's failed result, if any).
///
/// The dead-letter queue is declared before the first dead letter of each turn: a publish to a classic queue whose
/// cluster node is down is confirmed, and lost. While it is out of reach, or while the broker refuses the letters
/// (a full `warren.dead`), the job is held (``HeldDeliveries``) and tried again every few seconds: it does not run
/// again.
/// Thread safety: confined to the worker's broker thread.
final class DeadLettering {
    private let link: BrokerLink
    private let settlements: Settlements
    private let locks: UniqueLockReleaser
    private let held: HeldDeliveries
    private let consumers: ConsumerControl
    private let metrics: WorkerMetrics
    private let quorumQueues: Bool
    /// Whether the dead-letter queue was found reachable this turn (`nil`: not looked for yet).
    private var reachable: Bool?

    init(
        link: BrokerLink, settlements: Settlements, locks: UniqueLockReleaser, held: HeldDeliveries,
        consumers: ConsumerControl, metrics: WorkerMetrics, quorumQueues: Bool
    ) {
        self.link = link
        self.settlements = settlements
        self.locks = locks
        self.held = held
        self.consumers = consumers
        self.metrics = metrics
        self.quorumQueues = quorumQueues
    }

    /// Declares the dead-letter exchange and queue on a new connection.
    func connected() throws {
        reachable = try Topology.declareDeadLetters(
            quorum: quorumQueues, on: link.connection, channel: BrokerLink.Channel.publish)
    }

    /// The queue is looked for again before the next dead letter: at the end of each turn, and before held jobs
    /// are tried again.
    func lookAgain() {
        reachable = nil
    }

    /// Once the dead-letter queue is reachable, releases `lock`, dead-letters the job of `delivery` with `error`,
    /// publishes its failed `result` if it has one, and acks it once the broker confirmed them.
    func deadLetterJob(_ delivery: Delivery, error: JobError, result: JobResult?, lock: HeldLock?) throws {
        try whenReachable(delivery) { [unowned self] in
            try locks.release(lock)
            let settlement = settlements.settlement(of: delivery.deliveryTag, deadLettered: (delivery, error))
            try deadLetter(delivery, error: error, settling: settlement)
            if let result { try settlements.publish(result, replyTo: delivery.replyQueue, settling: settlement) }
            try settlements.settle(settlement)
        }
    }

    /// The broker refused the dead letter of the job of `delivery`: the job is held, and its letter published
    /// again every few seconds.
    func letterRefused(_ delivery: Delivery, error: JobError) {
        held.hold(
            """
            the broker refused a dead letter (is warren.dead or warren.dead.watch at its length limit, with \
            x-overflow reject-publish?); holding the job, and publishing its dead letter again every \
            \(HeldDeliveries.retryDelay.components.seconds) s
            """, ["queue": "\(Topology.deadQueue)"], delivery
        ) { [unowned self] in try deadLetterJob(delivery, error: error, result: nil, lock: nil) }
    }

    /// Runs `deadLettering` once the dead-letter queue is found reachable: now, or later.
    private func whenReachable(_ delivery: Delivery, _ deadLettering: @escaping () throws -> Void) throws {
        if reachable == nil {
            reachable = try Topology.declareDeadLetters(
                quorum: quorumQueues, on: link.connection, channel: BrokerLink.Channel.publish)
        }
        guard reachable == true else {
            return held.hold(
                "the dead-letter queue is on a cluster node that is down; holding jobs to dead-letter until it returns",
                ["queue": "\(Topology.deadQueue)"], delivery
            ) { [unowned self] in try whenReachable(delivery, deadLettering) }
        }
        try deadLettering()
    }

    /// Republishes the message, untouched, to the dead-letter exchange with the reason in its headers.
    private func deadLetter(_ delivery: Delivery, error: JobError, settling settlement: Settlement) throws {
        let properties = Topology.deadLetterProperties(
            of: delivery.properties, reason: error.code, message: error.message, queue: consumers.queue(of: delivery))
        try link.publish(
            delivery.body, exchange: Topology.deadExchange, routingKey: delivery.routingKey, properties: properties,
            settling: settlement)
        metrics.deadLettered(reason: error.code)
    }
}
