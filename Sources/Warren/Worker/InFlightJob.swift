import AMQP
import Foundation

/// A job the worker holds: delivered, not yet settled with the broker.
///
/// A class: it is looked up several times per job, and a copy of it would retain and release every field of its
/// descriptor and delivery each time.
/// Thread safety: confined to the worker's broker thread.
final class InFlightJob {
    let descriptor: OperationDescriptor
    /// The latest delivery of the job: replaced when the broker redelivers it after a reconnect.
    var delivery: Delivery
    /// The connection generation `delivery` belongs to; its tag is dead on any other.
    var generation: Int
    /// The broker queue it came from.
    let queue: String
    /// The local queue it runs on.
    let localQueue: String
    let attempt: Int
    let receivedAt: Date
    let operation: JobOperation
    /// How long its code may run (its type's time limit on this worker), if it is limited.
    let timeLimit: Duration?
    /// Its latest progress report, for `warren status --jobs`.
    var progress: (fraction: Double, message: String?)?
    /// Whether it was executing when a worker died, and so runs with nothing beside it (``RunAloneGate``).
    var runsAlone = false
    /// Whether its operation was given to its local queue, where it runs unless it is cancelled first
    /// (``LocalQueues``).
    var isQueued = false
    /// The dependencies it still waits for, while it is parked (``DependencyGate``).
    var waitingOn: Set<String>?
    /// The results of its dependencies gathered so far, by job id, while it is parked.
    var dependencyResults: [String: JobResult] = [:]

    /// Whether it waits for its dependencies.
    var isParked: Bool { waitingOn != nil }

    init(
        descriptor: OperationDescriptor, delivery: Delivery, generation: Int, queue: String, localQueue: String,
        attempt: Int, receivedAt: Date, operation: JobOperation, timeLimit: Duration? = nil
    ) {
        self.descriptor = descriptor
        self.delivery = delivery
        self.generation = generation
        self.queue = queue
        self.localQueue = localQueue
        self.attempt = attempt
        self.receivedAt = receivedAt
        self.operation = operation
        self.timeLimit = timeLimit
    }
}

/// The jobs a worker holds, by job id: delivered and not yet settled with the broker.
///
/// Thread safety: confined to the worker's broker thread.
final class InFlightJobs {
    private var jobs: [String: InFlightJob] = [:]

    subscript(jobID: String) -> InFlightJob? { jobs[jobID] }

    var isEmpty: Bool { jobs.isEmpty }
    var count: Int { jobs.count }
    var ids: Dictionary<String, InFlightJob>.Keys { jobs.keys }
    var all: Dictionary<String, InFlightJob>.Values { jobs.values }
    /// The jobs by id, for components that look jobs up.
    var byID: [String: InFlightJob] { jobs }

    func insert(_ job: InFlightJob) {
        jobs[job.descriptor.id] = job
    }

    /// Takes job `jobID` out, if it is held.
    @discardableResult
    func remove(_ jobID: String) -> InFlightJob? {
        jobs.removeValue(forKey: jobID)
    }

    /// Whether `job` is the one held under its id: not ended, and not replaced.
    func holds(_ job: InFlightJob) -> Bool {
        jobs[job.descriptor.id] === job
    }
}
