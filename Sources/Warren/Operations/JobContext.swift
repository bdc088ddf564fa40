import Foundation
import Logging
import Synchronization

/// What an operation's code knows about the job it runs, and how it learns that it was cancelled.
///
/// Thread safety: immutable fields; the cancellation state, the dependencies' results and the job's logger (built on
/// first use) are behind `Mutex`es. Safe from any thread.
public final class JobContext: Sendable {
    /// The job's id.
    public let jobID: String
    /// The operation type name.
    public let type: String
    /// The job's key: jobs of one key compute the same thing, and the newest sequence wins.
    public let key: String?
    /// The job's sequence number, from its producer: higher for a newer job of the same key.
    public let sequence: UInt64
    /// The job's priority.
    public let priority: JobPriority
    /// 1 for the first delivery of this job.
    public let attempt: Int
    /// Past this instant the job is cancelled, if it runs still. `nil`: no deadline.
    public let deadline: Date?
    /// The ids of the jobs this one waited for (the descriptor's `dependencies`), in the order it lists them.
    public let dependencies: [String]
    /// The worker's logger, which the job's own ``logger`` extends.
    private let workerLogger: Logger
    /// ``logger``, once it was first asked for: most jobs never log, so they never pay for its metadata.
    private let jobLogger = Mutex<Logger?>(nil)
    private let cancellationState = Mutex<Cancellation?>(nil)
    private let progressSink: @Sendable (Double, String?) -> Void
    /// Whether reports closer than 100 ms apart are dropped: a worker's are, a test's are not.
    private let throttlesProgress: Bool
    /// When the last progress report went out, to send at most ten a second, and whether one at 1 went out.
    private let lastProgress = Mutex<(at: ContinuousClock.Instant, complete: Bool)?>(nil)
    /// The results of ``dependencies``, by job id, as the worker gathered them before it queued the job.
    private let gatheredResults = Mutex<[String: JobResult]>([:])

    /// - Parameter throttlesProgress: Whether progress reports closer than 100 ms apart are dropped.
    package init(
        descriptor: OperationDescriptor, attempt: Int, logger: Logger, throttlesProgress: Bool = true,
        progress: @escaping @Sendable (Double, String?) -> Void = { _, _ in }
    ) {
        progressSink = progress
        self.throttlesProgress = throttlesProgress
        jobID = descriptor.id
        type = descriptor.type
        key = descriptor.key
        sequence = descriptor.sequence
        priority = descriptor.priority
        self.attempt = attempt
        deadline = descriptor.deadline
        dependencies = descriptor.dependencies ?? []
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

    /// What each of ``dependencies`` ended with, in their order: its status, and its output, error or cancellation,
    /// as it was published and stored. Data flows along dependencies as in Celery's chains and chords: an operation
    /// that sums its dependencies' sums, or resizes the image its download dependency fetched.
    ///
    /// Complete when the operation starts, but for a dependency whose result the `warren.results` stream no longer
    /// held when the worker read it (the stream keeps results 7 days, at most 2 GB): that one is missing, and the
    /// worker logs a warning.
    public var dependencyResults: [JobResult] {
        let gathered = gatheredResults.withLock { $0 }
        return dependencies.compactMap { gathered[$0] }
    }

    /// What dependency `jobID` ended with (see ``dependencyResults``); `nil` for a job that is no dependency of
    /// this one, or whose result the worker could not read.
    public func dependencyResult(of jobID: String) -> JobResult? {
        gatheredResults.withLock { $0[jobID] }
    }

    /// Hands the job its dependencies' results, before it is queued.
    package func receiveDependencyResults(_ results: [String: JobResult]) {
        gatheredResults.withLock { $0 = results }
    }

    /// Reports how far the job has come: `fraction` from 0 to 1, and a short message. `warren enqueue --wait` draws
    /// it as a progress bar and `warren results --follow` prints it. A fraction outside 0…1 counts as the nearest
    /// bound (`done / total` with `total` 0 is infinite), and one that is not a number (`0 / 0`) is dropped. Reports
    /// closer than 100 ms apart are dropped, except the first at 1; a message is cut to
    /// ``ProgressMessage/maxMessageLength`` Unicode scalars.
    public func reportProgress(_ fraction: Double, message: String? = nil) {
        guard !fraction.isNaN else { return }
        let fraction = min(max(fraction, 0), 1)
        let now = ContinuousClock.now
        let sends = lastProgress.withLock { last -> Bool in
            if throttlesProgress, let previous = last, now - previous.at < .milliseconds(100),
                fraction < 1 || previous.complete
            {
                return false
            }
            last = (now, fraction == 1)
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

    /// The error to throw for input that decoded but that the handler cannot take: code `invalidInput`, with a
    /// message that names the operation type as the registry's own decoding errors do, so producers read one
    /// wording for both (`input does not match operation type 'thumbnail': input.size: 0 is outside 1...4096`).
    /// - Parameter detail: Where the input is wrong and why, in JSON's terms (`input.size: 0 is outside 1...4096`).
    public func invalidInput(_ detail: String) -> JobError {
        JobError.invalidInput(detail, operationType: type)
    }

    /// Why the job was cancelled, or `nil`.
    public var cancellation: Cancellation? {
        cancellationState.withLock { $0 }
    }

    /// Records the first cancellation; returns `false` when the job was already cancelled.
    package func markCancelled(_ cancellation: Cancellation) -> Bool {
        cancellationState.withLock { state in
            guard state == nil else { return false }
            state = cancellation
            return true
        }
    }
}
