import Foundation
import Logging
import Synchronization
import Warren

/// A job for a unit test: its ``context`` goes to a handler as a worker's would, with no broker.
///
/// ```swift
/// @Test func countsWords() async throws {
///     var registry = OperationRegistry()
///     registry.registerTextOperations()
///     let job = try TestJob(WordCount.self, .init(text: "a b\nc"))
///     let counts = try await job.run(in: registry).get()
///     #expect(counts.words == 3)
/// }
/// ```
///
/// ``run(in:)`` runs the code `registry` holds for the definition's type, as a worker does. The input goes through
/// JSON, blocking code runs on a thread of its own, and the outcome is the one a worker would publish. You can also
/// call a handler yourself with ``context``.
///
/// Cancel the job with ``cancel(_:)``, from another task while it runs. Read its reports with ``progress`` and
/// ``progressUpdates``. Give it a ``JobContext/deadline`` and its dependencies' results in the initialiser.
///
/// Thread safety: immutable, but for the operation and its progress log, which are locked.
public final class TestJob<Definition: OperationDefinition>: Sendable {
    /// What the job takes.
    public let input: Definition.Input
    /// What the handler sees: id, key, sequence, attempt, deadline, dependencies, cancellation and progress.
    public let context: JobContext
    private let json: JSONValue
    private let log = ProgressLog()
    /// Where ``run(in:)`` runs the operation, one at a time.
    private let queue: OperationQueue
    /// The operation of ``run(in:)``, once it began; whether it began.
    private let run = Mutex<(began: Bool, operation: JobOperation?)>((false, nil))

    /// A job of `definition` with `input`; every other field has a value a test seldom needs to change.
    /// - Parameters:
    ///   - jobID: The job's id. Default: a new UUID.
    ///   - key: The job's key. Default: none.
    ///   - sequence: The job's sequence number. Default: 1.
    ///   - priority: The job's priority. Default: ``JobPriority/normal``.
    ///   - attempt: Which delivery this is; 1 for the first. Default: 1.
    ///   - deadline: Past it, ``run(in:)`` cancels the job with reason `deadline`. Default: none.
    ///   - dependencyResults: What the jobs it waited for ended with, in order: ``JobContext/dependencies`` lists
    ///     their ids. Make them with ``Warren/JobResult/succeeded(jobID:type:output:)`` and its siblings.
    ///   - logger: The worker's logger, which the job's own extends. Default: a logger labelled `warren.testing`.
    /// - Throws: ``WarrenError`` (`invalidInput`) when `input` cannot be encoded as JSON.
    public init(
        _ definition: Definition.Type, _ input: Definition.Input, jobID: String = UUID().uuidString.lowercased(),
        key: String? = nil, sequence: UInt64 = 1, priority: JobPriority = .normal, attempt: Int = 1,
        deadline: Date? = nil, dependencyResults: [JobResult] = [], logger: Logger = Logger(label: "warren.testing")
    ) throws {
        self.input = input
        queue = OperationQueue()
        queue.name = "warren.testing"
        queue.maxConcurrentOperationCount = 1
        json = try JobOptions().request(for: Definition.self, input: input).input
        let descriptor = OperationDescriptor(
            id: jobID, type: Definition.type, input: json, priority: priority, sequence: sequence, key: key,
            deadline: deadline, dependencies: dependencyResults.isEmpty ? nil : dependencyResults.map(\.jobID))
        context = JobContext(
            descriptor: descriptor, attempt: attempt, logger: logger, throttlesProgress: false,
            progress: { [log] fraction, message in log.append(ProgressReport(fraction: fraction, message: message)) })
        context.receiveDependencyResults(Dictionary(dependencyResults.map { ($0.jobID, $0) }) { _, last in last })
    }

    /// Runs the code `registry` holds for `Definition`, as a worker runs a job, and returns how it ended.
    ///
    /// A job cancelled before the run never runs its code. A job cancelled while it runs ends `cancelled` however
    /// its code returns, as on a worker.
    /// - Throws: ``WarrenError``: `invalidConfiguration` when `registry` has no code for the type, or the job ran
    ///   already (a job runs once); `invalidOutput` when the output does not decode as `Definition.Output`.
    public func run(in registry: OperationRegistry) async throws -> JobOutcome<Definition.Output> {
        guard let registered = registry[Definition.type] else {
            throw WarrenError(
                .invalidConfiguration,
                "operation type '\(Definition.type)' is not registered (registered: "
                    + "\(registry.types.joined(separator: ", ")))")
        }
        // A worker cancels a job whose deadline passes while it runs.
        let deadlineTimer = context.deadline.map { deadline in
            Task { [weak self] in
                try await Task.sleep(for: .seconds(deadline.timeIntervalSinceNow))
                self?.cancel(Cancellation(reason: "deadline", message: "the job's deadline passed"))
            }
        }
        defer { deadlineTimer?.cancel() }
        let finished = try await withCheckedThrowingContinuation { continuation in
            let operation = JobOperation.standalone(job: context, input: json, body: registered.body) { finished in
                continuation.resume(returning: finished)
            }
            let began = run.withLock { run in
                defer { run = (true, operation) }
                return run.began
            }
            guard !began else {
                return continuation.resume(
                    throwing: WarrenError(.invalidConfiguration, "this test job ran already: a job runs once"))
            }
            queue.addOperation(operation)
        }
        log.close()
        return try JobResult(ending: context, with: finished.outcome, workerID: "warren.testing")
            .outcome(as: Definition.self)
    }

    /// Cancels the job: its code sees ``JobContext/isCancelled``, and an asynchronous handler's task is cancelled.
    /// Before ``run(in:)``, the code never runs.
    public func cancel(_ cancellation: Cancellation = .requested) {
        if let operation = run.withLock({ $0.operation }) {
            operation.cancel(cancellation)
        } else {
            _ = context.markCancelled(cancellation)
        }
    }

    /// Whether the job was cancelled.
    public var isCancelled: Bool { context.isCancelled }

    /// Every progress report so far, in order. A worker sends at most ten a second; a test job keeps them all.
    public var progress: [ProgressReport] { log.reports }

    /// The progress reports so far, then each new one, until ``run(in:)`` returns.
    ///
    /// ```swift
    /// for await report in job.progressUpdates where report.fraction >= 0.5 {
    ///     job.cancel()
    ///     break
    /// }
    /// ```
    public var progressUpdates: AsyncStream<ProgressReport> { log.follow() }
}
