import Foundation
import Logging
import Synchronization
import Warren

/// A producer and a worker in one object, in memory: jobs enqueued run in this process, with no broker.
///
/// ```swift
/// @Test func shoutsBack() async throws {
///     var registry = OperationRegistry()
///     registry.registerTextOperations()
///     let jobs = try InMemoryJobs(registry: registry, localQueues: ["default": 2, "cpu": 2])
///     let job = try await jobs.enqueue(Shout.self, .init(text: "hello"))
///     #expect(try await job.result().get().text == "HELLO")
/// }
/// ```
///
/// It is a ``Warren/JobProducer``: code that takes `some JobProducer` takes it in tests, and a ``SharedProducer``
/// in production. Jobs run as on a worker:
/// - Results carry the job's id, type, key, sequence number and attempt. Sequence numbers count up from 1.
/// - Jobs wait for their dependencies, get their results, and end `cancelled` when they require success that did
///   not come. Cycles and unknown dependencies are refused at ``enqueue(_:watch:)``.
/// - Cancelling reaches a job wherever it is. A job cancelled before it started never runs; a running job's code
///   sees ``JobContext/isCancelled``. Superseding cancels the older jobs of a key.
/// - Local queues have their widths and run ready jobs in priority order. Deadlines, `notBefore` and time limits
///   hold. A retryable failure runs again, up to the job's attempts.
/// - A job of an unknown type fails `unknownType`; a unique job whose key is held is refused with `duplicate`.
///
/// Its limits, since there is no broker:
/// - Nothing is redelivered: no crash, no lost connection, no dead letters, no poison messages.
/// - Broker queues are names only. Priorities order jobs only inside a local queue.
/// - Retries wait only for the error's `retryAfter`, not for the worker's backoff.
/// - A worker's rate limits and time limits by type, prefetch and control messages do not apply.
/// - A result can be read any number of times, and every job's result is kept, watched or not.
///
/// Thread safety: locked. The jobs' state is behind a `Mutex`; the local queues are Foundation's, thread safe.
public final class InMemoryJobs: JobProducer, @unchecked Sendable {
    private let book: Mutex<JobBook>
    /// The local queues by name. Immutable; `OperationQueue` is thread safe (hence `@unchecked Sendable`).
    private let queues: [String: OperationQueue]

    /// An in-memory worker for `registry`, with its producer.
    /// - Parameters:
    ///   - registry: The operation types the worker runs.
    ///   - localQueues: Local queue names and widths. Default: `default`, as wide as the machine has cores.
    ///   - workerID: The worker id results carry. Default: `in-memory`.
    ///   - logger: The worker's logger, which jobs' loggers extend. Default: a logger labelled `warren.testing`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a width outside ``LocalQueue/widths``, or an
    ///   operation type registered on a local queue that `localQueues` lacks.
    public init(
        registry: OperationRegistry,
        localQueues: [String: Int] = [
            OperationRegistry.defaultLocalQueue: ProcessInfo.processInfo.activeProcessorCount
        ],
        workerID: String = "in-memory", logger: Logger = Logger(label: "warren.testing")
    ) throws {
        for (name, width) in localQueues.sorted(by: { $0.key < $1.key }) where !LocalQueue.widths.contains(width) {
            throw WarrenError(.invalidConfiguration, "local queue '\(name)' has width \(width), outside 1...10000")
        }
        for type in registry.types {
            let local = registry[type]!.localQueue
            guard localQueues[local] != nil else {
                throw WarrenError(
                    .invalidConfiguration,
                    "operation type '\(type)' runs on local queue '\(local)', which these jobs do not have "
                        + "(they have: \(localQueues.keys.sorted().joined(separator: ", ")))")
            }
        }
        queues = localQueues.reduce(into: [:]) { queues, entry in
            let queue = OperationQueue()
            queue.name = "warren.testing.\(entry.key)"
            queue.maxConcurrentOperationCount = entry.value
            queues[entry.key] = queue
        }
        // The book calls back through a box filled once self exists: its callbacks outlive no job.
        let owner = Owner()
        book = Mutex(
            JobBook(
                registry: registry, workerID: workerID, logger: logger,
                finished: { finished in owner.jobs?.change { $0.operationFinished(finished) } },
                progressed: { id, report in owner.jobs?.book.withLock { $0.recordProgress(id, report) } },
                started: { id, attempt in owner.jobs?.change { $0.codeStarted(id, attempt: attempt) } }))
        owner.jobs = self
    }

    // MARK: - Producing

    /// Enqueues jobs and returns their descriptors, in the order of `requests`. Jobs that can run are handed to
    /// their local queues at once.
    /// - Parameter watch: Ignored: every job's result is kept.
    /// - Throws: ``WarrenError``: `invalidConfiguration` for what a broker's producer refuses too (an invalid id,
    ///   type or queue name, a duplicate id, an unknown dependency or a cycle, a time limit out of range, a deadline
    ///   not after `notBefore`), and for a ``JobRequest/replyTo``, which needs a broker; `duplicate` when a unique
    ///   job's key is held. Nothing of the call is enqueued then.
    @discardableResult
    public func enqueue(_ requests: [JobRequest], watch: Bool = true) async throws -> [OperationDescriptor] {
        for request in requests {
            if let problem = Self.problem(with: request) {
                throw WarrenError(.invalidConfiguration, "job \(request.id): \(problem)")
            }
        }
        var descriptors: [OperationDescriptor] = []
        try change { book in
            let (enqueued, effects) = try book.enqueue(requests)
            descriptors = enqueued
            return effects
        }
        return descriptors
    }

    /// Enqueues a job and returns its descriptor (``enqueue(_:watch:)-([JobRequest],_)``).
    @discardableResult
    public func enqueue(_ request: JobRequest, watch: Bool = true) async throws -> OperationDescriptor {
        try await enqueue([request], watch: watch)[0]
    }

    /// The result of a job enqueued here, once it ended.
    /// - Throws: ``WarrenError``: `timeout` when the job did not end within `timeout`; `invalidConfiguration` for a
    ///   job not enqueued here. `CancellationError` when the task was cancelled.
    public func result(of jobID: String, timeout: Duration) async throws -> JobResult {
        let ticket = book.withLock { $0.ticket() }
        let timer = Task { [weak self] in
            try await Task.sleep(for: timeout)
            self?.giveUp(ticket, on: jobID, WarrenError(.timeout, "no result for job \(jobID) within \(timeout)"))
        }
        defer { timer.cancel() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                switch book.withLock({ $0.wait(for: jobID, ticket: ticket, continuation: continuation) }) {
                case .some(.some(let result)): continuation.resume(returning: result)
                case .some(.none):
                    continuation.resume(
                        throwing: WarrenError(.invalidConfiguration, "job \(jobID) was not enqueued here"))
                case .none: break
                }
            }
        } onCancel: {
            giveUp(ticket, on: jobID, CancellationError())
        }
    }

    /// Cancels jobs wherever they are. An id not enqueued yet is cancelled when it is.
    public func cancel(jobIDs: [String]) async throws {
        change { $0.cancel(jobIDs) }
    }

    /// Cancels every job of `key` whose sequence is below `sequence`, now and when enqueued later.
    public func supersede(key: String, before sequence: UInt64) async throws {
        change { $0.supersede(key: key, before: sequence) }
    }

    // MARK: - Watching and steering the worker

    /// The results of the jobs that ended, in the order they ended.
    public var results: [JobResult] {
        book.withLock { $0.results }
    }

    /// The last progress report of `jobID`, if it made one.
    public func progress(of jobID: String) -> ProgressReport? {
        book.withLock { $0.jobs[jobID]?.progress }
    }

    /// Returns once every job enqueued so far has ended.
    public func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            if !book.withLock({ $0.waitUntilIdle(continuation) }) { continuation.resume() }
        }
    }

    /// Holds back the jobs not started yet; running ones go on. Jobs enqueued meanwhile wait too, so that a test can
    /// cancel or supersede them before they start.
    public func suspend() {
        for queue in queues.values { queue.isSuspended = true }
    }

    /// Lets the held-back jobs start.
    public func resume() {
        for queue in queues.values { queue.isSuspended = false }
    }

    // MARK: - Internals

    /// What a request holds that no worker could run, or that needs a broker.
    private static func problem(with request: JobRequest) -> String? {
        if let problem = OperationDescriptor.problem(withID: request.id) { return problem }
        if let problem = OperationDescriptor.problem(withType: request.type) { return problem }
        if let problem = Topology.problem(withJobQueue: request.queue) { return problem }
        if request.replyTo != nil { return "in-memory jobs take no reply queue: their results stay here" }
        if let attempts = request.maxAttempts, attempts < 1 { return "maxAttempts \(attempts) must be at least 1" }
        if let limit = request.timeLimit, let problem = OperationDescriptor.problem(withTimeLimit: limit / .seconds(1))
        {
            return problem
        }
        if let deadline = request.deadline, let notBefore = request.notBefore, deadline <= notBefore {
            return "its deadline is not after its notBefore: it could never start"
        }
        if let lifetime = request.uniqueFor {
            if let problem = UniqueLock.problem(withLifetime: lifetime / .seconds(1))
                ?? OperationDescriptor.problem(withUniqueKey: request.key)
            {
                return problem
            }
            if request.supersede { return "a unique job cannot supersede the jobs of its key, which hold its lock" }
        }
        return nil
    }

    /// Changes the book under its lock, then carries out what the change calls for.
    private func change(_ body: (inout JobBook) throws -> [JobBook.Effect]) rethrows {
        let effects = try book.withLock { book in try body(&book) }
        for effect in effects { carry(out: effect) }
    }

    private func carry(out effect: JobBook.Effect) {
        switch effect {
        case .start(let operation, let localQueue):
            queues[localQueue]!.addOperation(operation)
        case .cancel(let operation, let cancellation):
            operation.cancel(cancellation)
        case .deliver(let result, let waiters):
            for waiter in waiters { waiter.resume(returning: result) }
        case .becameIdle(let waiters):
            for waiter in waiters { waiter.resume() }
        case .timer(let jobID, let date, let timer):
            Task { [weak self] in
                try await Task.sleep(for: .seconds(max(date.timeIntervalSinceNow, 0)))
                self?.change { $0.timerFired(timer, for: jobID) }
            }
        }
    }

    private func giveUp(_ ticket: UInt64, on jobID: String, _ error: any Error) {
        book.withLock { $0.giveUp(ticket, on: jobID) }?.resume(throwing: error)
    }
}

/// The ``InMemoryJobs`` its book calls back, set once it exists; weak, so that jobs do not keep it alive.
///
/// Thread safety: locked.
private final class Owner: Sendable {
    private let reference = Mutex<WeakJobs>(WeakJobs())

    var jobs: InMemoryJobs? {
        get { reference.withLock { $0.jobs } }
        set { reference.withLock { $0.jobs = newValue } }
    }
}

private struct WeakJobs {
    weak var jobs: InMemoryJobs?
}
