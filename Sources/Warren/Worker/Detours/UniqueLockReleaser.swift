import AMQP
import Foundation
import Logging

/// Releases unique jobs' locks (``UniqueLock``): a job that ends for good (succeeded, failed, cancelled,
/// dead-lettered; not a retry or a job sent back) releases its lock just before its result is published, so that
/// whoever sees the result can enqueue the key's next job at once.
///
/// A lock whose queue is on a cluster node that is down is released once the node is back. A worker that runs no
/// unique jobs never opens the lock channel.
/// Thread safety: confined to the worker's broker thread.
final class UniqueLockReleaser: WakesTheLoop {
    private let link: BrokerLink
    private let logger: Logger
    private let metrics: WorkerMetrics
    /// Whether ``BrokerLink/Channel/lock`` is open.
    private var channelOpen = false
    /// Locks a job that ended could not release, their queue on a cluster node that was down, with when that was.
    private var unreleased: [(lock: HeldLock, since: ContinuousClock.Instant)] = []
    /// When to try them again.
    private var retryAt: ContinuousClock.Instant?

    init(link: BrokerLink, logger: Logger, metrics: WorkerMetrics) {
        self.link = link
        self.logger = logger
        self.metrics = metrics
    }

    /// When unreleased locks are tried again.
    var nextWake: ContinuousClock.Instant? { retryAt }

    /// A new connection: the lock channel opens when first needed.
    func connected() {
        channelOpen = false
    }

    /// Releases `lock`, if any, on the lock channel (opened when first needed). A lock the broker refuses to release
    /// (its queue declared otherwise, say) is logged and left to expire.
    /// - Throws: `AMQPError` when the connection fails.
    func release(_ lock: HeldLock?) throws {
        guard let lock else { return }
        let metadata: Logger.Metadata = ["job": "\(lock.jobID)", "key": "\(lock.key)"]
        let retrying = unreleased.contains { $0.lock.key == lock.key && $0.lock.jobID == lock.jobID }
        let outcome: String
        do {
            if !channelOpen {
                try link.connection.openChannel(BrokerLink.Channel.lock)
                channelOpen = true
            }
            switch try UniqueLock.release(
                key: lock.key, jobID: lock.jobID, on: link.connection, channel: BrokerLink.Channel.lock)
            {
            case .released:
                outcome = "released"
                logger.debug("released the job's unique lock", metadata: metadata)
            case .free:
                outcome = "expired"
                logger.debug("the job's unique lock had expired", metadata: metadata)
            case .unreachable:
                // Released once the node is back, so that its key is not held for the rest of the lease.
                guard !retrying else { return }
                outcome = "unreachable"
                logger.warning(
                    """
                    cannot release the job's unique lock yet: its queue is on a cluster node that is down; trying \
                    again every 5 s
                    """,
                    metadata: metadata)
                unreleased.append((lock, .now))
                retryAt = retryAt ?? .now + HeldDeliveries.retryDelay
            case .heldBy(let holder):
                outcome = "takenByAnother"
                logger.warning(
                    """
                    another job holds the key's unique lock: this job's lock expired before it ended, was freed by \
                    warren unlock, or was never taken (a job put back by warren dead requeue takes none)
                    """,
                    metadata: metadata.merging(["holder": "\(holder ?? "-")"]) { $1 })
            }
        } catch let error as AMQPError where error.channel == BrokerLink.Channel.lock {
            channelOpen = false
            outcome = "refused"
            logger.error(
                "cannot release the job's unique lock; it expires by itself",
                metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        if retrying {
            unreleased.removeAll { $0.lock.key == lock.key && $0.lock.jobID == lock.jobID }
            logger.info(
                "the unique lock that was out of reach when its job ended is dealt with",
                metadata: metadata.merging(["outcome": "\(outcome)"]) { $1 })
        }
        metrics.uniqueLockReleased(outcome)
    }

    /// Tries again to release the locks whose queues were out of reach, every few seconds; gives one up after the
    /// longest lease (7 days), when its token has expired anyway.
    func retryIfDue() throws {
        guard let due = retryAt, due <= .now else { return }
        retryAt = nil
        unreleased.removeAll { .now - $0.since > .seconds(UniqueLock.lifetimeRange.upperBound) }
        for (lock, _) in unreleased { try release(lock) }
        if !unreleased.isEmpty { retryAt = .now + HeldDeliveries.retryDelay }
    }
}

/// The lock a unique job holds (``OperationDescriptor/unique``), to release when the job ends for good.
///
/// Thread safety: immutable.
struct HeldLock {
    let key: String
    let jobID: String

    /// The lock `descriptor`'s job holds, or `nil` if it is not unique.
    init?(_ descriptor: OperationDescriptor) {
        guard descriptor.unique == true, let key = descriptor.key else { return nil }
        self.key = key
        jobID = descriptor.id
    }

    /// The lock the body of a job message that is no valid descriptor claims (``JobDecoder/salvage(from:)``):
    /// `unique` true, a key that can name a lock, and a job id; else `nil`. Releasing it takes the token back only
    /// if that job holds it.
    init?(_ salvaged: SalvagedDescriptor) {
        guard salvaged.unique == true, let key = salvaged.key, let id = salvaged.id,
            OperationDescriptor.problem(withUniqueKey: key) == nil
        else { return nil }
        self.key = key
        jobID = id
    }
}
