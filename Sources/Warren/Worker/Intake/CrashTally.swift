import Foundation

/// Which jobs were executing when a worker process died, from the `crashed` reports on the control stream
/// (``ControlMessage/crashed(jobIDs:worker:journal:)``): a job with one death runs alone, a job with
/// ``Worker/Configuration/maxCrashes`` is dead-lettered. Bounded: past ``capacity`` jobs, the oldest are forgotten.
///
/// Thread safety: confined to the worker's broker thread.
struct CrashTally {
    /// One worker's death, known by the journal that reported it: a report read twice counts once.
    struct Death {
        let journal: String
        let worker: String
        /// Whether the job was the only one executing: the death was its own.
        let alone: Bool
        /// When it was reported, if the report says.
        let reportedAt: Date?
    }

    private var deaths: BoundedDictionary<[Death]>

    init(capacity: Int = 100_000) {
        deaths = BoundedDictionary(capacity: capacity)
    }

    /// The deaths `jobID` was executing at, oldest first.
    subscript(jobID: String) -> [Death] {
        deaths.isEmpty ? [] : deaths[jobID] ?? []
    }

    mutating func record(_ report: ControlMessage) {
        guard let journal = report.token else { return }
        let death = Death(
            journal: journal, worker: report.worker ?? "unknown", alone: report.jobIDs.count == 1,
            reportedAt: report.sentAt)
        for jobID in report.jobIDs {
            let known = deaths[jobID] ?? []
            if !known.contains(where: { $0.journal == journal }) { deaths.set(known + [death], for: jobID) }
        }
    }
}
