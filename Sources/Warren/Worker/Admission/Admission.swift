import Logging

/// What a gate says of a job on its way to its local queue.
enum AdmissionVerdict {
    /// The job goes on to the next gate.
    case pass
    /// The gate keeps the job, and lets it go on later (``AdmissionGate/takeReleased()``).
    case hold
    /// The job can never run: dead-letter it with this error.
    case reject(JobError)
    /// The job waits in the broker instead: send it round through a delay queue.
    case sendRound
}

/// A step a job passes on its way to its local queue: dependencies, rate limits, a run alone after crashes.
///
/// A gate that holds a job lets it go later: it lists it, with its new verdict, for ``takeReleased()``.
/// Thread safety: confined to the worker's broker thread.
protocol AdmissionGate: AnyObject {
    /// Whether `job` goes on now.
    func admit(_ job: InFlightJob) throws -> AdmissionVerdict
    /// The jobs this gate held that go on now (``AdmissionVerdict/pass``) or never will (any other verdict but
    /// ``AdmissionVerdict/hold``), taken out.
    func takeReleased() -> [(InFlightJob, AdmissionVerdict)]
}

/// The gates a job passes, in order, between its delivery and its local queue: only those the worker's
/// configuration asks for, so that a feature not in use costs the job's path nothing.
///
/// Thread safety: confined to the worker's broker thread.
final class Admission: WakesTheLoop {
    /// Where a job's way through the gates ended.
    enum Outcome {
        /// To its local queue.
        case queue
        /// A gate holds it.
        case held
        case reject(JobError)
        case sendRound
    }

    /// Jobs wait for their dependencies' results.
    let dependencies: DependencyGate
    /// Jobs of types under a fleet-wide rate limit wait for a turn from the broker; `nil` without such limits.
    let fleetRateLimits: FleetRateLimitGate?
    /// Jobs of rate-limited types wait for their turn; `nil` without rate limits.
    let rateLimits: RateLimitGate?
    /// Jobs that were executing when a worker died wait to run alone.
    let runAlone: RunAloneGate
    /// The gates in the order jobs pass them.
    private let chain: GateChain

    /// Makes the gates `configuration` asks for.
    init(
        configuration: Worker.Configuration, jobs: InFlightJobs, link: BrokerLink, localQueues: LocalQueues,
        crashes: CrashWatch, lifecycle: Lifecycle, metrics: WorkerMetrics, logger: Logger
    ) {
        dependencies = DependencyGate(
            jobs: jobs, link: link, maxParkedJobs: configuration.maxParkedJobs, logger: logger)
        fleetRateLimits =
            configuration.fleetRateLimits.isEmpty
            ? nil
            : FleetRateLimitGate(
                limits: configuration.fleetRateLimits, link: link, jobs: jobs, localQueues: localQueues.byName,
                logger: logger)
        rateLimits = configuration.rateLimits.isEmpty ? nil : RateLimitGate(limits: configuration.rateLimits)
        runAlone = RunAloneGate(jobs: jobs, localQueues: localQueues, crashes: crashes, metrics: metrics)
        let quota = configuration.maxJobs.map { JobQuotaGate(lifecycle: lifecycle, maxJobs: $0) }
        let ordered: [(any AdmissionGate)?] = [dependencies, fleetRateLimits, quota, rateLimits, runAlone]
        chain = GateChain(gates: ordered.compactMap { $0 })
    }

    /// When a rate limit's turn comes next.
    var nextWake: ContinuousClock.Instant? {
        rateLimits?.nextWake.earliest(fleetRateLimits?.nextWake) ?? fleetRateLimits?.nextWake
    }

    /// Takes `job` through the gates from the first.
    func admit(_ job: InFlightJob) throws -> Outcome {
        try chain.admit(job)
    }

    /// The jobs the gates let go since the last call, each taken through the gates after the one that held it,
    /// with where it ended. Jobs that a later gate holds again are not listed.
    func takeReleased() throws -> [(InFlightJob, Outcome)] {
        try chain.takeReleased()
    }
}

/// Gates in the order jobs pass them.
///
/// Thread safety: confined to the worker's broker thread.
struct GateChain {
    let gates: [any AdmissionGate]

    /// Takes `job` through the gates from the first.
    func admit(_ job: InFlightJob) throws -> Admission.Outcome {
        try admit(job, from: 0)
    }

    /// The jobs the gates let go since the last call, each taken through the gates after the one that held it,
    /// with where it ended. Jobs that a later gate holds again are not listed.
    func takeReleased() throws -> [(InFlightJob, Admission.Outcome)] {
        var ended: [(InFlightJob, Admission.Outcome)] = []
        for (index, gate) in gates.enumerated() {
            for (job, verdict) in gate.takeReleased() {
                let outcome = try verdict.isPass ? admit(job, from: index + 1) : Admission.Outcome(verdict)
                if case .held = outcome { continue }
                ended.append((job, outcome))
            }
        }
        return ended
    }

    private func admit(_ job: InFlightJob, from first: Int) throws -> Admission.Outcome {
        for gate in gates[first...] {
            let verdict = try gate.admit(job)
            if !verdict.isPass { return Admission.Outcome(verdict) }
        }
        return .queue
    }
}

extension AdmissionVerdict {
    fileprivate var isPass: Bool {
        if case .pass = self { true } else { false }
    }
}

extension Admission.Outcome {
    fileprivate init(_ verdict: AdmissionVerdict) {
        switch verdict {
        case .pass: self = .queue
        case .hold: self = .held
        case .reject(let error): self = .reject(error)
        case .sendRound: self = .sendRound
        }
    }
}
