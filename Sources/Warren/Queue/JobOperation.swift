import Foundation
import Synchronization

/// The `Operation` that runs one job on a local queue, blocking or asynchronous, and reports how it ended.
///
/// It is an asynchronous ("concurrent") operation in Foundation's sense: it stays executing until its code is done,
/// whether that code holds a thread (blocking: the queue's, or one of ``BlockingThreads``) or runs in a task
/// (asynchronous, holding no thread).
/// It reports exactly once through `report`: at once if cancelled before it started (it then never runs),
/// otherwise when its code returns or throws.
///
/// Thread safety: locked. The lifecycle and the task live behind a `Mutex`; Foundation calls `start()` once on a
/// queue thread, `cancel` comes from the broker thread.
package final class JobOperation: Foundation.Operation, @unchecked Sendable {
    private enum Lifecycle { case pending, executing, finished }

    private struct State {
        var lifecycle = Lifecycle.pending
        var reported = false
        /// When the job's code started (``startedAt``).
        var startedAt: ContinuousClock.Instant?
        var task: Task<Void, Never>?
        /// The job's slot in the crash journal while its code runs.
        var journalSlot: Int?
        /// Whether the operation, once its code is done, stays executing until ``releaseFinish()``.
        var holdsFinish = false
        /// Whether its code is done, and the operation waits for ``releaseFinish()`` to finish.
        var finishHeld = false
    }

    package let job: JobContext
    private let input: JSONValue
    private let body: RegisteredOperation.Body
    private let report: @Sendable (FinishedJob) -> Void
    private let journal: CrashJournal?
    private let startGate: StartGate?
    private let started: (@Sendable () -> Void)?
    private let state = Mutex(State())

    /// - Parameters:
    ///   - journal: Where the job is recorded while its code runs, so that it is known if the process dies meanwhile.
    ///   - startGate: For a job of a rate-limited type: where it waits for its turn to start, on its thread.
    ///   - started: Called on the queue's thread as the job's code starts: for the queue latency metric, and for a
    ///     job with a time limit.
    init(
        job: JobContext, input: JSONValue, body: RegisteredOperation.Body, journal: CrashJournal? = nil,
        startGate: StartGate? = nil, started: (@Sendable () -> Void)? = nil,
        report: @escaping @Sendable (FinishedJob) -> Void
    ) {
        self.job = job
        self.input = input
        self.body = body
        self.journal = journal
        self.startGate = startGate
        self.started = started
        self.report = report
        super.init()
        queuePriority = job.priority.queuePriority
        name = job.jobID
    }

    /// An operation without a crash journal or a start gate, as `WarrenTesting` runs jobs.
    package static func standalone(
        job: JobContext, input: JSONValue, body: RegisteredOperation.Body, started: (@Sendable () -> Void)? = nil,
        report: @escaping @Sendable (FinishedJob) -> Void
    ) -> JobOperation {
        JobOperation(job: job, input: input, body: body, started: started, report: report)
    }

    override package var isAsynchronous: Bool { true }
    override package var isExecuting: Bool { state.withLock { $0.lifecycle == .executing } }
    /// Whether the job's code has started. Until then the job has not started for the worker, and is sent back to
    /// the broker when the worker stops or pauses, even while the operation executes: it may be waiting on its
    /// thread for its turn under a rate limit (``StartGate``).
    package var hasStarted: Bool { state.withLock { $0.startedAt != nil } }
    /// When the job's code started, for its time limit and `warren status --jobs`; `nil` until it has.
    var startedAt: ContinuousClock.Instant? { state.withLock { $0.startedAt } }
    override package var isFinished: Bool { state.withLock { $0.lifecycle == .finished } }

    /// Cancels the job: it never starts if it has not, and its code sees `isCancelled` if it has.
    package func cancel(_ cancellation: Cancellation) {
        guard job.markCancelled(cancellation) else { return }
        let reportNow = state.withLock { state -> Bool in
            state.task?.cancel()
            guard state.lifecycle == .pending, !state.reported else { return false }
            state.reported = true
            return true
        }
        super.cancel()
        if reportNow {
            report(FinishedJob(jobID: job.jobID, outcome: .cancelled(cancellation), startedAt: nil, finishedAt: Date()))
        }
    }

    override package func cancel() {
        cancel(.requested)
    }

    override package func start() {
        let runs = state.withLock { state -> Bool in
            state.lifecycle = .executing
            return !state.reported
        }
        willChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isExecuting")
        guard runs else { return finish() }
        // A context cancelled before its operation existed (a test's) never runs either.
        if let cancellation = job.cancellation { return complete(startedAt: nil, outcome: .cancelled(cancellation)) }
        // Before the job counts as started: the broker thread, which cancels jobs whose deadline passes, names a
        // started one differently.
        if let deadline = job.deadline, deadline <= Date(),
            job.markCancelled(Cancellation(reason: "deadline", message: "deadline passed before the job started"))
        {
            return complete(startedAt: nil, outcome: .cancelled(job.cancellation!))
        }
        if startGate == nil { recordStart() }
        switch body {
        case .blocking(let code):
            // Here, or on a thread of the local queues' own while this one returns to libdispatch's pool.
            if !BlockingThreads.shared.runInline({ runBlocking(code, ending: {}) }) {
                BlockingThreads.shared.handOff { [self] returning in runBlocking(code, ending: returning) }
            }
        case .asynchronous(let code):
            let startedAt = startGate == nil ? began() : nil
            let task = Task { [input, job] in
                while let wait = startGate?.claim() {
                    try? await Task.sleep(for: wait)
                    if let cancellation = job.cancellation {
                        return complete(startedAt: nil, outcome: .cancelled(cancellation))
                    }
                }
                let startedAt = startedAt ?? began()
                let result: Result<JSONValue, any Error>
                do { result = .success(try await code(input, job)) } catch { result = .failure(error) }
                complete(startedAt: startedAt, outcome: outcome { try result.get() })
            }
            let cancelled = state.withLock { state -> Bool in
                state.task = task
                return job.isCancelled
            }
            if cancelled { task.cancel() }
        }
    }

    /// Runs blocking code once its turn came (under a rate limit), on whichever thread holds it; calls `ending` just
    /// before it reports the end.
    private func runBlocking(_ code: @Sendable (JSONValue, JobContext) throws -> JSONValue, ending: () -> Void) {
        guard waitForTurn() else {
            ending()
            return complete(startedAt: nil, outcome: .cancelled(job.cancellation!))
        }
        let startedAt = began()
        let outcome = outcome { try code(input, job) }
        ending()
        complete(startedAt: startedAt, outcome: outcome)
    }

    /// Records that the job's code starts now, in the crash journal (unless done as the operation started), and
    /// when.
    private func began() -> Date {
        if startGate != nil { recordStart() }
        job.debug("job started")
        started?()
        return Date()
    }

    /// Records the start of the job's code: in the crash journal, and as ``startedAt``.
    private func recordStart() {
        state.withLock { state in
            state.journalSlot = journal?.began(jobID: job.jobID, type: job.type)
            state.startedAt = .now
        }
    }

    /// Waits on the queue's thread for the job's turn to start (``StartGate``), checking for cancellation at least
    /// every 10 ms; `false` if the job was cancelled meanwhile.
    private func waitForTurn() -> Bool {
        while let wait = startGate?.claim() {
            guard !job.isCancelled else { return false }
            Thread.sleep(forTimeInterval: min(wait, .milliseconds(10)).seconds)
        }
        return !job.isCancelled
    }

    /// Maps what the code did to an outcome. A job cancelled while it ran ends `cancelled` however it returned:
    /// its result is no longer wanted (ListAdder's "is this still the operation I want?"). One cancelled because it
    /// ran past its time limit ends `failed` (`timeLimit`) however it returned: it did not do its work in time.
    private func outcome(_ run: () throws -> JSONValue) -> JobOutcome<JSONValue> {
        let result = Result { try run() }
        if let cancellation = job.cancellation {
            guard cancellation.reason == Cancellation.timeLimitReason else { return .cancelled(cancellation) }
            return .failed(JobError(code: "timeLimit", message: cancellation.message))
        }
        switch result {
        case .success(let output): return .succeeded(output)
        case .failure(let error as JobError): return .failed(error)
        case .failure(is CancellationError):
            // Not cancelled (that was handled above): a task of the handler's own was, and nobody asked the job to
            // stop.
            return .failed(
                JobError(
                    code: "handlerError", message: "the handler threw CancellationError, but the job was not cancelled")
            )
        case .failure(let error as LocalizedError) where error.errorDescription != nil:
            return .failed(JobError(code: "handlerError", message: error.errorDescription!))
        case .failure(let error): return .failed(JobError(code: "handlerError", message: "\(error)"))
        }
    }

    private func complete(startedAt: Date?, outcome: JobOutcome<JSONValue>) {
        // The finish is held (or not) before the report: the broker thread releases it only after the report.
        let (reports, journalSlot, holds) = state.withLock { state -> (Bool, Int?, Bool) in
            defer {
                state.reported = true
                state.journalSlot = nil
                state.finishHeld = state.holdsFinish
            }
            return (!state.reported, state.journalSlot, state.holdsFinish)
        }
        if let journalSlot { journal?.ended(journalSlot) }
        if reports {
            report(FinishedJob(jobID: job.jobID, outcome: outcome, startedAt: startedAt, finishedAt: Date()))
        }
        if !holds { finish() }
    }

    /// Keeps the operation executing, once its code is done, until ``releaseFinish()``: the local queue starts
    /// nothing in its place meanwhile. The broker thread holds the finish of a job that jobs parked on this worker
    /// wait for, so that they are in the local queue, each with its priority, when the next job starts there, as
    /// an `OperationQueue` starts the dependents of an operation that finished. No effect once the code is done.
    func holdFinish() {
        state.withLock { $0.holdsFinish = true }
    }

    /// Ends what ``holdFinish()`` began: finishes the operation if its code is done, and holds its finish no more.
    func releaseFinish() {
        let finishes = state.withLock { state in
            defer { (state.holdsFinish, state.finishHeld) = (false, false) }
            return state.finishHeld
        }
        if finishes { finish() }
    }

    private func finish() {
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        state.withLock { $0.lifecycle = .finished }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}
