import Foundation

/// Results of jobs whose delivery died with a connection, by job id, waiting for the broker to redeliver them.
///
/// Bounded: past ``capacity`` the oldest are forgotten, and so is any kept for longer than ``maxAge`` (the broker
/// redelivers at once after a reconnect, to this worker or another; one not back by then went elsewhere). A
/// forgotten job's redelivery, if it comes here after all, runs the job again.
/// Thread safety: confined to the worker's broker thread.
struct OrphanResults {
    let capacity: Int
    let maxAge: Duration
    private var results: [String: (result: JobResult, keptAt: ContinuousClock.Instant)] = [:]
    private var order: [String] = []

    init(capacity: Int = 10_000, maxAge: Duration = .seconds(600)) {
        self.capacity = capacity
        self.maxAge = maxAge
    }

    mutating func keep(_ result: JobResult, at now: ContinuousClock.Instant = .now) {
        if results.updateValue((result, now), forKey: result.jobID) == nil { order.append(result.jobID) }
        if order.count > capacity {
            results[order.removeFirst()] = nil
        }
    }

    var isEmpty: Bool { results.isEmpty }

    /// The ids of the jobs whose results are kept, oldest first.
    var jobIDs: [String] { order }

    mutating func take(_ jobID: String) -> JobResult? {
        guard !results.isEmpty, let kept = results.removeValue(forKey: jobID) else { return nil }
        order.removeAll { $0 == jobID }
        return kept.result
    }

    /// Forgets the results kept for longer than ``maxAge``; returns their job ids.
    mutating func forgetExpired(now: ContinuousClock.Instant = .now) -> [String] {
        var expired: [String] = []
        while let oldest = order.first, let kept = results[oldest], now - kept.keptAt >= maxAge {
            expired.append(order.removeFirst())
            results[oldest] = nil
        }
        return expired
    }
}
