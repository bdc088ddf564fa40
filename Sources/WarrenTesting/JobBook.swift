import Foundation
import Logging
import Warren

/// What ``InMemoryJobs`` knows of its jobs, and how each changes: the producer's and the worker's state in one.
///
/// Each change returns the ``Effect``s it calls for. The caller carries them out once it let go of the lock: an
/// operation cancelled before it started reports at once, and that report comes back here.
///
/// Thread safety: a value type, kept behind ``InMemoryJobs``' lock.
struct JobBook {
    /// Where a job is.
    enum Stage {
        /// Waiting for its dependencies, its `notBefore` or its next attempt.
        case waiting
        /// Handed to its local queue: waiting there, or running.
        case queued(JobOperation)
        case ended(JobResult)
    }

    struct Job {
        var descriptor: OperationDescriptor
        var attempt = 1
        var stage = Stage.waiting
        let enqueuedAt: Date
        var receivedAt: Date?
        var progress: ProgressReport?
        /// The dependencies that have not ended yet.
        var unmet: Set<String> = []

        var result: JobResult? {
            if case .ended(let result) = stage { return result }
            return nil
        }
    }

    /// Why a timer was set.
    enum Timer: Sendable {
        /// The job may start: its `notBefore` came, or its next attempt is due.
        case start
        case deadline
        /// The time limit of the job's attempt, which started.
        case timeLimit(attempt: Int)
    }

    enum Effect: Sendable {
        case start(JobOperation, localQueue: String)
        case cancel(JobOperation, Cancellation)
        case deliver(JobResult, to: [CheckedContinuation<JobResult, any Error>])
        case becameIdle([CheckedContinuation<Void, Never>])
        case timer(jobID: String, at: Date, Timer)
    }

    private(set) var jobs: [String: Job] = [:]
    /// Results in the order the jobs ended.
    private(set) var results: [JobResult] = []
    private var nextSequence: UInt64 = 1
    private var open = 0
    /// Jobs that wait for each job to end.
    private var dependents: [String: [String]] = [:]
    /// Tasks waiting for results, by job and by ticket.
    private var waiters: [String: [UInt64: CheckedContinuation<JobResult, any Error>]] = [:]
    /// Tickets whose task gave up before it waited.
    private var abandoned: Set<UInt64> = []
    private var nextTicket: UInt64 = 0
    private var idleWaiters: [CheckedContinuation<Void, Never>] = []
    /// Jobs cancelled before they were enqueued: they end `cancelled` when they are.
    private var tombstones: Set<String> = []
    /// By key: jobs of a lower sequence, enqueued later, end `superseded`.
    private var supersededBelow: [String: (sequence: UInt64, cancellation: Cancellation)] = [:]
    /// Unique jobs' locks by key: the job that holds it, until when.
    private var uniqueLocks: [String: (jobID: String, until: Date)] = [:]

    let registry: OperationRegistry
    let workerID: String
    let logger: Logger
    /// Calls back into the owner: an operation's end, a progress report, the start of a job's code (id, attempt).
    let finished: @Sendable (FinishedJob) -> Void
    let progressed: @Sendable (String, ProgressReport) -> Void
    let started: @Sendable (String, Int) -> Void

    init(
        registry: OperationRegistry, workerID: String, logger: Logger,
        finished: @escaping @Sendable (FinishedJob) -> Void,
        progressed: @escaping @Sendable (String, ProgressReport) -> Void,
        started: @escaping @Sendable (String, Int) -> Void
    ) {
        self.registry = registry
        self.workerID = workerID
        self.logger = logger
        self.finished = finished
        self.progressed = progressed
        self.started = started
    }

    // MARK: - The producer's side

    /// Takes checked requests, in an order where each comes after those it depends on.
    mutating func enqueue(_ requests: [JobRequest]) throws -> (descriptors: [OperationDescriptor], effects: [Effect]) {
        let ordered = try DependencyGraph.ordered(requests, known: Set(jobs.keys))
        let now = Date()
        for request in ordered {
            guard request.uniqueFor != nil, let key = request.key, let lock = uniqueLocks[key] else { continue }
            if lock.until > now, jobs[lock.jobID]?.result == nil {
                throw WarrenError(
                    .duplicate,
                    "job \(request.id) not enqueued: another job of key '\(key)' holds the key's unique lock "
                        + "(job \(lock.jobID)), until it ends or the lock expires"
                        + (requests.count > 1 ? "; no job of this call was enqueued" : ""))
            }
        }
        if let taken = ordered.first(where: { jobs[$0.id] != nil }) {
            throw WarrenError(.invalidConfiguration, "job id \(taken.id) was enqueued already")
        }
        var descriptors: [OperationDescriptor] = []
        var effects: [Effect] = []
        for request in ordered {
            let descriptor = OperationDescriptor(
                id: request.id, type: request.type, input: request.input, priority: request.priority,
                sequence: nextSequence, key: request.key, deadline: request.deadline, notBefore: request.notBefore,
                createdAt: now, maxAttempts: request.maxAttempts,
                timeLimitSeconds: request.timeLimit.map { $0 / .seconds(1) },
                unique: request.uniqueFor.map { _ in true },
                dependencies: request.dependencies.isEmpty ? nil : Self.uniqued(request.dependencies),
                requireSuccess: request.requireSuccess ? true : nil)
            nextSequence += 1
            descriptors.append(descriptor)
            jobs[descriptor.id] = Job(descriptor: descriptor, enqueuedAt: now)
            open += 1
            if let uniqueFor = request.uniqueFor, let key = request.key {
                uniqueLocks[key] = (descriptor.id, now.addingTimeInterval(uniqueFor / .seconds(1)))
            }
            if request.supersede, let key = request.key {
                effects += supersede(key: key, before: descriptor.sequence)
            }
            effects += admit(descriptor.id)
        }
        let order = Dictionary(uniqueKeysWithValues: requests.enumerated().map { ($1.id, $0) })
        return (descriptors.sorted { order[$0.id]! < order[$1.id]! }, effects)
    }

    /// Cancels jobs wherever they are; ids not enqueued yet are cancelled when they are.
    mutating func cancel(_ jobIDs: [String], _ cancellation: Cancellation = .requested) -> [Effect] {
        var effects: [Effect] = []
        for id in jobIDs {
            guard let job = jobs[id] else {
                tombstones.insert(id)
                continue
            }
            switch job.stage {
            case .waiting: effects += end(id, .cancelled(cancellation))
            case .queued(let operation): effects.append(.cancel(operation, cancellation))
            case .ended: break
            }
        }
        return effects
    }

    /// Cancels every job of `key` below `sequence`, and those enqueued later with a lower sequence.
    mutating func supersede(key: String, before sequence: UInt64) -> [Effect] {
        let cancellation = Cancellation(
            reason: "superseded", message: "jobs of key '\(key)' below sequence \(sequence) were cancelled")
        if sequence > supersededBelow[key]?.sequence ?? 0 { supersededBelow[key] = (sequence, cancellation) }
        let older = jobs.values.filter { $0.descriptor.key == key && $0.descriptor.sequence < sequence }
        return cancel(
            older.sorted { $0.descriptor.sequence < $1.descriptor.sequence }.map(\.descriptor.id), cancellation)
    }

    /// The result of `jobID`, or a ticket to wait for it; `nil` for a job not enqueued here.
    mutating func wait(
        for jobID: String, ticket: UInt64, continuation: CheckedContinuation<JobResult, any Error>
    ) -> JobResult?? {
        guard let job = jobs[jobID] else { return .some(nil) }
        if let result = job.result { return result }
        if abandoned.remove(ticket) != nil { return nil }
        waiters[jobID, default: [:]][ticket] = continuation
        return nil
    }

    mutating func ticket() -> UInt64 {
        nextTicket += 1
        return nextTicket
    }

    /// The waiter of `ticket`, which gives up; remembered if it does not wait yet.
    mutating func giveUp(_ ticket: UInt64, on jobID: String) -> CheckedContinuation<JobResult, any Error>? {
        if let continuation = waiters[jobID]?.removeValue(forKey: ticket) { return continuation }
        if jobs[jobID]?.result == nil { abandoned.insert(ticket) }
        return nil
    }

    /// Adds a waiter for the moment no job is left to end; `false` when none is left now.
    mutating func waitUntilIdle(_ continuation: CheckedContinuation<Void, Never>) -> Bool {
        guard open > 0 else { return false }
        idleWaiters.append(continuation)
        return true
    }

    // MARK: - The worker's side

    /// The early verdicts, then the dependencies: the job ends, waits, or goes on.
    private mutating func admit(_ id: String) -> [Effect] {
        let descriptor = jobs[id]!.descriptor
        jobs[id]!.receivedAt = Date()
        var effects: [Effect] = []
        if let deadline = descriptor.deadline { effects.append(.timer(jobID: id, at: deadline, .deadline)) }
        if tombstones.remove(id) != nil { return effects + end(id, .cancelled(.requested)) }
        if let key = descriptor.key, let below = supersededBelow[key], descriptor.sequence < below.sequence {
            return effects + end(id, .cancelled(below.cancellation))
        }
        guard registry[descriptor.type] != nil else {
            let known = registry.types.joined(separator: ", ")
            let error = JobError(
                code: "unknownType", message: "unknown operation type '\(descriptor.type)'; this worker runs: \(known)")
            return effects + end(id, .failed(error))
        }
        let unmet = Set((descriptor.dependencies ?? []).filter { jobs[$0]?.result == nil })
        for dependency in unmet { dependents[dependency, default: []].append(id) }
        jobs[id]!.unmet = unmet
        return unmet.isEmpty ? effects + release(id) : effects
    }

    /// A job whose dependencies ended: it gets their results, or ends when it requires their success.
    private mutating func release(_ id: String) -> [Effect] {
        let descriptor = jobs[id]!.descriptor
        let dependencies = descriptor.dependencies ?? []
        if descriptor.requireSuccess == true,
            let failed = dependencies.first(where: { jobs[$0]?.result.map { $0.status != .succeeded } ?? false }),
            let status = jobs[failed]?.result?.status
        {
            let cancellation = Cancellation(
                reason: "dependency",
                message: "dependency \(failed) ended \(status.rawValue), and the job requires success")
            return end(id, .cancelled(cancellation))
        }
        if let notBefore = descriptor.notBefore, notBefore > Date() {
            return [.timer(jobID: id, at: notBefore, .start)]
        }
        return queue(id)
    }

    /// Hands the job to its local queue.
    private mutating func queue(_ id: String) -> [Effect] {
        let job = jobs[id]!
        let registered = registry[job.descriptor.type]!
        let context = JobContext(descriptor: job.descriptor, attempt: job.attempt, logger: logger) { [progressed] in
            progressed(id, ProgressReport(fraction: $0, message: $1))
        }
        var results: [String: JobResult] = [:]
        for dependency in job.descriptor.dependencies ?? [] { results[dependency] = jobs[dependency]?.result }
        context.receiveDependencyResults(results)
        var codeStarted: (@Sendable () -> Void)?
        if job.descriptor.timeLimitSeconds != nil {
            codeStarted = { [started, attempt = job.attempt] in started(id, attempt) }
        }
        let operation = JobOperation.standalone(
            job: context, input: job.descriptor.input, body: registered.body, started: codeStarted, report: finished)
        jobs[id]!.stage = .queued(operation)
        return [.start(operation, localQueue: registered.localQueue)]
    }

    /// The code of the job's `attempt` started: its time limit runs from now.
    func codeStarted(_ id: String, attempt: Int) -> [Effect] {
        guard let seconds = jobs[id]?.descriptor.timeLimitSeconds else { return [] }
        return [.timer(jobID: id, at: Date().addingTimeInterval(seconds), .timeLimit(attempt: attempt))]
    }

    /// An operation's end: a retry, or the job's end.
    mutating func operationFinished(_ finished: FinishedJob) -> [Effect] {
        guard let job = jobs[finished.jobID], case .queued = job.stage else { return [] }
        if case .failed(let error) = finished.outcome, error.retryable, job.attempt < job.descriptor.attemptLimit {
            jobs[finished.jobID]!.attempt += 1
            jobs[finished.jobID]!.stage = .waiting
            let delay = error.retryAfter.map { $0 / .seconds(1) } ?? 0
            return [.timer(jobID: finished.jobID, at: Date().addingTimeInterval(delay), .start)]
        }
        return end(finished.jobID, finished.outcome, startedAt: finished.startedAt, finishedAt: finished.finishedAt)
    }

    mutating func timerFired(_ timer: Timer, for id: String) -> [Effect] {
        guard let job = jobs[id] else { return [] }
        switch (timer, job.stage) {
        case (.start, .waiting) where job.unmet.isEmpty:
            return queue(id)
        case (.deadline, .waiting):
            return end(
                id, .cancelled(Cancellation(reason: "deadline", message: "deadline passed before the job started")))
        case (.deadline, .queued(let operation)):
            let message = operation.hasStarted ? "the job's deadline passed" : "deadline passed before the job started"
            return [.cancel(operation, Cancellation(reason: "deadline", message: message))]
        case (.timeLimit(let attempt), .queued(let operation)) where attempt == job.attempt:
            let limit = Duration.milliseconds(Int64(((job.descriptor.timeLimitSeconds ?? 0) * 1000).rounded()))
            let message = "the job ran longer than its own time limit of \(limit) and was cancelled"
            return [.cancel(operation, Cancellation(reason: Cancellation.timeLimitReason, message: message))]
        default:
            return []
        }
    }

    mutating func recordProgress(_ id: String, _ report: ProgressReport) {
        jobs[id]?.progress = report
    }

    /// `ids` without repeats, in their order.
    private static func uniqued(_ ids: [String]) -> [String] {
        var seen: Set<String> = []
        return ids.filter { seen.insert($0).inserted }
    }

    /// Ends a job: its result, its waiters, its unique lock, the jobs waiting for it.
    private mutating func end(
        _ id: String, _ outcome: JobOutcome<JSONValue>, startedAt: Date? = nil, finishedAt: Date = Date()
    ) -> [Effect] {
        let job = jobs[id]!
        let descriptor = job.descriptor
        let result = JobResult(
            jobID: id, type: descriptor.type, sequence: descriptor.sequence, key: descriptor.key,
            status: outcome.status, output: outcome.output, error: outcome.error, cancellation: outcome.cancellation,
            attempt: job.attempt, workerID: workerID,
            timings: JobTimings(
                enqueuedAt: job.enqueuedAt, receivedAt: job.receivedAt, startedAt: startedAt, finishedAt: finishedAt))
        jobs[id]!.stage = .ended(result)
        jobs[id]!.unmet = []
        results.append(result)
        open -= 1
        if let key = descriptor.key, uniqueLocks[key]?.jobID == id { uniqueLocks[key] = nil }
        var effects: [Effect] = []
        if let waiting = waiters.removeValue(forKey: id) { effects.append(.deliver(result, to: Array(waiting.values))) }
        for dependent in dependents.removeValue(forKey: id) ?? [] {
            guard jobs[dependent]?.unmet.remove(id) != nil, jobs[dependent]!.unmet.isEmpty,
                case .waiting = jobs[dependent]!.stage
            else { continue }
            effects += release(dependent)
        }
        if open == 0, !idleWaiters.isEmpty {
            effects.append(.becameIdle(idleWaiters))
            idleWaiters = []
        }
        return effects
    }
}
