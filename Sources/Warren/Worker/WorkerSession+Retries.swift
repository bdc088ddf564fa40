import AMQP
import Foundation

/// Retrying jobs whose handler failed with a retryable error.
///
/// The job message is republished, untouched but for its `x-warren-attempt` and `x-warren-not-before` headers, to a
/// delay queue whose messages expire back into the job's queue, hop after hop until the wait is over; the delivery is
/// acknowledged once the broker confirmed the copy.
/// No result is published for an attempt that will be retried: a job has one terminal result.
extension WorkerSession {
    /// The wait before attempt `attempt + 1`: 1 s, 2 s, 4 s … at most 5 minutes, ±25 %.
    static func retryDelay(after attempt: Int) -> Duration {
        let base = min(Double(1 << min(max(attempt, 1) - 1, 20)), 300)
        return .milliseconds(Int(base * 1000 * Double.random(in: 0.75...1.25)))
    }

    /// How long `job`, which failed with `error`, waits before it runs again, or `nil` if it does not: the error
    /// is not retryable, no attempts are left, or the wait (the one the error chose, ``JobError/retryAfter``, else
    /// the backoff) would not end before the job's deadline, when the retry could only be cancelled: that failure is
    /// the job's last, with its own error.
    func retryWait(_ job: InFlightJob, after error: JobError) -> Duration? {
        guard error.retryable else { return nil }
        guard job.attempt < job.descriptor.attemptLimit else {
            job.operation.job.logger.info(
                "not retrying the job: it had its last attempt",
                metadata: ["maxAttempts": "\(job.descriptor.attemptLimit)"])
            return nil
        }
        let wait = error.retryAfter ?? Self.retryDelay(after: job.attempt)
        if let deadline = job.descriptor.deadline, Date().addingTimeInterval(wait / .seconds(1)) >= deadline {
            job.operation.job.logger.info(
                "not retrying the job: its wait would end past its deadline",
                metadata: ["waitMs": "\(Int(wait / .milliseconds(1)))", "deadline": "\(WireCoding.text(of: deadline))"])
            return nil
        }
        return wait
    }

    /// Republishes `job` to the delay queues for its next attempt, after `wait`, and acks it once the broker has the
    /// copy. The wait goes in hops, as a scheduled job's does, its end in the message's not-before header: a copy
    /// that expired sooner than its delay queue's length could wait behind one that expires later.
    /// The attempt's `timings` go to the run-time and queue-wait metrics.
    func retry(_ job: InFlightJob, after error: JobError, waiting wait: Duration, timings: JobTimings) throws {
        let milliseconds = Int(wait.components.seconds) * 1000 + Int(wait.components.attoseconds / 1_000_000_000_000_000)
        job.operation.job.logger.info(
            "job failed; retrying", metadata: ["error": "\(error)", "delayMs": "\(milliseconds)"])
        metrics.retried(type: job.descriptor.type, timings: timings)
        let notBefore = Int64((Date().timeIntervalSince1970 * 1000).rounded(.up)) + Int64(milliseconds)
        try delay(
            job.delivery, from: job.queue, milliseconds: Self.scheduleHop(milliseconds: milliseconds),
            attempt: job.attempt + 1, notBefore: notBefore)
    }

    /// Ends `delivery`'s job `cancelled`, if a cancellation covers it; whether it did.
    func endIfCancelled(_ delivery: Delivery, from queue: String) throws -> Bool {
        guard
            let descriptor = try? jobDecoder.decode(
                delivery.body, contentType: delivery.properties.contentType,
                contentEncoding: delivery.properties.contentEncoding),
            let cancellation = cancellations.cancellation(of: descriptor, queue: queue)
        else { return false }
        let now = Date()
        let result = makeResult(
            descriptor, delivery: delivery, status: .cancelled, cancellation: cancellation,
            timings: JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: now, finishedAt: now))
        try end(delivery, with: result, lock: HeldLock(descriptor))
        return true
    }

    /// Republishes `delivery` to a delay queue that sends it back to `queue` after `milliseconds`, with
    /// `attempt` in its attempt header (and `notBefore`, milliseconds since 1970, in its not-before header, if
    /// given), and acks it once the broker has the copy.
    func delay(
        _ delivery: Delivery, from queue: String, milliseconds: Int, attempt: Int, notBefore: Int64? = nil
    ) throws {
        let bucket = Topology.delayQueueSeconds.first { $0 * 1000 >= milliseconds } ?? Topology.delayQueueSeconds.last!
        let delayQueue = Topology.delayQueue(for: queue, seconds: bucket)
        // Declared before every use, never cached: a delay queue deletes itself after an hour unused, and a publish
        // to a queue that is gone, or whose cluster node is down, would be confirmed and lost.
        let again = { [unowned self] in
            // Cancelled while held: it ends here, as it would have when it came back from the delay queue.
            guard try !endIfCancelled(delivery, from: queue) else { return }
            try delay(delivery, from: queue, milliseconds: milliseconds, attempt: attempt, notBefore: notBefore)
        }
        let kind: Bool?
        do {
            kind = try Topology.declareDelayQueue(
                for: queue, seconds: bucket, quorum: delayQueueKinds[delayQueue] ?? true, on: connection)
        } catch let error as AMQPError
            where error.code == .channelClosed && error.channel == Topology.declarationChannel
        {
            // Refused, the connection open (no permission to configure it, the virtual host's queue limit reached):
            // the job is held, not sent back to run again at once, over and over, without its attempt counted.
            let why = "the broker refuses a delay queue; holding jobs to delay until it accepts it"
            return try hold(why, ["queue": "\(delayQueue)", "error": "\(error)"], delivery, again)
        }
        guard let kind else {
            let why = "a delay queue is on a cluster node that is down; holding jobs to delay until it returns"
            return try hold(why, ["queue": "\(delayQueue)"], delivery, again)
        }
        delayQueueKinds[delayQueue] = kind
        var properties = delivery.properties
        var headers = properties.headers ?? [:]
        headers[Topology.attemptHeader] = .int(Int64(attempt))
        if let notBefore { headers[Topology.notBeforeHeader] = .int(notBefore) }
        headers["x-death"] = nil
        properties.headers = headers
        properties.expiration = String(milliseconds)
        properties.persistent = true
        let copy = try publish(delivery.body, exchange: "", routingKey: delayQueue, properties: properties)
        try settle(delivery.deliveryTag, action: .ack, after: [.publish(copy)])
    }
}
