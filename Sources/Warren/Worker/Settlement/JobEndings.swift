import AMQP
import Foundation
import Logging

/// How a job ends on this worker: with a result published and its delivery acknowledged once confirmed, or
/// dead-lettered with a failed result when it can never run, or when the broker refuses what it produced.
///
/// A job's unique lock is released just before its result goes out, so that whoever sees the result can enqueue
/// the key's next job at once. A result kept across a lost connection is published when the redelivery comes.
/// Thread safety: confined to the worker's broker thread.
final class JobEndings: SettlementsDelegate {
    private let link: BrokerLink
    private let settlements: Settlements
    private let locks: UniqueLockReleaser
    private let detours: Detours
    private let intake: JobIntake
    private let workerID: String
    private let logger: Logger

    init(
        link: BrokerLink, settlements: Settlements, locks: UniqueLockReleaser, detours: Detours, intake: JobIntake,
        workerID: String, logger: Logger
    ) {
        self.link = link
        self.settlements = settlements
        self.locks = locks
        self.detours = detours
        self.intake = intake
        self.workerID = workerID
        self.logger = logger
    }

    /// The result of `job` as this worker ends it.
    func result(
        _ job: InFlightJob, _ status: JobStatus, cancellation: Cancellation? = nil, timings: JobTimings,
        output: JSONValue? = nil, error: JobError? = nil
    ) -> JobResult {
        JobResult(
            job.descriptor, delivery: job.delivery, workerID: workerID, status: status, cancellation: cancellation,
            timings: timings, output: output, error: error)
    }

    /// Releases `lock`, the job's unique lock if it holds one, then publishes a succeeded or cancelled `result` and
    /// acks `delivery` once the broker confirmed it. When the connection fails first, the result is kept for the
    /// redelivery. A result larger than the broker takes fails the job instead.
    func end(_ delivery: Delivery, with result: JobResult, lock: HeldLock?) throws {
        let body = try result.encoded()
        guard body.count <= settlements.maxResultBytes else {
            return try endTooLarge(delivery, result, size: body.count, lock: lock)
        }
        let settlement = settlements.settlement(of: delivery.deliveryTag, result: result, delivery: delivery)
        do {
            try locks.release(lock)
            try settlements.publish(result, body: body, replyTo: delivery.replyQueue, settling: settlement)
        } catch {
            settlements.keepForRedelivery(result)
            throw error
        }
        try settlements.settle(settlement)
    }

    /// Ends the job of `delivery` `cancelled` before it ran.
    func endCancelled(
        _ delivery: Delivery, _ descriptor: OperationDescriptor, _ cancellation: Cancellation, receivedAt: Date
    ) throws {
        let timings = JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: receivedAt, finishedAt: Date())
        let result = JobResult(
            descriptor, delivery: delivery, workerID: workerID, status: .cancelled, cancellation: cancellation,
            timings: timings)
        try end(delivery, with: result, lock: HeldLock(descriptor))
    }

    /// Ends the job of `delivery`, held while it waited to go to a delay queue, `cancelled` if a cancellation
    /// covers it; whether it did.
    func endIfCancelled(_ delivery: Delivery, from queue: String) throws -> Bool {
        guard let descriptor = try? intake.decode(delivery),
            let cancellation = intake.cancellation(of: descriptor, queue: queue)
        else { return false }
        try endCancelled(delivery, descriptor, cancellation, receivedAt: Date())
        return true
    }

    /// Fails a job whose `result` (`size` bytes encoded) is larger than the broker takes: it is dead-lettered with
    /// reason `resultTooLarge`, and a failed result goes out in its place. Running it again would make the same
    /// result.
    private func endTooLarge(_ delivery: Delivery, _ result: JobResult, size: Int, lock: HeldLock?) throws {
        let error = JobError(
            code: "resultTooLarge",
            message: "the job's result is \(size) bytes; the broker takes messages of at most "
                + "\(link.maxMessageBytes) bytes (its max_message_size)")
        logger.error(
            "dead-lettering a job whose result is larger than the broker takes",
            metadata: ["job": "\(result.jobID)", "error": "\(error)"])
        var failed = result
        (failed.status, failed.output, failed.cancellation, failed.error) = (.failed, nil, nil, error)
        try detours.deadLetters.deadLetterJob(delivery, error: error, result: failed, lock: lock)
    }

    /// Dead-letters a job that can never run, and replies with a `failed` result when its id is known; first
    /// releases its unique lock, if it holds one, unless `releasesLock` is `false`.
    func refuse(
        _ delivery: Delivery, error: JobError, receivedAt: Date, descriptor: OperationDescriptor? = nil,
        reply: Bool = true, releasesLock: Bool = true
    ) throws {
        let (result, lock) = intake.refusal(
            of: delivery, error: error, receivedAt: receivedAt, descriptor: descriptor, reply: reply,
            releasesLock: releasesLock)
        try detours.deadLetters.deadLetterJob(delivery, error: error, result: result, lock: lock)
    }

    /// Dead-letters a job whose code failed with `error`, with its failed `result`.
    func fail(_ job: InFlightJob, error: JobError, result: JobResult) throws {
        try detours.deadLetters.deadLetterJob(
            job.delivery, error: error, result: result, lock: HeldLock(job.descriptor))
    }

    /// A job whose delivery died ended (`job`, no longer in flight): its result is kept for the redelivery, which is
    /// then acked without running the job again. Failed and requeued jobs keep none: their redelivery runs again.
    func endOrphan(_ job: InFlightJob, _ finished: FinishedJob) {
        let timings = JobTimings(
            enqueuedAt: job.descriptor.createdAt, receivedAt: job.receivedAt, startedAt: finished.startedAt,
            finishedAt: finished.finishedAt)
        let kept: JobResult?
        switch finished.outcome {
        case .succeeded(let output):
            kept = result(job, .succeeded, timings: timings, output: output)
        case .cancelled(let cancellation) where !Cancellation.requeueReasons.contains(cancellation.reason):
            kept = result(job, .cancelled, cancellation: cancellation, timings: timings)
        case .cancelled, .failed:
            kept = nil
        }
        if finished.startedAt == nil {
            job.operation.job.logger.info("job not started: its delivery was lost; its redelivery runs it")
        } else {
            let then = kept == nil ? "its redelivery runs it again" : "keeping its result for the redelivery"
            job.operation.job.logger.info("job ended after its delivery was lost; \(then)")
        }
        if let kept { settlements.keepForRedelivery(kept) }
    }

    // MARK: - What the broker refused

    func refused(_ refusal: Settlements.Refusal) throws {
        switch refusal {
        case .deadLetter(let delivery, let error):
            detours.deadLetters.letterRefused(delivery, error: error)
        case .delayedCopy(let deliveryTag):
            logger.error(
                """
                the broker refused a job's delayed copy (is the delay queue full, with x-overflow reject-publish?); \
                requeueing the job in \(HeldDeliveries.retryDelay.components.seconds) s so it runs again
                """)
            detours.held.requeueLater(deliveryTag)
        case .result(let settlement):
            try resultRefused(settlement)
        }
    }

    /// The broker refused a job's result (its reply queue full with `x-overflow` `reject-publish`, say), and
    /// would refuse it again: running the job again would loop. The job is dead-lettered with reason
    /// `resultRefused` (or is already, for a failed job), and acked once that is confirmed.
    private func resultRefused(_ settlement: Settlement) throws {
        guard let delivery = settlement.delivery else {
            logger.error("the broker refused the failed result of a dead-lettered job; acknowledging it")
            return settlements.acknowledge(settlement.deliveryTag)
        }
        let error = JobError(
            code: "resultRefused",
            message: "the broker refused the job's result (basic.nack) for "
                + (delivery.replyQueue.map { "reply queue '\($0)'" } ?? "the results exchange")
                + "; a queue at its length limit with x-overflow reject-publish does this")
        logger.error("dead-lettering a job whose result the broker refused", metadata: ["error": "\(error)"])
        try detours.deadLetters.deadLetterJob(delivery, error: error, result: nil, lock: nil)
    }
}
