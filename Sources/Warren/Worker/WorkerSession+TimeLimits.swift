import Foundation

/// Time limits per operation type (``Worker/Configuration/timeLimits``) and per job
/// (``OperationDescriptor/timeLimitSeconds``): a job whose code runs longer than the shorter of the two is cancelled,
/// and ends `failed` (`timeLimit`) once its code returns.
///
/// The operation of a time-limited job tells the broker thread when its code starts (``WorkerMessage/started(jobID:)``),
/// and the jobs in flight are looked at only when a limit may have passed (``WorkerSession/timeLimitCheckAt``): jobs
/// waiting, however many and however short their limits, cost the worker nothing.
extension WorkerSession {
    /// The time limit of a job: its own or its type's on this worker, whichever is shorter; `nil` without either.
    func timeLimit(of descriptor: OperationDescriptor) -> Duration? {
        let typeLimit = configuration.timeLimits.isEmpty ? nil : configuration.timeLimits[descriptor.type]
        guard let seconds = descriptor.timeLimitSeconds else { return typeLimit }
        return min(typeLimit ?? .seconds(seconds), .seconds(seconds))
    }

    /// The code of `job`, which has a time limit, started: the limit passes that long from then.
    func timeLimitedJobStarted(_ job: InFlightJob) {
        guard let limit = job.timeLimit, let startedAt = job.operation.startedAt else { return }
        timeLimitCheckAt = min(timeLimitCheckAt ?? startedAt + limit, startedAt + limit)
    }

    /// Cancels the jobs whose code has run longer than their time limit, when one may have.
    func enforceTimeLimits() {
        let now = ContinuousClock.now
        guard let checkAt = timeLimitCheckAt, checkAt <= now else { return }
        timeLimitCheckAt = nil
        for job in inFlight.values {
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
