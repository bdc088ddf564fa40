import AMQP
import Foundation
import Logging

/// How long the worker runs: a stop and its grace periods, recycling (``Worker/Configuration/maxJobs``,
/// ``Worker/Configuration/maxResidentMemory``), and, after a reconnect while it stops, the wait for the redeliveries
/// of its own jobs.
///
/// A stop gives executing jobs ``Worker/Configuration/shutdownGracePeriod`` to finish, cancels them, and waits as
/// long again before it leaves the ones that ignore their cancellation to the broker. A worker that took its last
/// job, or grew past its memory limit, retires: it takes no more jobs, runs those it holds, then stops with
/// ``Worker/stoppedToRecycle`` set.
/// Thread safety: confined to the worker's broker thread.
final class Lifecycle: WakesTheLoop {
    /// When executing jobs are cancelled; set once a stop began.
    private(set) var stopDeadline: ContinuousClock.Instant? {
        didSet { noteDeadlines() }
    }
    /// When a stopping worker stops waiting for executing jobs that ignore their cancellation.
    private(set) var abandonDeadline: ContinuousClock.Instant?
    /// The limit that made the worker retire, if it did.
    private(set) var recycling: RecyclingLimit?
    /// Until when a worker that stops or retires consumes again after a reconnect, for the redeliveries of its own
    /// jobs; and the other deliveries it holds meanwhile, to send back once it stops waiting.
    private(set) var redeliveriesAwaitedUntil: ContinuousClock.Instant? {
        didSet { noteDeadlines() }
    }
    /// Whether a stop began. Kept beside the deadlines, which cost more to read: it is asked for every job.
    private(set) var isStopping = false
    /// Whether it waits for the redeliveries of its own jobs after a reconnect.
    private(set) var awaitsRedeliveries = false
    private(set) var heldWhileAwaitingRedeliveries: [Delivery] = []
    private let maxJobs: Int?
    private let maxResidentMemory: Int?
    private let grace: Duration
    /// Jobs taken to run, counted only with a ``Worker/Configuration/maxJobs``.
    private var jobsTaken = 0
    /// Whether jobs ended since the resident memory was last compared with the limit.
    private var jobsEndedSinceMemoryCheck = false
    /// Why the worker retired, until the session acted on it (``takeRetirement()``).
    private var retirement: (reason: String, metadata: Logger.Metadata)?

    /// How long a retiring worker consumes again after a reconnect, for its jobs' redeliveries.
    static let redeliveryWait = Duration.seconds(10)

    init(configuration: Worker.Configuration) {
        maxJobs = configuration.maxJobs
        maxResidentMemory = configuration.maxResidentMemory
        grace = configuration.shutdownGracePeriod
    }

    /// Whether the worker stops or retires: it takes no new job.
    var isLeaving: Bool { isStopping || recycling != nil }

    /// Whether the worker consumes job queues: it neither stops nor retires, or it waits for redeliveries.
    var consumes: Bool { !isLeaving || awaitsRedeliveries }

    private func noteDeadlines() {
        isStopping = stopDeadline != nil
        awaitsRedeliveries = redeliveriesAwaitedUntil != nil
    }

    /// When a deadline of the stop or the wait for redeliveries comes next.
    var nextWake: ContinuousClock.Instant? {
        guard isStopping || awaitsRedeliveries else { return nil }
        let now = ContinuousClock.now
        let future = { (instant: ContinuousClock.Instant?) in instant.flatMap { $0 > now ? $0 : nil } }
        return future(stopDeadline).earliest(future(abandonDeadline)).earliest(future(redeliveriesAwaitedUntil))
    }

    /// Whether the grace period of a stop is over: executing jobs are to be cancelled.
    var graceIsOver: Bool { stopDeadline.map { ContinuousClock.now >= $0 } ?? false }

    /// Whether a stopping worker's abandon deadline has passed.
    var abandonDeadlinePassed: Bool { abandonDeadline.map { ContinuousClock.now >= $0 } ?? false }

    // MARK: - Stopping

    /// Begins a stop: the grace period starts, or, on a second call, ends now. Returns whether it was the first.
    func beginStop() -> Bool {
        guard stopDeadline == nil else {
            stopDeadline = .now
            abandonDeadline = .now
            return false
        }
        stopDeadline = .now + grace
        abandonDeadline = .now + grace + grace
        return true
    }

    /// The grace period a stop gives, twice over: to finish, then to end once cancelled.
    var gracePeriod: Duration { grace }

    /// Whether a worker that stops is done: it waits for nothing more.
    /// - Parameters:
    ///   - awaitingBroker: Whether results, batches or acks wait to be sent or confirmed.
    ///   - holdsJobs: Whether jobs are in flight.
    ///   - abandonsJobs: Whether none of the jobs in flight ended: they are left to the broker.
    func isDone(awaitingBroker: Bool, holdsJobs: Bool, abandonsJobs: Bool) -> Bool {
        guard isStopping else { return false }
        // Past its abandon deadline a stopping worker waits for no confirm either: a broker that blocks this
        // connection (a memory or disk alarm) sends none, and what it has not confirmed is redelivered.
        if abandonDeadlinePassed, awaitingBroker { return true }
        // A reconnect while stopping: the broker's redeliveries of the jobs it holds come back here first.
        if redeliveriesAwaitedUntil != nil, !abandonDeadlinePassed { return false }
        return !awaitingBroker && (!holdsJobs || abandonDeadlinePassed && abandonsJobs)
    }

    // MARK: - Recycling

    /// Counts a job taken to run; returns whether it was the last one ``Worker/Configuration/maxJobs`` allows.
    func jobTaken() -> Bool {
        guard let maxJobs else { return false }
        jobsTaken += 1
        return jobsTaken >= maxJobs
    }

    /// Whether the worker counts the jobs it takes.
    var countsJobs: Bool { maxJobs != nil }

    /// Notes that jobs ended: the memory is compared with the limit after the turn.
    func jobsEnded() {
        if maxResidentMemory != nil { jobsEndedSinceMemoryCheck = true }
    }

    /// The resident memory and its limit, when jobs ended since the last look and the memory is past the limit
    /// of a worker that neither retires nor stops.
    func memoryPastLimit() -> (resident: Int, limit: Int)? {
        guard jobsEndedSinceMemoryCheck, let limit = maxResidentMemory else { return nil }
        jobsEndedSinceMemoryCheck = false
        guard !isLeaving, let resident = ResidentMemory.bytes(), resident > limit else { return nil }
        return (resident, limit)
    }

    /// Retires the worker for `limit`, because of `reason`, unless it retires or stops already: it takes no more
    /// jobs. The session stops its consumers when it takes the retirement (``takeRetirement()``).
    func retire(_ limit: RecyclingLimit, because reason: String, metadata: Logger.Metadata) {
        guard !isLeaving else { return }
        recycling = limit
        retirement = (reason, metadata)
    }

    /// Why the worker retired since the last call, if it did.
    func takeRetirement() -> (reason: String, metadata: Logger.Metadata)? {
        defer { retirement = nil }
        return retirement
    }

    /// Whether a retiring worker may stop: it holds no job that can run, and waits for no redelivery.
    func retiredWorkerMayStop(holdsRunnableJobs: Bool) -> Bool {
        recycling != nil && !isStopping && !awaitsRedeliveries && !holdsRunnableJobs
    }

    // MARK: - Redeliveries after a reconnect

    /// A worker that stops or retires reconnected while it awaits redeliveries of its own jobs: it consumes for
    /// them until ``redeliveryWait`` from now.
    func awaitRedeliveries() {
        redeliveriesAwaitedUntil = .now + Self.redeliveryWait
    }

    /// Holds a delivery that is none of the worker's own while it awaits its own jobs' redeliveries.
    func hold(_ delivery: Delivery) {
        heldWhileAwaitingRedeliveries.append(delivery)
    }

    /// Stops awaiting redeliveries once `stillAwaited` is false or the wait is over; returns the deliveries held
    /// meanwhile, to send back, or `nil` while it still waits.
    func stopAwaitingRedeliveries(stillAwaited: Bool) -> [Delivery]? {
        guard let until = redeliveriesAwaitedUntil, !stillAwaited || ContinuousClock.now >= until else { return nil }
        redeliveriesAwaitedUntil = nil
        defer { heldWhileAwaitingRedeliveries = [] }
        return heldWhileAwaitingRedeliveries
    }

    /// The connection was lost: the deliveries held died with it.
    func connectionLost() {
        heldWhileAwaitingRedeliveries = []
    }
}

/// The limit that made a worker recycle, as `warren status` names it.
enum RecyclingLimit: String {
    case maxJobs, maxMemory
}
