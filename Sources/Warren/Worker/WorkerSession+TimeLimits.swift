import Foundation

/// Time limits per operation type (``Worker/Configuration/timeLimits``): a job whose code runs longer than its type's
/// limit is cancelled, and ends `failed` (`timeLimit`) once its code returns.
///
/// The jobs in flight are looked at only when a limit may have passed (``WorkerSession/timeLimitCheckAt``), not at
/// every turn of the loop: a job cannot reach its limit sooner than its limit after it arrived, and a job that has
/// not started when they are looked at, sooner than its limit after that.
extension WorkerSession {
    /// A job of a time-limited type arrived: its limit cannot pass before `limit` from now.
    func timeLimitedJobArrived(limit: Duration) {
        let due = ContinuousClock.now + limit
        timeLimitCheckAt = min(timeLimitCheckAt ?? due, due)
    }

    /// Cancels the jobs whose code has run longer than their time limit, when one may have.
    func enforceTimeLimits() {
        let now = ContinuousClock.now
        guard let checkAt = timeLimitCheckAt, checkAt <= now else { return }
        timeLimitCheckAt = nil
        for job in inFlight.values {
            guard let limit = job.timeLimit, !job.operation.job.isCancelled else { continue }
            guard let startedAt = job.operation.startedAt, now - startedAt >= limit else {
                let due = (job.operation.startedAt ?? now) + limit
                timeLimitCheckAt = min(timeLimitCheckAt ?? due, due)
                continue
            }
            let message = "the job ran longer than its time limit of \(Self.describe(limit)) and was cancelled"
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
