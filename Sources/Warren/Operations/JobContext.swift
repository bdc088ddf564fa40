import Foundation
import Logging
import Synchronization

/// What an operation's code knows about the job it runs, and how it learns that it was cancelled.
///
/// Thread safety: immutable fields; the cancellation state and the job's logger (built on first use) are behind
/// `Mutex`es. Safe from any thread.
public final class JobContext: Sendable {
    /// The job's id.
    public let jobID: String
    /// The operation type name.
    public let type: String
    public let key: String?
    public let sequence: UInt64
    public let priority: JobPriority
    /// 1 for the first delivery of this job.
    public let attempt: Int
    public let deadline: Date?
    /// The worker's logger, which the job's own ``logger`` extends.
    private let workerLogger: Logger
    /// ``logger``, once it was first asked for: most jobs never log, so they never pay for its metadata.
    private let jobLogger = Mutex<Logger?>(nil)
    private let cancellationState = Mutex<Cancellation?>(nil)
    private let progressSink: @Sendable (Double, String?) -> Void
    /// When the last progress report went out, to send at most ten a second.
    private let lastProgress = Mutex<ContinuousClock.Instant?>(nil)

    init(
        descriptor: OperationDescriptor, attempt: Int, logger: Logger,
        progress: @escaping @Sendable (Double, String?) -> Void = { _, _ in }
    ) {
        progressSink = progress
        jobID = descriptor.id
        type = descriptor.type
        key = descriptor.key
        sequence = descriptor.sequence
        priority = descriptor.priority
        self.attempt = attempt
        deadline = descriptor.deadline
        workerLogger = logger
    }

    /// A logger whose metadata carries the job id, type, attempt and worker id.
    public var logger: Logger {
        jobLogger.withLock { cached in
            if let cached { return cached }
            var logger = workerLogger
            logger[metadataKey: "job"] = .string(jobID)
            logger[metadataKey: "type"] = .string(type)
            logger[metadataKey: "attempt"] = .string(String(attempt))
            cached = logger
            return logger
        }
    }

    /// Logs a debug message through ``logger``, which is not even built when the worker's logger drops such messages:
    /// the worker logs one for every job.
    func debug(_ message: @autoclosure () -> Logger.Message, metadata: @autoclosure () -> Logger.Metadata? = nil) {
        guard workerLogger.logLevel <= .debug else { return }
        logger.debug(message(), metadata: metadata())
    }

    /// Reports how far the job has come: `fraction` from 0 to 1, and a short message. `warren enqueue --wait` draws
    /// it as a progress bar and `warren results --follow` prints it. Reports closer than 100 ms apart are dropped,
    /// except the one at 1.
    public func reportProgress(_ fraction: Double, message: String? = nil) {
        let now = ContinuousClock.now
        let sends = lastProgress.withLock { last -> Bool in
            if fraction < 1, let last, now - last < .milliseconds(100) { return false }
            last = now
            return true
        }
        if sends { progressSink(fraction, message) }
    }

    /// Whether the job was cancelled. Check it often, as `AdderOperation` checks between numbers,
    /// and return (or throw `CancellationError`) as soon as it is `true`.
    public var isCancelled: Bool {
        cancellation != nil
    }

    /// Throws `CancellationError` when the job was cancelled.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }

    /// Why the job was cancelled, or `nil`.
    public var cancellation: Cancellation? {
        cancellationState.withLock { $0 }
    }

    /// Records the first cancellation; returns `false` when the job was already cancelled.
    func markCancelled(_ cancellation: Cancellation) -> Bool {
        cancellationState.withLock { state in
            guard state == nil else { return false }
            state = cancellation
            return true
        }
    }
}
