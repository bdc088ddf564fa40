import Foundation

/// The jobs parked for their dependencies, each with the dependencies it still waits for (its `waitingOn`), and
/// what their dependencies' ends release.
///
/// Thread safety: confined to the worker's broker thread.
struct ParkedJobs {
    /// The parked jobs by id.
    private var jobs: [String: InFlightJob] = [:]

    var count: Int { jobs.count }
    var isEmpty: Bool { jobs.isEmpty }

    /// The dependencies job `jobID` still waits for, if it is parked.
    func waitingOn(_ jobID: String) -> Set<String>? {
        jobs.isEmpty ? nil : jobs[jobID]?.waitingOn
    }

    /// Parks `job` until each of `dependencies` ended.
    mutating func park(_ job: InFlightJob, waitingOn dependencies: Set<String>) {
        job.waitingOn = dependencies
        jobs[job.descriptor.id] = job
    }

    /// Takes job `jobID` off the parked ones; the job, if it was parked.
    @discardableResult
    mutating func unpark(_ jobID: String) -> InFlightJob? {
        guard !jobs.isEmpty, let job = jobs.removeValue(forKey: jobID) else { return nil }
        job.waitingOn = nil
        return job
    }

    /// A cycle through `start` among the parked jobs, if there is one, as the ids along it, `start` first and last.
    func cycle(from start: String) -> [String]? {
        var path: [String] = []
        var visited: Set<String> = []
        func visit(_ id: String) -> [String]? {
            if id == start && !path.isEmpty { return path + [start] }
            guard visited.insert(id).inserted, let waitingOn = jobs[id]?.waitingOn else { return nil }
            path.append(id)
            for next in waitingOn.sorted() { if let cycle = visit(next) { return cycle } }
            path.removeLast()
            return nil
        }
        return visit(start)
    }

    /// Job `jobID` ended with `result` (none when it cannot be read): the parked jobs that wait for it gather the
    /// result, and those that wait for nothing more are unparked and returned, oldest first. Parked jobs that
    /// `isHeld` no longer holds are unparked and dropped.
    mutating func resolve(
        _ jobID: String, result: JobResult?, isHeld: (InFlightJob) -> Bool
    ) -> [InFlightJob] {
        var ready: [InFlightJob] = []
        for job in jobs.values where job.waitingOn?.contains(jobID) == true {
            guard isHeld(job) else {
                unpark(job.descriptor.id)
                continue
            }
            if let result { job.dependencyResults[jobID] = result }
            job.waitingOn?.remove(jobID)
            if job.waitingOn?.isEmpty == true { ready.append(job) }
        }
        ready.sort { $0.receivedAt < $1.receivedAt }
        for job in ready { unpark(job.descriptor.id) }
        return ready
    }

    /// Unparks and returns the jobs received before `instant`.
    mutating func unpark(receivedBefore instant: Date) -> [InFlightJob] {
        let old = jobs.values.filter { $0.receivedAt < instant }
        for job in old { unpark(job.descriptor.id) }
        return old
    }
}
