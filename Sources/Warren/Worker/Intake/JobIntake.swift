import AMQP
import Foundation
import Logging

/// The first look at a job delivery: its descriptor decoded, and the early verdicts that need no more than the
/// delivery and what the worker remembers (cancellations, crashes).
///
/// A job may be cancelled before it arrives (``CancellationRegistry``), may have killed too many workers
/// (``CrashTally``), may not be due yet, may be of a type this worker does not run, or may already be held here.
/// A message that can never run is refused: dead-lettered, with a `failed` result for its producer when its id can
/// be read (``refusal(of:error:receivedAt:descriptor:reply:releasesLock:)``).
/// Thread safety: confined to the worker's broker thread.
final class JobIntake {
    /// What to do with a decoded job.
    enum Verdict {
        /// It can never run here: dead-letter it. Without `reply`, no result goes out; without `releasesLock`, its
        /// unique lock stays (another delivery of it runs here and holds it).
        case refuse(JobError, reply: Bool, releasesLock: Bool)
        /// It may not start before this time: send it through the delay queues.
        case postpone(until: Date)
        /// Run it.
        case run(RegisteredOperation)
    }

    private let decoder: JobDecoder
    private let registry: OperationRegistry
    private let maxCrashes: Int
    private let maxMessageBytes: Int
    private let workerID: String
    private let logger: Logger
    /// The tombstones of cancelled jobs, checked on every delivery.
    private var cancellations = CancellationRegistry()

    init(configuration: Worker.Configuration, registry: OperationRegistry, logger: Logger) {
        decoder = JobDecoder(configuration: configuration)
        self.registry = registry
        maxCrashes = configuration.maxCrashes
        maxMessageBytes = configuration.maxMessageBytes
        workerID = configuration.workerID
        self.logger = logger
    }

    /// Decodes the job `delivery` brings.
    /// - Throws: ``JobError`` saying what is wrong with the message.
    func decode(_ delivery: Delivery) throws -> OperationDescriptor {
        try decoder.decode(
            delivery.body, contentType: delivery.properties.contentType,
            contentEncoding: delivery.properties.contentEncoding)
    }

    // MARK: - Cancellations

    /// Remembers a `cancel` or `cancelAll` control message.
    func record(_ message: ControlMessage) {
        cancellations.record(message)
    }

    /// Why `descriptor`, delivered from broker queue `queue`, is cancelled, or `nil` when it may run.
    func cancellation(of descriptor: OperationDescriptor, queue: String) -> Cancellation? {
        cancellations.cancellation(of: descriptor, queue: queue)
    }

    // MARK: - Verdicts

    /// What to do with the job `descriptor` describes, which came with `delivery` at `receivedAt`.
    /// - Parameters:
    ///   - deaths: The worker processes it was executing in when they died, since it was last requeued by hand.
    ///   - isHeld: Whether this worker holds another delivery of it.
    func verdict(
        on descriptor: OperationDescriptor, delivery: Delivery, receivedAt: Date, deaths: [CrashTally.Death],
        isHeld: Bool
    ) -> Verdict {
        if let error = crashedWorkerError(deaths) { return .refuse(error, reply: true, releasesLock: true) }
        if let notBefore = delivery.notBefore(of: descriptor), notBefore > receivedAt {
            return .postpone(until: notBefore)
        }
        guard let registered = registry[descriptor.type] else {
            let known = registry.types.joined(separator: ", ")
            let error = JobError(
                code: "unknownType", message: "unknown operation type '\(descriptor.type)'; this worker runs: \(known)")
            return .refuse(error, reply: true, releasesLock: true)
        }
        guard !isHeld else {
            let error = JobError(
                code: "duplicateID",
                message: "job id '\(descriptor.id)' is already held by this worker (waiting, parked or running)")
            // Another delivery of the job runs here, and holds its lock.
            return .refuse(error, reply: false, releasesLock: false)
        }
        return .run(registered)
    }

    /// Why a job whose worker processes died at `deaths` is not run again, or `nil`: ``Worker/Configuration/maxCrashes``
    /// deaths, once at least while it was the only job executing, so that deaths it only shared with others never
    /// condemn it.
    func crashedWorkerError(_ deaths: [CrashTally.Death]) -> JobError? {
        guard deaths.count >= maxCrashes, deaths.contains(where: \.alone) else { return nil }
        let workers = deaths.sorted { ($0.reportedAt ?? .distantPast) < ($1.reportedAt ?? .distantPast) }
            .map(\.worker).joined(separator: ", ")
        return JobError(
            code: "crashedWorker",
            message: "the job was executing in \(deaths.count) worker processes when they died (\(workers)); "
                + "it is not run again (at most \(maxCrashes))")
    }

    /// The `failed` result and the unique lock of a job message refused with `error`, as far as its body can be
    /// read: a result only when `reply` and its id is known; its lock unless `releasesLock` is `false`. Logs the
    /// refusal.
    func refusal(
        of delivery: Delivery, error: JobError, receivedAt: Date, descriptor: OperationDescriptor? = nil,
        reply: Bool = true, releasesLock: Bool = true
    ) -> (result: JobResult?, lock: HeldLock?) {
        // An oversized body is not read.
        let salvaged =
            descriptor == nil && delivery.body.count <= maxMessageBytes
            ? JobDecoder.salvage(from: delivery.body) : SalvagedDescriptor()
        let candidates = [descriptor?.id, salvaged.id, delivery.properties.messageID]
        let id = candidates.compactMap { $0 }.first { OperationDescriptor.problem(withID: $0) == nil }
        let type = descriptor?.type ?? salvaged.type ?? delivery.properties.type
        logger.warning(
            "dead-lettering a job message",
            metadata: [
                "reason": "\(error.code)", "detail": "\(error.message)", "job": "\(id ?? "-")",
                "messageId": "\(delivery.properties.messageID ?? "-")", "type": "\(type ?? "-")",
                "attempt": "\(delivery.attempt)",
            ])
        let result =
            reply
            ? id.map { id in
                JobResult(
                    jobID: id, type: type, sequence: descriptor?.sequence ?? salvaged.sequence ?? 0,
                    key: descriptor?.key ?? salvaged.key, status: .failed, error: error, attempt: delivery.attempt,
                    redelivered: delivery.redelivered, requeuedAt: delivery.requeuedAt, workerID: workerID,
                    timings: JobTimings(enqueuedAt: descriptor?.createdAt, receivedAt: receivedAt, finishedAt: Date()))
            } : nil
        let lock = releasesLock ? descriptor.flatMap(HeldLock.init) ?? HeldLock(salvaged) : nil
        return (result, lock)
    }
}

extension JobDecoder {
    /// The decoder of a worker with `configuration`: its limits on messages, nesting and dependencies.
    init(configuration: Worker.Configuration) {
        self.init(
            maxMessageBytes: configuration.maxMessageBytes, maxNestingDepth: configuration.maxNestingDepth,
            maxDependencies: configuration.maxDependencies)
    }
}
