import Foundation

/// Rate limits (``Worker/Configuration/rateLimits``): a job of a rate-limited operation type, once nothing else
/// holds it back (its dependencies), waits in the worker for its turn (``Throttle``), then goes to its local queue.
/// A waiting job holds its delivery unacknowledged and counts against the prefetch like any job the worker holds,
/// so that a worker never takes more of such jobs than it could start; it can be cancelled, paused or reach its
/// deadline like any job that has not started.
extension WorkerSession {
    /// Whether `job` waits for its turn under its type's rate limit; `false` when it may go now.
    func waitsForItsTurn(_ job: InFlightJob) -> Bool {
        guard !throttles.isEmpty, throttles[job.descriptor.type] != nil else { return false }
        guard !throttles[job.descriptor.type]!.admit(job, at: .now) else { return false }
        job.operation.job.debug("waiting for its turn under its type's rate limit")
        return true
    }

    /// Hands the jobs whose turn came to their local queues.
    func releaseThrottledJobs() {
        guard !throttles.isEmpty else { return }
        let now = ContinuousClock.now
        for type in throttles.keys where throttles[type]!.dueAt.map({ $0 <= now }) == true {
            for job in throttles[type]!.due(at: now) { queueOperation(of: job, throttling: false) }
        }
    }

    /// When the next waiting job's turn comes, if one waits.
    var throttledJobsDueAt: ContinuousClock.Instant? {
        guard !throttles.isEmpty else { return nil }
        return throttles.values.compactMap(\.dueAt).min()
    }
}
