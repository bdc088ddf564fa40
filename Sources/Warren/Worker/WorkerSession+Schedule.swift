import AMQP
import Foundation

/// Jobs that must not start yet (`notBefore`, or a retry's not-before header): sent through the delay queues, hop
/// after hop, until they are due.
///
/// Each hop waits exactly as long as its delay queue's name says (a power of two seconds, the longest that does not
/// pass the job's time), so that in a delay queue a scheduled job never waits behind one that expires later; only
/// the last hop, under a second, waits for the rest. Each hop comes back to the job's queue and through a worker,
/// which checks the job's cancellation again: a job scheduled a day ahead makes about six hops, the longest 9.1
/// hours, well within the day the control stream keeps a cancellation.
extension WorkerSession {
    /// How long the next hop toward a job's time waits, in milliseconds, with `milliseconds` left.
    static func scheduleHop(milliseconds: Int) -> Int {
        Topology.delayQueueSeconds.last { $0 * 1000 <= milliseconds }.map { $0 * 1000 } ?? max(milliseconds, 1)
    }

    /// Sends `delivery`, whose job may not start before `notBefore`, on its next hop, and acks it once the broker
    /// has the copy; or ends it `cancelled` when its deadline comes first, since it could never start.
    func postpone(
        _ delivery: Delivery, _ descriptor: OperationDescriptor, until notBefore: Date, from queue: String,
        receivedAt: Date
    ) throws {
        if let deadline = descriptor.deadline, deadline <= notBefore {
            let cancellation = Cancellation(
                reason: "deadline", message: "the job's deadline is not after the time it may start: it could never start")
            let result = makeResult(
                descriptor, delivery: delivery, status: .cancelled, cancellation: cancellation,
                timings: JobTimings(enqueuedAt: descriptor.createdAt, receivedAt: receivedAt, finishedAt: Date()))
            return try end(delivery, with: result, lock: HeldLock(descriptor))
        }
        let milliseconds = Int((notBefore.timeIntervalSince(receivedAt) * 1000).rounded(.up))
        let hop = Self.scheduleHop(milliseconds: milliseconds)
        logger.debug(
            "job not due yet; waiting in a delay queue",
            metadata: [
                "job": "\(descriptor.id)", "type": "\(descriptor.type)", "attempt": "\(Self.attempt(of: delivery))",
                "notBefore": "\(WireCoding.text(of: notBefore))", "hopMs": "\(hop)",
            ])
        try delay(delivery, from: queue, milliseconds: hop, attempt: Self.sentAttempt(of: delivery))
    }
}
