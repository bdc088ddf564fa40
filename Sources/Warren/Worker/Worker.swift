import AMQP
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// A long-running process's worker: consumes operation descriptors from broker queues into local operation queues,
/// runs them, publishes each result and acknowledges the job only once the broker confirmed the result.
///
/// ```swift
/// var registry = OperationRegistry()
/// registry.register(Resize.self) { input, job in try resize(input, job) }
/// let worker = try Worker(configuration: .init(url: "amqp://guest:guest@localhost/%2F"), registry: registry)
/// try await worker.run()   // until worker.stop(), or the service group's graceful shutdown
/// ```
///
/// A worker is a `Service`: run it in a `ServiceGroup`, whose graceful shutdown stops it as ``stop()`` does.
///
/// Thread safety: immutable, but for the mailbox, the health and the recycling handover, which are locked, and
/// ``stoppedToRecycle`` and whether a stop was asked for, atomic. The broker connection lives on the thread that runs the worker and nowhere else.
public final class Worker: Service, Sendable {
    /// How a worker connects and behaves.
    public struct Configuration: Sendable {
        /// Broker URL, `amqp://user:password@host:port/vhost`; several, separated by commas, are tried in turn
        /// (the nodes of a cluster), at start and whenever the connection is lost.
        public var url: String
        /// Broker queues to consume. Default: `warren.default`.
        public var queues: [String] = [Topology.defaultQueue]
        /// Local queue names and widths. Default: `default`, as wide as the machine has cores.
        public var localQueues: [String: Int] = [
            OperationRegistry.defaultLocalQueue: ProcessInfo.processInfo.activeProcessorCount
        ]
        /// Whether broker queues this worker has to create are priority queues, whose broker delivers waiting jobs
        /// highest priority first, for about a third more broker work per job. Queues that exist are used as they
        /// are. Default: `false`, first in, first out (priorities still order the jobs a worker holds).
        public var priorityQueues = false
        /// Whether broker queues this worker has to create are quorum queues: replicated on the nodes of a
        /// cluster, so that jobs outlive the loss of a node; first in, first out, and not with ``priorityQueues``.
        /// Queues that exist are used as they are. Default: `false`.
        public var quorumQueues = false
        /// Most deliveries held unacknowledged at once. Default: `nil`, the sum of the local queue widths.
        public var prefetch: Int?
        /// Name in results and logs. Default: `host-pid`.
        public var workerID: String = "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
        /// Larger job messages are dead-lettered unread. Default: 1 MiB.
        public var maxMessageBytes: Int = 1 << 20
        /// Job messages whose JSON nests deeper are dead-lettered unread (the descriptor object is level 1). From 2
        /// to 500. Default: 64.
        public var maxNestingDepth: Int = 64
        /// Job messages with more dependencies are dead-lettered. Default: 100.
        public var maxDependencies: Int = 100
        /// How long a stopping worker lets executing operations finish before it cancels them, and then how long it
        /// waits for them to end before it leaves the ones that ignore their cancellation to the broker, which
        /// requeues them. From 0 to a year. Default: 30 s.
        public var shutdownGracePeriod: Duration = .seconds(30)
        /// Most jobs held waiting for their dependencies; more are parked through the broker. Default: 1,000.
        public var maxParkedJobs = 1_000
        /// How many worker processes a job may have been executing in when they died (killed, crashed, out of
        /// memory) before it is dead-lettered (`crashedWorker`) instead of run again. A job that was executing in
        /// one that died runs alone, so that the deaths it is counted for are its own. Default: 3.
        public var maxCrashes = 3
        /// Where the worker keeps the journal of the jobs it executes, from which the next worker started with the
        /// same directory learns what was executing when this one died (see ``maxCrashes``). `nil`: no journal,
        /// and this worker's death is not reported. Default: `workers` in the state directory
        /// (`$WARREN_STATE_DIR`, else `$XDG_STATE_HOME/warren`, else `~/.local/state/warren`).
        public var crashJournalDirectory: String? = StateDirectory.path + "/workers"
        /// Rate limits by operation type: jobs of such a type wait in the worker until their turn, then go to their
        /// local queue. The limit is this worker's own (ten workers with `10/s` start up to 100 such jobs a second).
        /// Default: none.
        public var rateLimits: [String: RateLimit] = [:]
        /// Rate limits by operation type that every worker of the broker shares: a job of such
        /// a type waits in the worker until the broker grants it a turn, then goes to its local queue. At most the
        /// limit's count of such jobs start per period across all workers with the same limit, evenly spaced up to
        /// twenty a second, in windows of 100 ms or more above. Not with ``rateLimits`` for the same type. Default: none.
        public var fleetRateLimits: [String: RateLimit] = [:]
        /// Time limits by operation type, Celery's `time_limit`: a job of such a type whose code runs longer is
        /// cancelled, and ends `failed` with code `timeLimit` (not retried; dead-lettered like any failure) however
        /// its code returns. Cancellation is cooperative: code that never checks ``JobContext/isCancelled`` runs on,
        /// holding its thread, until it returns. From 1 ms to a year. Default: none.
        public var timeLimits: [String: Duration] = [:]
        /// After taking this many jobs, take no more: run them to their end, then stop to be replaced by a fresh
        /// process (Celery's `max_tasks_per_child`), so that memory a job's code leaks or fragments is given back.
        /// ``run()`` then returns with ``stoppedToRecycle`` set; `warren worker` starts afresh in the same process.
        /// A job counts once it goes to its local queue (one waiting for its dependencies, once they ended). At
        /// least 1. Default: none.
        public var maxJobs: Int?
        /// Past this resident memory, in bytes, read after jobs end, take no more jobs and stop to be replaced by a
        /// fresh process (Celery's `max_memory_per_child`): jobs not started go back to the broker, executing ones
        /// run to their end. ``run()`` then returns with ``stoppedToRecycle`` set. At least 1 MiB. Default: none.
        public var maxResidentMemory: Int?
        /// The longest wait between reconnection attempts; waits double from 100 ms up to it. From 100 ms to an hour.
        /// Default: 30 s.
        public var maxReconnectDelay: Duration = .seconds(30)
        /// How long to keep trying, at start, while no broker address accepts a connection (nothing listens yet: a
        /// broker still starting beside the worker), before ``run()`` throws; Celery's
        /// `broker_connection_retry_on_startup`. A refused password or an untrusted certificate throws at once.
        /// Zero: try once. Default: 60 s.
        public var brokerWaitAtStart: Duration = .seconds(60)
        /// Where the worker logs. Default: a logger labelled `warren.worker`.
        public var logger = Logger(label: "warren.worker")
        /// What the worker this one replaces handed over when it stopped to recycle (``Worker/handover``); `nil` for
        /// a worker that replaces none. A worker that takes over keeps trying to reach its broker whatever the first
        /// failure, as after a lost connection, and keeps the rate limits' pace. Default: `nil`.
        public var takingOver: Handover?

        public init(url: String) {
            self.url = url
        }

        /// The prefetch in force: ``prefetch``, or the total width of the local queues.
        public var effectivePrefetch: Int {
            prefetch ?? localQueues.values.reduce(0, +)
        }
    }

    public let configuration: Configuration
    let registry: OperationRegistry
    /// The broker addresses, tried in turn.
    let brokers: BrokerAddresses
    let mailbox = Mailbox<WorkerMessage>()
    /// How the broker thread is doing: whether it has its broker, and whether it still turns (a health endpoint's
    /// view; `warren worker --metrics-port` serves it at `/livez` and `/readyz`).
    public let health = BrokerThreadHealth()
    private let recycles = Atomic(false)
    /// Whether ``stop()`` was called (or the task running ``run()`` cancelled) since the worker last ran.
    private let stopAsked = Atomic(false)
    /// Whether ``runOnCurrentThread()`` runs: one run at a time.
    private let running = Atomic(false)
    /// What this worker hands over when it stops to recycle.
    private let handedOver = Mutex(Handover())

    /// What a worker that stopped to recycle hands to the one that replaces it (``Configuration/takingOver``).
    ///
    /// Thread safety: immutable.
    public struct Handover: Codable, Sendable, Equatable {
        /// Seconds from the handover until the next job of each rate-limited type may start.
        public var rateLimitTurns: [String: Double]

        public init(rateLimitTurns: [String: Double] = [:]) {
            self.rateLimitTurns = rateLimitTurns
        }
    }

    /// What this worker hands to the one that replaces it, once ``run()`` returned with ``stoppedToRecycle`` set.
    public internal(set) var handover: Handover {
        get { handedOver.withLock { $0 } }
        set { handedOver.withLock { $0 = newValue } }
    }

    /// Whether the worker stopped to be replaced by a fresh process (``Configuration/maxJobs``,
    /// ``Configuration/maxResidentMemory``) rather than because ``stop()`` was called: once ``run()`` returned, the
    /// caller should start afresh, as `warren worker` does, or leave it to its own supervisor.
    public internal(set) var stoppedToRecycle: Bool {
        get { recycles.load(ordering: .relaxed) }
        set { recycles.store(newValue, ordering: .relaxed) }
    }

    /// Checks the configuration against the registry.
    /// - Throws: ``WarrenError`` (`invalidConfiguration`) for a bad URL, an empty queue list or a queue name that
    ///   cannot be a job queue's, a width outside ``LocalQueue/widths``, a
    ///   ``Configuration/maxCrashes`` below 1, a prefetch
    ///   outside 1...65535, an operation type registered on a local queue the configuration lacks, a rate limit
    ///   or time limit for a type the registry lacks, or a time limit outside 1 ms to a year.
    public init(configuration: Configuration, registry: OperationRegistry) throws {
        self.configuration = configuration
        self.registry = registry
        brokers = try BrokerAddresses(configuration.url, connectionName: "warren worker \(configuration.workerID)")
        guard !configuration.queues.isEmpty else {
            throw WarrenError(.invalidConfiguration, "a worker needs at least one queue to consume")
        }
        if let problem = configuration.queues.lazy.compactMap(Topology.problem(withJobQueue:)).first {
            throw WarrenError(.invalidConfiguration, problem)
        }
        // A queue listed twice would get two consumers, each with the whole prefetch.
        let queues = configuration.queues
        if let queue = queues.first(where: { name in queues.filter { $0 == name }.count > 1 }) {
            throw WarrenError(.invalidConfiguration, "queue '\(queue)' is given twice")
        }
        if configuration.workerID.isEmpty || configuration.workerID.utf8.count > 200
            || configuration.workerID.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        {
            throw WarrenError(
                .invalidConfiguration, "a worker id must be 1 to 200 bytes without control characters")
        }
        if let problem = Topology.problem(
            creatingPriorityQueues: configuration.priorityQueues, quorumQueues: configuration.quorumQueues)
        {
            throw WarrenError(.invalidConfiguration, problem)
        }
        for (name, width) in configuration.localQueues.sorted(by: { $0.key < $1.key })
        where !LocalQueue.widths.contains(width) {
            throw WarrenError(
                .invalidConfiguration,
                "local queue '\(name)' has width \(width); it must be from \(LocalQueue.widths.lowerBound) to "
                    + "\(LocalQueue.widths.upperBound), as warren resize allows")
        }
        guard JobDecoder.maxNestingDepths.contains(configuration.maxNestingDepth) else {
            throw WarrenError(
                .invalidConfiguration,
                "nesting depth \(configuration.maxNestingDepth) is outside \(JobDecoder.maxNestingDepths.lowerBound)..."
                    + "\(JobDecoder.maxNestingDepths.upperBound): a job's result nests its input three levels deeper, "
                    + "and JSON parsers give up past 512")
        }
        guard configuration.maxMessageBytes >= 1024,
            configuration.maxDependencies >= 0, configuration.maxParkedJobs >= 0, configuration.maxCrashes >= 1
        else {
            throw WarrenError(
                .invalidConfiguration,
                "limits must be at least: message bytes 1024, dependencies 0, parked jobs 0, crashes 1")
        }
        guard (1...65_535).contains(configuration.effectivePrefetch) else {
            throw WarrenError(
                .invalidConfiguration,
                "prefetch \(configuration.effectivePrefetch)"
                    + (configuration.prefetch == nil
                        ? " (the total width of the local queues, without --prefetch)" : "")
                    + " is outside 1...65535")
        }
        let limited = [
            ("rate limit", Array(configuration.rateLimits.keys)), ("time limit", Array(configuration.timeLimits.keys)),
            ("fleet-wide rate limit", Array(configuration.fleetRateLimits.keys)),
        ]
        for (limit, types) in limited {
            for type in types.sorted() where registry[type] == nil {
                throw WarrenError(
                    .invalidConfiguration,
                    "\(limit) for operation type '\(type)', which this worker does not run (it runs: "
                        + "\(registry.types.joined(separator: ", ")))")
            }
        }
        for (type, limit) in configuration.fleetRateLimits.sorted(by: { $0.key < $1.key }) {
            if configuration.rateLimits[type] != nil {
                throw WarrenError(
                    .invalidConfiguration,
                    "operation type '\(type)' has both a rate limit and a fleet-wide one; give it one or the other")
            }
            if let problem = FleetRateLimit.problem(withType: type, limit: limit) {
                throw WarrenError(.invalidConfiguration, problem)
            }
        }
        if !(.zero ... .seconds(31_536_000)).contains(configuration.shutdownGracePeriod) {
            throw WarrenError(
                .invalidConfiguration,
                "shutdown grace period \(configuration.shutdownGracePeriod) is outside 0 to a year")
        }
        if let problem = BrokerAddresses.problem(maxReconnectDelay: configuration.maxReconnectDelay) {
            throw WarrenError(.invalidConfiguration, problem)
        }
        if configuration.brokerWaitAtStart < .zero {
            throw WarrenError(
                .invalidConfiguration, "broker wait at start \(configuration.brokerWaitAtStart) must not be negative")
        }
        if let maxJobs = configuration.maxJobs, maxJobs < 1 {
            throw WarrenError(.invalidConfiguration, "max jobs \(maxJobs) must be at least 1")
        }
        if configuration.maxResidentMemory != nil, !ResidentMemory.isSupported {
            throw WarrenError(
                .invalidConfiguration, "max resident memory needs /proc/self/statm, which only Linux has")
        }
        if let memory = configuration.maxResidentMemory, memory < 1 << 20 {
            throw WarrenError(.invalidConfiguration, "max resident memory \(memory) bytes must be at least 1 MiB")
        }
        for (type, limit) in configuration.timeLimits where !Self.timeLimitRange.contains(limit) {
            throw WarrenError(
                .invalidConfiguration, "time limit \(limit) for operation type '\(type)' is outside 1 ms to a year")
        }
        for type in registry.types {
            let local = registry[type]!.localQueue
            guard configuration.localQueues[local] != nil else {
                throw WarrenError(
                    .invalidConfiguration,
                    "operation type '\(type)' runs on local queue '\(local)', which this worker does not have "
                        + "(it has: \(configuration.localQueues.keys.sorted().joined(separator: ", ")))")
            }
        }
    }

    /// The time limits a worker takes: 1 ms to a year.
    static let timeLimitRange = Duration.milliseconds(1)...Duration.seconds(31_536_000)

    /// Connects and works until ``stop()``; the calling thread becomes the broker thread.
    ///
    /// A lost connection is reopened with backoff, trying each broker address in turn, for as long as it takes.
    /// A worker runs again once it returned. A ``stop()`` that comes while it does not run is for the next run, which
    /// then returns at once: a stop that comes before its run started is not lost.
    /// - Throws: ``WarrenError``: `broker` when no broker address accepts the first connection (at once for a
    ///   refused password or an untrusted certificate, after ``Configuration/brokerWaitAtStart`` when none listens);
    ///   `invalidConfiguration` when this worker runs already (one run at a time: create another `Worker` to run
    ///   two in one process).
    public func runOnCurrentThread() throws {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw WarrenError(
                .invalidConfiguration, "this worker runs already: one run at a time (create another Worker to run two)")
        }
        defer {
            stopAsked.store(false, ordering: .relaxed)
            running.store(false, ordering: .releasing)
        }
        // What an earlier run left in the mailbox is not for this one: its abandoned jobs' ends, a stop that came
        // after it ended (a stop since then is for this run, which it ends at once).
        _ = mailbox.drain()
        if stopAsked.load(ordering: .relaxed) { return }
        let session: WorkerSession
        do {
            session = try WorkerSession(worker: self)
        } catch is WorkerSession.StoppedBeforeConnecting {
            return
        }
        try session.run()
    }

    /// Connects and works until ``stop()``, on a broker thread of its own.
    ///
    /// In a `ServiceGroup`, the group's graceful shutdown stops the worker as ``stop()`` does, and `run()` returns
    /// once its jobs drained. Cancelling the task that awaits it stops it gracefully too, unless a stop came already:
    /// the cancellation then does not count as a second ``stop()``.
    /// - Throws: ``WarrenError`` when no broker address accepts the first connection, or when the worker runs
    ///   already (see ``runOnCurrentThread()``).
    public func run() async throws {
        try await withGracefulShutdownHandler {
            try await BrokerThread.run(named: "warren.broker", { [self] in try runOnCurrentThread() }) { [self] in
                stopOnce()
            }
        } onGracefulShutdown: { [self] in
            stopOnce()
        }
    }

    /// Stops as ``stop()`` does, unless a stop was asked for already.
    private func stopOnce() {
        if stopAsked.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            stoppedToRecycle = false
            mailbox.post(.stop)
        }
    }

    /// Stops gracefully: no new jobs; executing ones get ``Configuration/shutdownGracePeriod`` to finish, then are
    /// cancelled and requeued; jobs that never started are requeued. Jobs that still run a grace period after their
    /// cancellation are left to the broker, which requeues them when the connection closes, and ``run()`` returns
    /// while their operations may still run. A second call cancels at once and stops waiting. Called while the worker
    /// does not run, it stops the next run as soon as it starts.
    /// Safe from any thread, a signal handler's queue included.
    public func stop() {
        stopAsked.store(true, ordering: .relaxed)
        stoppedToRecycle = false
        mailbox.post(.stop)
    }
}

/// What reaches the broker thread from elsewhere.
enum WorkerMessage: Sendable {
    case finished(FinishedJob)
    case progress(jobID: String, fraction: Double, message: String?)
    /// The code of a job with a time limit started.
    case started(jobID: String)
    case stop

    var isStop: Bool {
        if case .stop = self { true } else { false }
    }
}
