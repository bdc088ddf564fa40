/// The jobs a worker knows have ended, with their status, once dependencies are in play: its own, and everyone's
/// from the `warren.results` stream. Bounded: past ``capacity`` the oldest are forgotten.
///
/// Thread safety: confined to the worker's broker thread.
struct FinishedJobs {
    private var statuses: BoundedDictionary<JobStatus>

    init(capacity: Int = 100_000) {
        statuses = BoundedDictionary(capacity: capacity)
    }

    var capacity: Int { statuses.capacity }

    subscript(jobID: String) -> JobStatus? {
        statuses[jobID]
    }

    mutating func record(_ jobID: String, _ status: JobStatus) {
        guard statuses[jobID] == nil else { return }
        statuses.set(status, for: jobID)
    }
}
