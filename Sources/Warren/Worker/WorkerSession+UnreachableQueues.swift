import AMQP
import Foundation
import Logging

/// Job queues out of reach while the connection lives: on a cluster, a classic queue lives on one node, and while
/// that node is down the broker refuses to declare it (404) and cancels its consumers. The worker goes on with its
/// other queues and looks for such a queue again every few seconds, instead of dropping a connection that serves
/// them.
extension WorkerSession {
    /// How long the worker waits before it looks for an unreachable job queue again.
    static let unreachableQueueRetry = Duration.seconds(5)

    /// Declares job queue `queue` (``Topology/declareJobQueue(_:priorities:quorum:on:channel:)``): whether this
    /// created it, or `nil` when its node is down, and the worker looks for it again later.
    func declareJobQueue(_ queue: String) throws -> Bool? {
        do {
            let created = try Topology.declareJobQueue(
                queue, priorities: configuration.priorityQueues, quorum: configuration.quorumQueues, on: connection,
                channel: Self.jobsChannel)
            unreachableQueues[queue] = nil
            return created
        } catch let error as AMQPError where error.isQueueNodeDown {
            if unreachableQueues[queue] == nil {
                logger.warning(
                    "job queue is on a cluster node that is down; taking jobs from it once it returns",
                    metadata: ["queue": "\(queue)", "error": "\(error)"])
            }
            unreachableQueues[queue] = .now + Self.unreachableQueueRetry
            return nil
        }
    }

    /// The broker cancelled the consumer of `queue`: its node went down, or the queue was deleted. The deliveries
    /// it brought stay with the worker (their acks reach the queue only if it still lives).
    func consumerCancelled(_ tag: String, queue: String) {
        logger.warning(
            "the broker cancelled the consumer of a job queue (its cluster node is down, or it was deleted); looking for it again",
            metadata: ["queue": "\(queue)"])
        jobConsumers[tag] = nil
        retiredConsumers[tag] = queue
        consumerLimits[queue] = nil
        unreachableQueues[queue] = .now + Self.unreachableQueueRetry
    }

    /// Looks for the unreachable job queues whose time has come, and consumes those it finds again.
    func retryUnreachableQueues() throws {
        guard !unreachableQueues.isEmpty, isConsuming, stopDeadline == nil else { return }
        let now = ContinuousClock.now
        for (queue, due) in unreachableQueues where due <= now {
            guard try declareJobQueue(queue) != nil else { continue }
            logger.info("job queue reachable again", metadata: ["queue": "\(queue)"])
            if !pausedQueues.contains(queue) { try startConsumer(of: queue) }
        }
    }

    /// Starts consuming `queue` on a live connection (resumed, or reachable again), within the prefetch: where
    /// consumers are renewed, with the limit its budget leaves (``renewConsumersIfDue()``); else under the channel's
    /// limit.
    func startConsumer(of queue: String) throws {
        guard isConsuming, unreachableQueues[queue] == nil, !jobConsumers.values.contains(queue) else { return }
        if renewsConsumers {
            consumerLimits[queue] = nil
            return consumerLimitsMayFallShort()
        }
        try useChannelWidePrefetch()
        try consumeJobs(from: queue)
    }
}

/// Jobs held while a queue they must go to is out of reach. A publish to a classic queue whose cluster node is
/// down is confirmed, and lost; so the worker declares such a queue before it publishes there (the dead-letter
/// queue at the first dead letter of each turn, a delay queue before each use), and when its node is down, holds
/// the job, unacknowledged, and tries again every few seconds.
extension WorkerSession {
    /// Runs `deadLettering`, which dead-letters the job of `delivery`, once the dead-letter queue is found
    /// reachable: now, or later.
    func whenDeadLettersReachable(of delivery: Delivery, _ deadLettering: @escaping () throws -> Void) throws {
        if deadLettersReachable == nil {
            deadLettersReachable = try Topology.declareDeadLetters(
                quorum: configuration.quorumQueues, on: connection, channel: Self.publishChannel)
        }
        guard deadLettersReachable == true else {
            return try hold(
                "the dead-letter queue is on a cluster node that is down; holding jobs to dead-letter until it returns",
                ["queue": "\(Topology.deadQueue)"], delivery
            ) { [unowned self] in try whenDeadLettersReachable(of: delivery, deadLettering) }
        }
        try deadLettering()
    }

    /// Holds the job of `delivery`: `work` runs again when the next attempt is due, and holds it again if it must.
    /// Logs `why` once while jobs are held for it. A held job raises the prefetch by one, as a parked job does, so
    /// that held jobs do not keep the worker from the jobs it can run.
    func hold(
        _ why: String, _ metadata: Logger.Metadata, _ delivery: Delivery, _ work: @escaping () throws -> Void
    ) throws {
        if heldReasons.insert(why).inserted { logger.warning("\(why)", metadata: metadata) }
        heldJobs.append(HeldJob(delivery: delivery, heldAt: Date(), work: work))
        heldJobsRetryAt = heldJobsRetryAt ?? .now + Self.unreachableQueueRetry
        try updatePrefetch()
    }

    /// Sends a job back to its queue after ``unreachableQueueRetry``, not at once: a job whose dead letter or delayed
    /// copy a full queue refused would run again at once, be refused again, and so on, as fast as the broker goes.
    func requeueLater(_ deliveryTag: UInt64) {
        laterRequeues.append((deliveryTag, .now + Self.unreachableQueueRetry))
    }

    /// Sends back the jobs ``requeueLater(_:)`` keeps whose time came.
    func requeueDueJobs() throws {
        let now = ContinuousClock.now
        while let first = laterRequeues.first, first.due <= now {
            laterRequeues.removeFirst()
            try nackJob(first.deliveryTag, requeue: true)
        }
    }

    /// Runs the held jobs' work again, once it is due.
    func retryHeldJobs() throws {
        guard let due = heldJobsRetryAt, due <= .now else { return }
        let held = heldJobs
        heldJobs = []
        heldJobsRetryAt = nil
        deadLettersReachable = nil
        for job in held { try job.work() }
        try updatePrefetch()
        if heldJobs.isEmpty {
            heldReasons = []
            // They went where they waited to go, or ended (cancelled meanwhile).
            logger.info("no job is held for a queue out of reach any more", metadata: ["jobs": "\(held.count)"])
        }
    }
}

/// A job held until the queue it must go to is reachable: its delivery, unacknowledged, and what to do then.
///
/// Thread safety: confined to the worker's broker thread.
struct HeldJob {
    let delivery: Delivery
    /// When it was first held (held again at each try, it keeps this).
    let heldAt: Date
    let work: () throws -> Void
}
