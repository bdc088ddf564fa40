/// The jobs a worker knows have ended, with their status, once dependencies are in play: its own, and everyone's
/// from the `warren.results` stream. Bounded: past ``capacity`` the oldest are forgotten.
///
/// Thread safety: confined to the worker's broker thread.
struct FinishedJobs {
    let capacity: Int
    private var statuses: [String: JobStatus] = [:]
    private var order: [String] = []
    private var start = 0

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    subscript(jobID: String) -> JobStatus? {
        statuses[jobID]
    }

    mutating func record(_ jobID: String, _ status: JobStatus) {
        guard statuses[jobID] == nil else { return }
        statuses[jobID] = status
        order.append(jobID)
        if order.count - start > capacity {
            statuses[order[start]] = nil
            start += 1
            if start > capacity {
                order.removeFirst(start)
                start = 0
            }
        }
    }
}
