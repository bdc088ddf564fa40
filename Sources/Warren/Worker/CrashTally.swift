/// Which jobs were executing when a worker process died, from the `crashed` reports on the control stream
/// (``ControlMessage/crashed(jobIDs:worker:journal:)``): a job with one death runs alone, a job with
/// ``Worker/Configuration/maxCrashes`` is dead-lettered. Bounded: past ``capacity`` jobs, the oldest are forgotten.
///
/// Thread safety: confined to the worker's broker thread.
struct CrashTally {
    /// One worker's death, known by the journal that reported it: a report read twice counts once.
    struct Death: Hashable {
        let journal: String
        let worker: String
    }

    let capacity: Int
    private var deaths: [String: [Death]] = [:]
    private var order: [String] = []
    private var start = 0

    init(capacity: Int = 100_000) {
        self.capacity = capacity
    }

    /// The deaths `jobID` was executing at, oldest first.
    subscript(jobID: String) -> [Death] {
        deaths.isEmpty ? [] : deaths[jobID] ?? []
    }

    mutating func record(_ message: ControlMessage) {
        guard let journal = message.token else { return }
        let death = Death(journal: journal, worker: message.worker ?? "unknown")
        for jobID in message.jobIDs {
            guard let known = deaths[jobID] else {
                deaths[jobID] = [death]
                remember(jobID)
                continue
            }
            if !known.contains(death) { deaths[jobID]!.append(death) }
        }
    }

    private mutating func remember(_ jobID: String) {
        order.append(jobID)
        guard order.count - start > capacity else { return }
        deaths[order[start]] = nil
        start += 1
        if start > capacity {
            order.removeFirst(start)
            start = 0
        }
    }
}
