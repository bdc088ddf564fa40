import Foundation
import Warren

/// What the dashboard last learnt of the fleet: the workers' status replies, the job queues, the dead letters.
/// Pages render from it, so that a slow or lost broker never holds a page up; ``takenAt`` says how old it is.
///
/// Thread safety: immutable (a value).
struct FleetSnapshot: Sendable {
    /// One job queue, as the broker counts it.
    struct QueueRow: Sendable {
        var name: String
        /// `nil` when the queue does not exist.
        var status: JobQueueStatus?
        /// Why it could not be looked up (its cluster node is down), or `nil`.
        var unreachable: String?
    }

    var workers: [WorkerStatus] = []
    /// Workers that answered an earlier poll but not the latest, with when they last answered; forgotten after
    /// ``FleetMonitor/goneKept``.
    var gone: [(worker: WorkerStatus, lastSeen: Date)] = []
    var queues: [QueueRow] = []
    /// Messages in `warren.dead`; `nil` when it does not exist or was not looked at.
    var deadLetters: Int?
    /// How many schedulers stand by for `warren.schedules` (one of them leads); `nil` when nobody made the queue.
    var schedulers: Int?
    /// When the last poll that reached the broker ended; `nil` before the first.
    var takenAt: Date?
    /// Why the latest poll failed, or `nil` when it succeeded.
    var problem: String?
    /// Since when polls fail, for the outage banner.
    var problemSince: Date?

    /// The seconds since ``takenAt``, or `nil` before the first poll.
    func age(now: Date = Date()) -> Double? {
        takenAt.map { now.timeIntervalSince($0) }
    }

    /// Every job the workers listed, in the order of ``sortedJobs()``: sorted once per poll, not per page.
    var listedJobs: [(worker: WorkerStatus, job: WorkerStatus.Job)] = []

    /// Every job the workers listed, executing ones first (longest running first), then the others by how long
    /// they have been held, with the worker that holds each.
    func sortedJobs() -> [(worker: WorkerStatus, job: WorkerStatus.Job)] {
        var all: [(worker: WorkerStatus, job: WorkerStatus.Job)] = []
        for worker in workers {
            for job in worker.jobs ?? [] { all.append((worker, job)) }
        }
        all.sort { lhs, rhs in
            let (left, right) = (lhs.job, rhs.job)
            if (left.state == .executing) != (right.state == .executing) { return left.state == .executing }
            return (left.executingSeconds ?? left.heldSeconds) > (right.executingSeconds ?? right.heldSeconds)
        }
        return all
    }

    /// Jobs the workers hold but did not list (past the listing's limit).
    var unlistedJobs: Int {
        workers.reduce(0) { $0 + ($1.moreJobs ?? 0) }
    }

    /// The job `id`, if a worker listed it.
    func job(_ id: String) -> (worker: WorkerStatus, job: WorkerStatus.Job)? {
        for worker in workers {
            if let job = worker.jobs?.first(where: { $0.id == id }) { return (worker, job) }
        }
        return nil
    }

    /// Whether `queue` is paused on every live worker that consumes it (and one does).
    func isPaused(queue: String) -> Bool {
        let consumers = workers.filter { $0.queues.contains(queue) }
        return !consumers.isEmpty && consumers.allSatisfy { $0.pausedQueues.contains(queue) }
    }
}
