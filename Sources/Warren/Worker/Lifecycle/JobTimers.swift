import Foundation

/// Deadlines and time limits of the jobs a worker holds.
///
/// A job whose deadline passes is cancelled, wherever it is; one not started yet is cancelled when it would start.
/// A job whose code runs longer than its time limit (its own or its type's on this worker, whichever is shorter;
/// Celery's `time_limit`) is cancelled, and ends `failed` (`timeLimit`) once its code returns. The jobs held are
/// looked at only while one may have a deadline, and only when a time limit may have passed: jobs without either
/// cost the worker nothing.
/// Thread safety: confined to the worker's broker thread.
final class JobTimers: WakesTheLoop {
    private let jobs: InFlightJobs
    private let typeLimits: [String: Duration]
    /// Whether a job with a deadline may be held.
    private var mayHoldDeadlines = false
    /// When a job's time limit may pass next, while a time-limited job executes.
    private var timeLimitCheckAt: ContinuousClock.Instant?

    /// - Parameters:
    ///   - jobs: The jobs the worker holds.
    ///   - typeLimits: This worker's time limits, by operation type.
    init(jobs: InFlightJobs, typeLimits: [String: Duration]) {
        self.jobs = jobs
        self.typeLimits = typeLimits
    }

    /// The time limit of a job: its own or its type's on this worker, whichever is shorter; `nil` without either.
    func timeLimit(of descriptor: OperationDescriptor) -> Duration? {
        let typeLimit = typeLimits.isEmpty ? nil : typeLimits[descriptor.type]
        guard let seconds = descriptor.timeLimitSeconds else { return typeLimit }
        return min(typeLimit ?? .seconds(seconds), .seconds(seconds))
    }

    /// A job arrived: the deadlines are looked at from now on if it has one.
    func arrived(_ descriptor: OperationDescriptor) {
        if descriptor.deadline != nil { mayHoldDeadlines = true }
    }

    /// The code of `job`, which has a time limit, started: the limit passes that long from then.
    func started(_ job: InFlightJob) {
        guard let limit = job.timeLimit, let startedAt = job.operation.startedAt else { return }
        timeLimitCheckAt = min(timeLimitCheckAt ?? startedAt + limit, startedAt + limit)
    }

    /// When a deadline or a time limit may pass next.
    var nextWake: ContinuousClock.Instant? {
        timeLimitCheckAt.earliest(nextDeadline)
    }

    private var nextDeadline: ContinuousClock.Instant? {
        guard mayHoldDeadlines, let deadline = jobs.all.compactMap({ $0.descriptor.deadline }).min() else {
            return nil
        }
        return .now + .milliseconds(Int(deadline.timeIntervalSinceNow * 1000) + 1)
    }

    /// Cancels the jobs whose deadline passed, and the executing ones that ran past their time limit.
    func enforce() {
        enforceDeadlines()
        enforceTimeLimits()
    }

    private func enforceDeadlines() {
        guard mayHoldDeadlines else { return }
        let now = Date()
        mayHoldDeadlines = false
        for job in jobs.all {
            guard let deadline = job.descriptor.deadline else { continue }
            mayHoldDeadlines = true
            guard deadline <= now, !job.operation.job.isCancelled else { continue }
            let message =
                job.operation.hasStarted ? "the job's deadline passed" : "deadline passed before the job started"
            job.operation.cancel(Cancellation(reason: "deadline", message: message))
        }
    }

    private func enforceTimeLimits() {
        guard let checkAt = timeLimitCheckAt else { return }
        let now = ContinuousClock.now
        guard checkAt <= now else { return }
        timeLimitCheckAt = nil
        for job in jobs.all {
            guard let limit = job.timeLimit, let startedAt = job.operation.startedAt, !job.operation.job.isCancelled
            else { continue }
            guard now - startedAt >= limit else {
                timeLimitCheckAt = min(timeLimitCheckAt ?? startedAt + limit, startedAt + limit)
                continue
            }
            let origin = job.descriptor.timeLimitSeconds.map(Duration.seconds) == limit ? "its own" : "its type's"
            let message = "the job ran longer than \(origin) time limit of \(Self.describe(limit)) and was cancelled"
            job.operation.cancel(Cancellation(reason: Cancellation.timeLimitReason, message: message))
            job.operation.job.logger.warning(
                "cancelling job: it ran longer than its time limit", metadata: ["timeLimit": "\(Self.describe(limit))"])
        }
    }

    /// A time limit as people write it: `30 s`, `1.5 s`, `250 ms`.
    static func describe(_ limit: Duration) -> String {
        let milliseconds = Int(limit / .milliseconds(1))
        guard milliseconds >= 1000 else { return "\(milliseconds) ms" }
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
