import Foundation

/// Time limits per operation type (``Worker/Configuration/timeLimits``): a job whose code runs longer than its type's
/// limit is cancelled, and ends `failed` (`timeLimit`) once its code returns.
extension WorkerSession {
    /// Cancels the jobs whose code has run longer than their time limit.
    func enforceTimeLimits() {
        guard mayHoldTimeLimits else { return }
        mayHoldTimeLimits = false
        let now = ContinuousClock.now
        for job in inFlight.values {
            guard let limit = job.timeLimit else { continue }
            mayHoldTimeLimits = true
            guard let startedAt = job.operation.startedAt, now - startedAt >= limit, !job.operation.job.isCancelled
            else { continue }
            let message = "the job ran longer than its time limit of \(Self.describe(limit)) and was cancelled"
            job.operation.cancel(Cancellation(reason: Cancellation.timeLimitReason, message: message))
            job.operation.job.logger.warning(
                "cancelling job: it ran longer than its time limit", metadata: ["timeLimit": "\(Self.describe(limit))"])
        }
    }

    /// When the next time limit may pass: the earliest limit of the jobs executing, and for those that have not
    /// started, a limit from now (they cannot reach theirs sooner).
    var timeLimitsDueAt: ContinuousClock.Instant? {
        guard mayHoldTimeLimits else { return nil }
        let now = ContinuousClock.now
        return inFlight.values.lazy.compactMap { job -> ContinuousClock.Instant? in
            guard let limit = job.timeLimit, !job.operation.job.isCancelled else { return nil }
            return (job.operation.startedAt ?? now) + limit
        }.min()
    }

    /// A time limit as people write it: `30 s`, `1.5 s`, `250 ms`.
    static func describe(_ limit: Duration) -> String {
        let milliseconds = Int(limit / .milliseconds(1))
        guard milliseconds >= 1000 else { return "\(milliseconds) ms" }
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}
