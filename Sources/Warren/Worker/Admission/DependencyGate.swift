import AMQP
import Foundation
import Logging

/// Jobs that wait for other jobs, and receive what they ended with.
///
/// A job with dependencies is *parked*: held by the worker, not yet in a local queue, until it holds the result of
/// every one of them (``JobContext/dependencyResults``). Each parked job raises the prefetch by one, so waiting
/// jobs never starve the worker of the jobs they wait for (the Celery fix for ETA tasks); past
/// ``Worker/Configuration/maxParkedJobs`` a job is parked through the broker instead, unless its dependencies all
/// ended. Which jobs ended, wherever they ran, the worker learns from the `warren.results` stream
/// (``ResultsStreamReader``), which it starts reading when it first parks a job; from then on it also remembers the
/// jobs it ends itself. A cancelled or failed dependency counts as ended, unless the job asks for success. A job
/// that closes a cycle of dependencies is refused, with every other job of the cycle parked here.
/// Thread safety: confined to the worker's broker thread.
final class DependencyGate: AdmissionGate {
    private let jobs: InFlightJobs
    private let reader: ResultsStreamReader
    private let maxParkedJobs: Int
    private let logger: Logger
    /// The jobs parked here.
    private var parked = ParkedJobs()
    /// When to look next for jobs parked too long (``takeLongParked()``).
    private var longParkedCheckAt = ContinuousClock.now
    /// The operations of jobs that jobs parked here wait for, by job id, whose finish is held until their end is
    /// handled (``JobOperation/holdFinish()``).
    private var heldFinishes: [String: JobOperation] = [:]
    /// The jobs whose end this turn handled, while finishes are held: released once the turn queued what it took.
    private var endedThisTurn: [String] = []
    /// Jobs known to have ended, for dependencies.
    private var finishedJobs = FinishedJobs()
    private var released: [(InFlightJob, AdmissionVerdict)] = []

    /// How long a job parked through the broker stays away, in milliseconds: a delay queue's own length (4 s), so
    /// that it comes back when it expires, never behind a longer wait.
    static let parkedRoundTrip = 4_000

    /// How long a job stays parked here before it goes round through the broker (and comes back to park again):
    /// RabbitMQ closes the channel of a delivery held unacknowledged past its `consumer_timeout` (30 minutes by
    /// default), and every job the worker holds would go back to the broker with it.
    static let parkedLifetime: TimeInterval = 600

    init(jobs: InFlightJobs, link: BrokerLink, maxParkedJobs: Int, logger: Logger) {
        self.jobs = jobs
        reader = ResultsStreamReader(link: link, logger: logger)
        self.maxParkedJobs = maxParkedJobs
        self.logger = logger
    }

    /// How many jobs are parked here.
    var parkedCount: Int { parked.count }

    /// The dependencies job `jobID` still waits for, if it is parked.
    func waitingOn(_ jobID: String) -> Set<String>? {
        parked.waitingOn(jobID)
    }

    // MARK: - The gate

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        guard let dependencies = job.descriptor.dependencies, !dependencies.isEmpty else { return .pass }
        if dependencies.contains(job.descriptor.id) {
            return .reject(Self.cycleError("job \(job.descriptor.id) depends on itself"))
        }
        // Jobs learn of their dependencies' ends from the stream, also those that go round through the broker.
        try startReading()
        // A job that closes a cycle with jobs parked here is refused, whether or not there is room to park it.
        parked.park(job, waitingOn: Set(dependencies))
        if let cycle = parked.cycle(from: job.descriptor.id) {
            let error = Self.cycleError("dependency cycle: \(cycle.joined(separator: " -> "))")
            for id in Set(cycle) {
                guard let member = parked.unpark(id), member !== job else { continue }
                released.append((member, .reject(error)))
            }
            return .reject(error)
        }
        // One whose dependencies all ended waits only for their results to be read: parked here whatever the
        // count, or the jobs parked for it could wait for it for good. One past its deadline is held here too, for
        // the moment it takes to end it cancelled, not sent round the broker first.
        let ready = dependencies.allSatisfy { finishedJobs[$0] != nil }
        let expired = job.descriptor.deadline.map { $0 <= Date() } ?? false
        guard parked.count <= maxParkedJobs || ready || expired else {
            parked.unpark(job.descriptor.id)
            job.operation.job.debug(
                "parking through the broker: as many jobs are parked here as the worker may hold",
                metadata: ["maxParkedJobs": "\(maxParkedJobs)"])
            return .sendRound
        }
        holdFinishes(of: dependencies)
        let ended = Set(dependencies).filter { finishedJobs[$0] != nil }
        job.operation.job.debug(
            "parked until its dependencies end and their results are read",
            metadata: [
                "waitingOn": .array(Set(dependencies).subtracting(ended).sorted().map { "\($0)" }),
                "ended": .array(ended.sorted().map { "\($0)" }),
            ])
        // A dependency that ended here without its offset has its result on the way to the stream, and gathered
        // from there.
        for dependency in ended.sorted() where !reader.holdsBackFailure(of: dependency) {
            guard let offset = finishedJobs[dependency]?.offset else { continue }
            job.operation.job.debug(
                "reading a dependency's result from the results stream",
                metadata: ["dependency": "\(dependency)", "offset": "\(offset)"])
            try reader.fetch(dependency, at: offset)
        }
        return .hold
    }

    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] {
        defer { released.removeAll(keepingCapacity: true) }
        return released
    }

    private static func cycleError(_ detail: String) -> JobError {
        JobError(code: "dependencyCycle", message: detail)
    }

    /// Takes job `jobID` off the parked ones; the job, if it was parked.
    @discardableResult
    func unpark(_ jobID: String) -> InFlightJob? {
        parked.unpark(jobID)
    }

    /// Takes the jobs parked for ``parkedLifetime`` off the parked ones, to send round through the broker, as a
    /// full parking does; looks every 10 s.
    func takeLongParked() -> [InFlightJob] {
        guard !parked.isEmpty, ContinuousClock.now >= longParkedCheckAt else { return [] }
        longParkedCheckAt = .now + .seconds(10)
        let long = parked.unpark(receivedBefore: Date().addingTimeInterval(-Self.parkedLifetime))
        for job in long {
            job.operation.job.debug(
                "parked for 10 minutes: going round through the broker, before its consumer_timeout takes the delivery")
        }
        return long
    }

    // MARK: - Held finishes

    /// Holds the finish of the operations of `dependencies` in flight here (``JobOperation/holdFinish()``), until
    /// their end is handled and the jobs parked on them are in their local queues: a local queue then starts them in
    /// priority order beside the jobs that waited there, as an `OperationQueue` starts the dependents of an
    /// operation that finished.
    private func holdFinishes(of dependencies: [String]) {
        for dependency in dependencies where heldFinishes[dependency] == nil {
            guard let operation = jobs[dependency]?.operation, !operation.isFinished else { continue }
            operation.holdFinish()
            heldFinishes[dependency] = operation
        }
    }

    /// The end of job `jobID` was handled this turn: its finish, if held, is released once the turn queued what
    /// its end released (``releaseHeldFinishes()``).
    func jobEnded(_ jobID: String) {
        if !heldFinishes.isEmpty { endedThisTurn.append(jobID) }
    }

    /// Lets the operations whose end this turn handled finish, now that the jobs they released are queued.
    func releaseHeldFinishes() {
        for jobID in endedThisTurn { releaseFinish(of: jobID) }
        endedThisTurn.removeAll(keepingCapacity: true)
    }

    /// Lets the operation of job `jobID` finish, if its finish was held.
    func releaseFinish(of jobID: String) {
        guard !heldFinishes.isEmpty else { return }
        heldFinishes.removeValue(forKey: jobID)?.releaseFinish()
    }

    /// Lets every held operation finish: the worker stopped.
    func releaseAllFinishes() {
        for operation in heldFinishes.values { operation.releaseFinish() }
        heldFinishes = [:]
    }

    // MARK: - Results

    /// The connection was lost or a new one is set up: the stream is read again when a job is parked (at once, if
    /// jobs are parked already).
    func connected() throws {
        reader.reset()
        if !parked.isEmpty { try startReading() }
    }

    /// Starts reading the results stream, unless it is read already.
    private func startReading() throws {
        guard !reader.isReading else { return }
        try reader.start(
            stored: { [unowned self] in try storedResult($0) }, fetched: { [unowned self] in try fetchedResult($0) })
    }

    /// The connection was lost.
    func connectionLost() {
        reader.reset()
    }

    /// A job ended (here, with its result not yet in the stream: `offset` `nil`; or anywhere, as the stream tells,
    /// which then tells where it holds the result): hand its result to the jobs that wait for it. Remembered only
    /// once dependencies are in play (the stream is read): until then no job waits, and a job that arrives later
    /// with dependencies learns of earlier ends from the stream.
    func ended(_ result: JobResult, offset: UInt64? = nil) {
        guard reader.isReading, finishedJobs.record(result, offset: offset) else { return }
        if offset != nil, reader.holdsBack(result) { return }
        resolved(result.jobID, result: result)
    }

    /// A message of the `warren.results` stream, on ``BrokerLink/Channel/results``.
    func storedResult(_ delivery: Delivery) throws {
        let (results, offset) = try reader.stored(delivery)
        for result in results { ended(result, offset: offset) }
        reader.read(upTo: offset)
    }

    /// A message read again by offset, on ``BrokerLink/Channel/fetch``. A dependency whose result the stream no
    /// longer holds is resolved without one: its dependents run rather than wait for good.
    func fetchedResult(_ delivery: Delivery) throws {
        let (found, missing) = try reader.fetched(delivery)
        for result in found { resolved(result.jobID, result: result) }
        for jobID in missing { resolved(jobID, result: nil) }
    }

    /// Once the first reading of the stream caught up: the failures read meanwhile that no rerun superseded go to
    /// the jobs that wait for them.
    func resolveIfCaughtUp() {
        guard let failures = reader.caughtUp() else { return }
        for result in failures { resolved(result.jobID, result: result) }
    }

    /// Hands the parked jobs waiting for `jobID` its `result` (none when it cannot be read), and releases those
    /// that wait for nothing more.
    private func resolved(_ jobID: String, result: JobResult?) {
        guard !parked.isEmpty else { return }
        for job in parked.resolve(jobID, result: result, isHeld: jobs.holds) where release(job) {
            released.append((job, .pass))
        }
    }

    /// Gives `job` its dependencies' results; whether it goes on. It ends `cancelled` instead when it requires
    /// success and a dependency did not succeed: its operation then reports, and it never runs.
    private func release(_ job: InFlightJob) -> Bool {
        let results = job.dependencyResults
        job.dependencyResults = [:]
        job.operation.job.receiveDependencyResults(results)
        let statuses = (job.descriptor.dependencies ?? []).compactMap { id in
            (results[id]?.status ?? finishedJobs[id]?.status).map { (id, $0) }
        }
        if job.descriptor.requireSuccess == true, let (id, status) = statuses.first(where: { $0.1 != .succeeded }) {
            job.operation.cancel(
                Cancellation(
                    reason: "dependency",
                    message: "dependency \(id) ended \(status.rawValue), and the job requires success"))
            return false
        }
        return true
    }
}
