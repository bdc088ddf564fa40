import AMQP
import Foundation
import Logging

/// Jobs sent to wait in the broker: retries waiting out their backoff, scheduled jobs not due yet, and jobs parked
/// through the broker. Each is republished, untouched but for its attempt and not-before headers, to a delay queue
/// whose messages expire back into the job's queue, and acknowledged once the broker confirmed the copy.
///
/// Each hop waits exactly as long as its delay queue's name says (a power of two seconds, the longest that does not
/// pass the job's time), so that in a delay queue a job never waits behind one that expires later; only the last
/// hop, under a second, waits for the rest. Each hop comes back through a worker, which checks the job's
/// cancellation again.
/// Thread safety: confined to the worker's broker thread.
final class DelayQueues {
    private let link: BrokerLink
    private let settlements: Settlements
    private let held: HeldDeliveries
    private let logger: Logger
    /// Ends the job of a delivery from a queue, held meanwhile, if it was cancelled; whether it did.
    var endIfCancelled: (Delivery, String) throws -> Bool = { _, _ in false }
    /// The kind of each delay queue at its last use: whether it is a quorum queue.
    private var kinds: [String: Bool] = [:]

    init(link: BrokerLink, settlements: Settlements, held: HeldDeliveries, logger: Logger) {
        self.logger = logger
        self.link = link
        self.settlements = settlements
        self.held = held
    }

    /// How long the next hop toward a job's time waits, in milliseconds, with `milliseconds` left.
    static func hop(milliseconds: Int) -> Int {
        Topology.delayQueueSeconds.last { $0 * 1000 <= milliseconds }.map { $0 * 1000 } ?? max(milliseconds, 1)
    }

    /// The wait before attempt `attempt + 1`: 1 s, 2 s, 4 s … at most 5 minutes, ±25 %.
    static func retryDelay(after attempt: Int) -> Duration {
        let base = min(Double(1 << min(max(attempt, 1) - 1, 20)), 300)
        return .milliseconds(Int(base * 1000 * Double.random(in: 0.75...1.25)))
    }

    /// How long `job`, which failed with `error`, waits before it runs again, or `nil` if it does not: the error
    /// is not retryable, no attempts are left, or the wait (the one the error chose, ``JobError/retryAfter``, else
    /// the backoff) would not end before the job's deadline, when the retry could only be cancelled: that failure is
    /// the job's last, with its own error.
    static func retryWait(for job: InFlightJob, after error: JobError) -> Duration? {
        guard error.retryable else { return nil }
        guard job.attempt < job.descriptor.attemptLimit else {
            job.operation.job.logger.info(
                "not retrying the job: it had its last attempt",
                metadata: ["maxAttempts": "\(job.descriptor.attemptLimit)"])
            return nil
        }
        let wait = error.retryAfter ?? retryDelay(after: job.attempt)
        if let deadline = job.descriptor.deadline, Date().addingTimeInterval(wait / .seconds(1)) >= deadline {
            job.operation.job.logger.info(
                "not retrying the job: its wait would end past its deadline",
                metadata: ["waitMs": "\(Int(wait / .milliseconds(1)))", "deadline": "\(WireCoding.text(of: deadline))"])
            return nil
        }
        return wait
    }

    /// Republishes `delivery` to a delay queue that sends it back to `queue` after `milliseconds`, with `attempt`
    /// in its attempt header (and `notBefore`, milliseconds since 1970, in its not-before header, if given), and
    /// acks it once the broker has the copy.
    func delay(
        _ delivery: Delivery, from queue: String, milliseconds: Int, attempt: Int, notBefore: Int64? = nil
    ) throws {
        let bucket = Topology.delayQueueSeconds.first { $0 * 1000 >= milliseconds } ?? Topology.delayQueueSeconds.last!
        let delayQueue = Topology.delayQueue(for: queue, seconds: bucket)
        // Declared before every use, never cached: a delay queue deletes itself after an hour unused, and a publish
        // to a queue that is gone, or whose cluster node is down, would be confirmed and lost.
        let again = { [unowned self] in
            // Cancelled while held: it ends here, as it would have when it came back from the delay queue.
            guard try !endIfCancelled(delivery, queue) else { return }
            try delay(delivery, from: queue, milliseconds: milliseconds, attempt: attempt, notBefore: notBefore)
        }
        let kind: Bool?
        do {
            kind = try Topology.declareDelayQueue(
                for: queue, seconds: bucket, quorum: kinds[delayQueue] ?? true, on: link.connection)
        } catch let error as AMQPError
            where error.code == .channelClosed && error.channel == Topology.declarationChannel
        {
            // Refused, the connection open (no permission to configure it, the virtual host's queue limit reached):
            // the job is held, not sent back to run again at once, over and over, without its attempt counted.
            let why = "the broker refuses a delay queue; holding jobs to delay until it accepts it"
            return held.hold(why, ["queue": "\(delayQueue)", "error": "\(error)"], delivery, again)
        }
        guard let kind else {
            let why = "a delay queue is on a cluster node that is down; holding jobs to delay until it returns"
            return held.hold(why, ["queue": "\(delayQueue)"], delivery, again)
        }
        kinds[delayQueue] = kind
        var properties = delivery.properties
        var headers = properties.headers ?? [:]
        headers[Topology.attemptHeader] = .int(Int64(attempt))
        if let notBefore { headers[Topology.notBeforeHeader] = .int(notBefore) }
        headers["x-death"] = nil
        properties.headers = headers
        properties.expiration = String(milliseconds)
        properties.persistent = true
        let settlement = settlements.settlement(of: delivery.deliveryTag)
        try link.publish(
            delivery.body, exchange: "", routingKey: delayQueue, properties: properties, settling: settlement)
        try settlements.settle(settlement)
    }

    /// Sends `delivery`, whose job `descriptor` may not start before `notBefore`, on its next hop.
    func postpone(
        _ delivery: Delivery, _ descriptor: OperationDescriptor, until notBefore: Date, from queue: String,
        receivedAt: Date
    ) throws {
        let milliseconds = Int((notBefore.timeIntervalSince(receivedAt) * 1000).rounded(.up))
        let hop = Self.hop(milliseconds: milliseconds)
        logger.debug(
            "job not due yet; waiting in a delay queue",
            metadata: [
                "job": "\(descriptor.id)", "type": "\(descriptor.type)", "attempt": "\(delivery.attempt)",
                "notBefore": "\(WireCoding.text(of: notBefore))", "hopMs": "\(hop)",
            ])
        try delay(delivery, from: queue, milliseconds: hop, attempt: delivery.sentAttempt)
    }

    /// Sends `job`, which failed with `error`, round for its next attempt after `wait`: hop after hop, its end in the
    /// message's not-before header, since a copy that expired sooner than its delay queue's length could wait behind
    /// one that expires later.
    func retry(_ job: InFlightJob, after error: JobError, waiting wait: Duration) throws {
        let milliseconds = Int(wait / .milliseconds(1))
        let hop = Self.hop(milliseconds: milliseconds)
        job.operation.job.logger.info(
            "job failed; retrying", metadata: ["error": "\(error)", "delayMs": "\(milliseconds)", "hopMs": "\(hop)"])
        let notBefore = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up)) + Int64(milliseconds)
        try delay(job.delivery, from: job.queue, milliseconds: hop, attempt: job.attempt + 1, notBefore: notBefore)
    }

    /// Parks a job through the broker: away for a delay queue's own length, so that it comes back as it expires.
    func sendRound(_ delivery: Delivery, from queue: String, attempt: Int) throws {
        try delay(delivery, from: queue, milliseconds: DependencyGate.parkedRoundTrip, attempt: attempt)
    }
}
