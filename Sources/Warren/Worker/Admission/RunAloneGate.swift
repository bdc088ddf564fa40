import Foundation

/// Jobs that run with nothing beside them: a job that was executing when a worker died (``CrashWatch``) waits until
/// the worker is idle, runs alone, and the worker starts nothing else until it ended, so that the deaths counted
/// for it are its own.
///
/// While such a job runs or waits, the jobs admitted meanwhile stay out of their local queues
/// (``blocksOthers``).
/// Thread safety: confined to the worker's broker thread.
final class RunAloneGate: AdmissionGate {
    private let jobs: InFlightJobs
    private let localQueues: LocalQueues
    private let crashes: CrashWatch
    private let metrics: WorkerMetrics
    /// Jobs that run alone, waiting for the worker to be idle.
    private var waiting: [InFlightJob] = []
    /// Whether one runs.
    private var runs = false

    init(jobs: InFlightJobs, localQueues: LocalQueues, crashes: CrashWatch, metrics: WorkerMetrics) {
        self.jobs = jobs
        self.localQueues = localQueues
        self.crashes = crashes
        self.metrics = metrics
    }

    /// Whether the jobs admitted meanwhile wait: a job that runs alone is running or waits for the worker to be idle.
    var blocksOthers: Bool { runs || !waiting.isEmpty }

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        guard job.runsAlone else { return .pass }
        waiting.append(job)
        return .hold
    }

    /// The next job that runs alone, once nothing else can run: no job is in a local queue but those held back.
    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] {
        guard !runs, !waiting.isEmpty, localQueues.isIdle(jobs: jobs.all) else { return [] }
        let job = waiting.removeFirst()
        let dead = crashes.deaths(of: job.descriptor, job.delivery)
        if dead.isEmpty {
            // A journal on this host names it: a process that lost its connection, or died unreported so far.
            job.operation.job.logger.warning(
                """
                running the job alone: a worker process on this host that lost its connection, or died, was \
                executing it
                """)
        } else {
            job.operation.job.logger.warning(
                "running the job alone: it was executing when a worker died",
                metadata: ["deadWorkers": .array(dead.map { "\($0.worker)" })])
        }
        runs = true
        metrics.jobRanAlone()
        return [(job, .pass)]
    }

    /// `job` ended or went: the next job that runs alone may start, or the jobs held for one.
    func ended(_ job: InFlightJob) {
        guard job.runsAlone else { return }
        if job.isQueued {
            runs = false
        } else {
            waiting.removeAll { $0 === job }
        }
    }
}
