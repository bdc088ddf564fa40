import AMQP
import Foundation
import Logging

/// Job deliveries held while a queue they must go to is out of reach, and jobs sent back to their queue later.
///
/// A publish to a classic queue whose cluster node is down is confirmed, and lost; so the worker declares such a
/// queue before it publishes there, and when its node is down, holds the job, unacknowledged, and tries again every
/// few seconds. A held job raises the prefetch by one, as a parked job does. A job whose dead letter or delayed
/// copy a full queue refused goes back to its queue a few seconds later, not at once, or it would run and be
/// refused again as fast as the broker goes.
/// Thread safety: confined to the worker's broker thread.
final class HeldDeliveries: WakesTheLoop {
    /// A job held until the queue it must go to is reachable: its delivery, unacknowledged, and what to do then.
    struct Held {
        let delivery: Delivery
        /// When it was first held (held again at each try, it keeps this).
        let heldAt: Date
        let work: () throws -> Void
    }

    private let logger: Logger
    /// The jobs held, oldest first.
    private(set) var held: [Held] = []
    /// When to try the held jobs again.
    private var retryAt: ContinuousClock.Instant?
    /// Why jobs are held, each logged once while jobs are held for it.
    private var reasons: Set<String> = []
    /// Jobs to send back to their queues once due, oldest first.
    private var laterRequeues: [(deliveryTag: UInt64, due: ContinuousClock.Instant)] = []

    /// How long the worker waits before it tries a held job again.
    static let retryDelay = Duration.seconds(5)

    init(logger: Logger) {
        self.logger = logger
    }

    /// How many jobs are held.
    var count: Int { held.count }

    /// When held jobs are tried again, or a job goes back to its queue.
    var nextWake: ContinuousClock.Instant? {
        held.isEmpty && laterRequeues.isEmpty ? nil : retryAt.earliest(laterRequeues.first?.due)
    }

    /// The connection was lost: the deliveries died with it, and the broker delivers them again.
    func connectionLost() {
        held = []
        retryAt = nil
        reasons = []
        laterRequeues = []
    }

    /// Holds the job of `delivery`: `work` runs again when the next attempt is due, and holds it again if it must.
    /// Logs `why` once while jobs are held for it.
    func hold(_ why: String, _ metadata: Logger.Metadata, _ delivery: Delivery, _ work: @escaping () throws -> Void) {
        if reasons.insert(why).inserted { logger.warning("\(why)", metadata: metadata) }
        held.append(Held(delivery: delivery, heldAt: Date(), work: work))
        retryAt = retryAt ?? .now + Self.retryDelay
    }

    /// Runs the held jobs' work again, once it is due, after `beforeRetry`; whether it ran.
    func retryIfDue(beforeRetry: () -> Void) throws -> Bool {
        guard let due = retryAt, due <= .now else { return false }
        beforeRetry()
        let retried = held
        held = []
        retryAt = nil
        for job in retried { try job.work() }
        if held.isEmpty {
            reasons = []
            // They went where they waited to go, or ended (cancelled meanwhile).
            logger.info("no job is held for a queue out of reach any more", metadata: ["jobs": "\(retried.count)"])
        }
        return true
    }

    /// Sends a job back to its queue after ``retryDelay``, not at once.
    func requeueLater(_ deliveryTag: UInt64) {
        laterRequeues.append((deliveryTag, .now + Self.retryDelay))
    }

    /// The jobs ``requeueLater(_:)`` keeps whose time came, taken out.
    func dueRequeues() -> [UInt64] {
        let now = ContinuousClock.now
        var due: [UInt64] = []
        while let first = laterRequeues.first, first.due <= now {
            laterRequeues.removeFirst()
            due.append(first.deliveryTag)
        }
        return due
    }
}
