/// Counts the jobs a worker with ``Worker/Configuration/maxJobs`` takes to run: a job counts once nothing before it
/// holds it back (its dependencies, a fleet-wide turn). The last one the limit allows retires the worker.
///
/// Thread safety: confined to the worker's broker thread.
final class JobQuotaGate: AdmissionGate {
    private let lifecycle: Lifecycle
    private let maxJobs: Int

    init(lifecycle: Lifecycle, maxJobs: Int) {
        self.lifecycle = lifecycle
        self.maxJobs = maxJobs
    }

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        if lifecycle.jobTaken() {
            lifecycle.retire(
                .maxJobs, because: "took the most jobs this worker may take", metadata: ["maxJobs": "\(maxJobs)"])
        }
        return .pass
    }

    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] { [] }
}
