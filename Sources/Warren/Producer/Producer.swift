import AMQP
import Foundation
import Synchronization

/// Publishes jobs and cancellations, and waits for results.
///
/// Every publish is persistent and confirmed by the broker before the call returns: once `enqueue` returns, the
/// job is safe in the broker. Control messages (cancellations, pauses, status requests, supersessions) go through
/// the `warren.control` stream: right after the broker restarts, while the stream starts again, the calls that send
/// them wait for it, up to 15 seconds.
///
/// ```swift
/// let producer = try Producer(url: "amqp://guest:guest@localhost/%2F")
/// let job = try producer.enqueue(JobRequest(type: "sum", input: ["numbers": [1, 2, 3]]), watch: true)
/// let result = try producer.waitForResult(of: job.id, timeout: .seconds(30))
/// ```
///
/// It plays three roles over one connection: it enqueues jobs, sends control commands, and collects the results of
/// the jobs it watches.
///
/// Thread safety: confined, as TN2109 confines a libxml2 parser: not `Sendable`; use it from the thread that
/// created it. Create one producer per thread that publishes, or share one ``SharedProducer`` among tasks.
package final class Producer {
    private let link: ProducerConnection
    private let enqueuer: JobEnqueuer
    private let control: ControlClient
    private let results: ResultWatcher
    private let locks: UniqueLocks
    /// Tells an ``enqueue(_:watch:)-([JobRequest],_)`` under way, from any thread, to publish no more jobs (see
    /// ``Interruption``).
    public let interruption = Interruption()

    /// Connects to the broker.
    /// - Parameters:
    ///   - url: `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn.
    ///   - sequences: Where sequence numbers come from. Default: the host-wide ``SequenceStore``.
    ///   - priorityQueues: Whether job queues this producer has to create are priority queues (see
    ///     ``Worker/Configuration/priorityQueues``). Queues that exist are used as they are. Default: `false`.
    ///   - quorumQueues: Whether job queues this producer has to create are quorum queues, replicated on the nodes
    ///     of a cluster (see ``Worker/Configuration/quorumQueues``); not with `priorityQueues`. Default: `false`.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a bad URL or both kinds of queue, `broker` when the
    ///   connection fails).
    public init(
        url: String, sequences: SequenceStore = SequenceStore(), priorityQueues: Bool = false,
        quorumQueues: Bool = false
    ) throws {
        if let problem = Topology.problem(creatingPriorityQueues: priorityQueues, quorumQueues: quorumQueues) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        let sequenceFile = SequenceFile(sequences)
        let journal = JobJournal(path: (sequences.path as NSString).deletingLastPathComponent + "/journal")
        link = try ProducerConnection(url: url, metrics: ProducerMetrics())
        control = ControlClient(link: link, sequences: sequenceFile)
        results = ResultWatcher(link: link)
        locks = UniqueLocks(link: link, interruption: interruption)
        enqueuer = JobEnqueuer(
            link: link, sequences: sequenceFile, journal: journal, locks: locks, control: control, results: results,
            interruption: interruption, priorityQueues: priorityQueues, quorumQueues: quorumQueues)
    }

    /// Closes the connection. Every call after it throws ``WarrenError`` (`invalidConfiguration`, "the producer was
    /// closed"); closing again does nothing.
    public func close() {
        link.close()
    }

    /// Publishes a job and returns its descriptor once the broker confirmed it.
    /// - Parameters:
    ///   - request: The job.
    ///   - watch: Also start collecting its result, for ``waitForResult(of:timeout:progress:)``.
    /// - Throws: ``WarrenError`` when the broker refuses the job or the connection fails.
    @discardableResult
    public func enqueue(_ request: JobRequest, watch: Bool = false) throws -> OperationDescriptor {
        try enqueue([request], watch: watch)[0]
    }

    /// Publishes jobs and returns their descriptors once the broker confirmed all of them.
    ///
    /// Jobs may depend on each other and on jobs enqueued earlier with this state directory; they are published so
    /// that a job comes after those it depends on, and a bad graph is refused before anything is published. Their
    /// sequence numbers are consecutive, in the order they are published, reserved from ``SequenceStore`` at once.
    /// - Parameters:
    ///   - requests: The jobs.
    ///   - watch: Also start collecting their results, for ``waitForResult(of:timeout:progress:)``: the jobs name
    ///     this producer's reply queue in their `reply_to`, so their results and progress reports come straight
    ///     to it.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for an invalid id or job queue name (empty, too long,
    ///   with control characters, starting with `amq.`, or one of Warren's own), a job that depends on itself, an
    ///   unknown dependency or a cycle, a
    ///   ``JobRequest/replyTo`` that is empty, longer than 255 bytes, given with `watch` or names no existing queue,
    ///   a deadline that is not after the job's ``JobRequest/notBefore``, a time limit outside 1 ms to a year, a
    ///   unique job without a key, with a lifetime outside 1 second to 7 days (``JobRequest/uniqueFor``) or one that
    ///   would end before the job may start; (`system`) when the state directory's sequence file or job journal
    ///   cannot be used (created, locked, read or written); (`duplicate`) when another job
    ///   holds a unique job's lock: nothing of the call was enqueued; (`queueUnreachable`) when a job queue is on a
    ///   cluster node that is down, or the broker took a job nowhere (its queue deleted since this producer declared
    ///   it, or its node down since): those jobs were not enqueued, the others of the call were; (`broker`) when the
    ///   broker refuses or the connection fails.
    @discardableResult
    public func enqueue(_ requests: [JobRequest], watch: Bool = false) throws -> [OperationDescriptor] {
        try enqueuer.enqueue(requests, watch: watch)
    }

    /// Tells a producer to publish no more jobs: from any thread (a signal handler's), while an
    /// ``enqueue(_:watch:)-([JobRequest],_)`` is under way on the producer's own. That call publishes none of its jobs after this,
    /// waits for the broker's answers to those it handed over, and throws ``WarrenError`` `interrupted` naming the
    /// ones enqueued (``WarrenError/enqueuedJobIDs``); the others are not enqueued: their unique locks are released
    /// and they are unknown to later dependents. Later calls publish nothing: an interruption does not wear off.
    ///
    /// Thread safety: atomic.
    public final class Interruption: Sendable {
        private let requested = Atomic(false)

        /// Asks the producer to publish no more jobs.
        public func interrupt() {
            requested.store(true, ordering: .relaxed)
        }

        /// Whether ``interrupt()`` was called.
        public var isRequested: Bool {
            requested.load(ordering: .relaxed)
        }
    }

    /// Cancels jobs wherever they are: executing (their code sees `isCancelled`), waiting in a worker (they never
    /// start) or still in the broker (they are not run when delivered). Each ends with one `cancelled` result.
    /// - Parameter jobIDs: The jobs' ids.
    public func cancel(jobIDs: [String]) throws {
        try control.cancel(jobIDs: jobIDs)
    }

    /// Cancels every job of `key` whose sequence is below `sequence`.
    public func supersede(key: String, before sequence: UInt64) throws {
        try control.supersede(key: key, before: sequence)
    }

    /// Cancels every job enqueued before this call, of `queue` or of every queue: executing, waiting in workers
    /// and still in the broker. Each ends with one `cancelled` result.
    public func cancelAll(queue: String? = nil) throws {
        try control.cancelAll(queue: queue)
    }

    /// Pauses taking jobs, on every worker or on `worker`, from every queue or from `queue`. Executing jobs go on;
    /// jobs waiting in the paused workers go back to the broker. Workers that start later start paused too.
    public func pause(worker: String? = nil, queue: String? = nil) throws {
        try control.pause(worker: worker, queue: queue)
    }

    /// Sets the width of local queue `localQueue` to `width` on every live worker that has it, or on `worker` alone,
    /// as setting an `OperationQueue`'s `maxConcurrentOperationCount` does: wider, waiting jobs start at once;
    /// narrower, executing ones go on. A worker whose prefetch follows its widths (no `--prefetch`) takes more or
    /// fewer jobs accordingly. Until the worker restarts; workers that start later keep their own widths.
    /// - Throws: ``WarrenError``: `invalidConfiguration` for a width outside ``LocalQueue/widths``; `broker` when
    ///   the connection fails.
    public func resize(localQueue: String, width: Int, worker: String? = nil) throws {
        try control.resize(localQueue: localQueue, width: width, worker: worker)
    }

    /// Resumes what ``pause(worker:queue:)`` paused.
    public func resume(worker: String? = nil, queue: String? = nil) throws {
        try control.resume(worker: worker, queue: queue)
    }

    /// Asks every live worker for its status and returns the answers that arrive within `timeout`, by worker id
    /// (then host and process: workers that share an id by mistake answer each).
    /// - Parameters:
    ///   - timeout: How long to wait for answers.
    ///   - jobs: With a number, each worker also lists up to that many of the jobs it holds
    ///     (``WorkerStatus/jobs``); workers of versions that predate the listing leave it out.
    ///   - awaitedWorker: With a worker id, returns as soon as that worker answered, with the answers that came so
    ///     far.
    /// - Throws: ``WarrenError``: `timeout` when the broker did not even take the request within `timeout`, or 2 s
    ///   for a shorter one (it blocks publishers under a memory or disk alarm: the connection is then of no more
    ///   use); `broker` when it refused it or the connection fails.
    public func workerStatuses(
        timeout: Duration = .seconds(2), jobs: Int? = nil, awaiting awaitedWorker: String? = nil
    ) throws -> [WorkerStatus] {
        try workerStatuses(timeout: timeout, jobs: jobs, awaitingOne: awaitedWorker.map { id in { $0.workerID == id } })
    }

    /// ``workerStatuses(timeout:jobs:awaiting:)``, returning as soon as an answer `awaited` accepts came.
    package func workerStatuses(
        timeout: Duration, jobs: Int? = nil, awaitingOne awaited: ((WorkerStatus) -> Bool)?
    ) throws -> [WorkerStatus] {
        try control.workerStatuses(timeout: timeout, jobs: jobs, awaitingOne: awaited)
    }

    /// What the broker holds for job queue `queue`: jobs waiting, jobs in its delay queues, consumers; `nil` if
    /// there is no such queue.
    /// - Throws: ``WarrenError``: `queueUnreachable` when the queue, or one of its delay queues, lives on a cluster
    ///   node that is down; `broker` when the connection fails.
    public func jobQueueStatus(_ queue: String) throws -> JobQueueStatus? {
        try control.jobQueueStatus(queue)
    }

    /// Whether the broker delivers the jobs of `queue` highest priority first: whether it is a priority queue as
    /// `--priority-queues` creates one. On a first-in-first-out queue, a job's priority orders it only among the jobs
    /// waiting inside a worker. `false` also when there is no such queue.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func deliversByPriority(_ queue: String) throws -> Bool {
        try control.deliversByPriority(queue)
    }

    /// Whether job queue `queue` is known to be a classic queue: declared as Warren declares one, or with no
    /// arguments. On a cluster, it lives on one node, whatever this producer's `quorumQueues` says: that applies
    /// only to queues it creates. `false` also when it does not exist.
    /// - Throws: ``WarrenError`` (`broker`) when the connection fails.
    public func isClassicQueue(_ queue: String) throws -> Bool {
        try control.isClassicQueue(queue)
    }

    /// How many messages the dead-letter queue holds (`warren dead list` shows them), or `nil` when there is no
    /// such queue: no worker has connected to this virtual host yet, or it was deleted (each worker makes it again
    /// as it connects; meanwhile jobs a worker dead-letters are held, and the broker's own dead letters dropped).
    /// - Throws: ``WarrenError``: `queueUnreachable` when the queue lives on a cluster node that is down; `broker`
    ///   when the connection fails.
    public func deadLetterCount() throws -> Int? {
        try control.deadLetterCount()
    }

    /// Frees the unique lock of `key` by hand, whoever holds it: its token is taken out of the lock's queue, so the
    /// next unique job of the key is enqueued at once. The holder, if it still waits or runs, is not cancelled; when
    /// it ends it finds its token gone and releases nothing.
    /// - Returns: The id of the job that held the lock, or `nil` when the lock was free.
    /// - Throws: ``WarrenError`` (`invalidConfiguration` for a key that cannot be a unique job's, `queueUnreachable`
    ///   when the lock's queue is on a cluster node that is down, `broker` when the connection fails).
    @discardableResult
    public func unlock(key: String) throws -> String? {
        try locks.unlock(key: key)
    }

    /// Waits for the result of a job enqueued with `watch: true`.
    /// - Parameters:
    ///   - jobID: The job's id.
    ///   - timeout: How long to wait.
    ///   - progress: Called with each progress report of the job while it runs.
    /// - Throws: ``WarrenError`` (`timeout`) when no result arrived in time; (`invalidConfiguration`) at once when
    ///   this producer did not enqueue the job with `watch: true`, or handed out its result already.
    public func waitForResult(
        of jobID: String, timeout: Duration, progress: (ProgressMessage) -> Void = { _ in }
    ) throws -> JobResult {
        try waitForFirstResult(of: [jobID], timeout: timeout, progress: progress)
    }

    /// Waits for the first result to arrive of jobs enqueued with `watch: true`, whichever it is: call it again with
    /// the others to take their results as they come.
    /// - Parameters:
    ///   - jobIDs: The jobs' ids.
    ///   - timeout: How long to wait.
    ///   - progress: Called with each progress report of those jobs while they run.
    /// - Throws: ``WarrenError`` (`timeout`, naming the jobs) when none arrived in time; (`invalidConfiguration`) at
    ///   once when none of them is a job this producer enqueued with `watch: true` and whose result it has not
    ///   handed out.
    public func waitForFirstResult(
        of jobIDs: Set<String>, timeout: Duration, progress: (ProgressMessage) -> Void = { _ in }
    ) throws -> JobResult {
        try results.waitForFirstResult(of: jobIDs, timeout: timeout, progress: progress)
    }

    // MARK: - For SharedProducer and the scheduler

    /// Keeps the results and progress reports of watched jobs that the broker sent, for ``takeResult(of:)``:
    /// waits first, up to `timeout` or until `wakeUp` is signalled, if nothing came yet. For ``SharedProducer``,
    /// whose thread must also wake for calls.
    func readReplies(waitingUpTo timeout: Duration, wakeUp: WakeUpSignal) throws {
        try results.readReplies(waitingUpTo: timeout, wakeUp: wakeUp)
    }

    /// The result of watched job `jobID`, if it arrived; it is then forgotten.
    func takeResult(of jobID: String) -> JobResult? {
        results.takeResult(of: jobID)
    }

    /// Whether this producer expects the result of `jobID` or holds it: it enqueued the job with `watch: true`,
    /// and nobody took the result yet.
    func isWatching(_ jobID: String) -> Bool {
        results.isWatching(jobID)
    }

    /// The jobs this producer enqueued with `watch: true` whose results it has not handed out.
    var watchedJobIDs: Set<String> { results.watchedJobIDs }
}
