import AMQP
import Foundation
import Logging

/// The broker side of a worker: owns the connection and runs the loop that consumes, publishes, confirms and acks.
///
/// Thread safety: confined. Created and run on the broker thread; other threads reach it only through the
/// worker's ``Mailbox``.
final class WorkerSession {
    static let jobsChannel: UInt16 = 1
    static let publishChannel: UInt16 = 2
    static let controlChannel: UInt16 = 3
    static let resultsChannel: UInt16 = 4
    /// The confirm channel that appends result batches to the `warren.results` stream (``SentBatches``).
    static let storeChannel: UInt16 = 5
    /// The channel whose consumers read single results of the `warren.results` stream (``ResultFetches``).
    static let fetchChannel: UInt16 = 6
    /// The channel that releases unique jobs' locks (``WorkerSession+UniqueLocks``), opened when first needed.
    static let lockChannel: UInt16 = 7
    /// The channel that consumes the copies of dead letters (``WorkerSession+BrokerDeadLetters``).
    static let deadWatchChannel: UInt16 = 9
    /// The channel of status replies (``answerStatus(replyTo:listingJobs:)``).
    static let statusChannel: UInt16 = 10

    let worker: Worker
    let localQueues: [String: LocalQueue]
    let metrics: WorkerMetrics
    let jobDecoder: JobDecoder
    var logger: Logger
    /// The live connection; replaced after a reconnect.
    var connection: AMQPConnection
    /// Counts connections: a delivery tag is valid only on the connection of its generation.
    var generation = 1
    /// When the live connection was made, and the last wait before it: a connection the broker closes again soon
    /// after, refusing something (``WorkerSession+Reconnection``), continues the backoff rather than starting it over.
    var connectedAt = ContinuousClock.now
    var reconnectDelay = WorkerSession.firstReconnectDelay
    /// Whether the broker closed the last connection lost, or a channel of it, for something it refused (an
    /// `ACCESS_REFUSED`, say), rather than going away (a shutdown, a broken socket, missed heartbeats).
    var lostToRefusal = false
    var inFlight: [String: InFlightJob] = [:]
    /// Whether a job with a deadline may be in flight. The deadline checks pass over every job in flight, each turn
    /// of the loop: only while this is set.
    var mayHoldDeadlines = false
    /// When a job's time limit may pass next, while a job of a time-limited type is in flight
    /// (``WorkerSession+TimeLimits``).
    var timeLimitCheckAt: ContinuousClock.Instant?
    /// Settlements waiting for the broker to confirm a publish.
    var unconfirmed = PendingConfirms()
    /// Results published and not yet appended to the results stream, to append together when due.
    var storedResults = StoredResults()
    /// Result batches appended to the results stream and not yet confirmed.
    var sentBatches = SentBatches()
    /// Job deliveries not settled yet, and acks not sent yet.
    var acks = AckBatch()
    /// Operations to add to their local queues at the end of this loop iteration, all at once, by queue name.
    var operationsToQueue: [String: [JobOperation]] = [:]
    var publishCount: UInt64 = 0
    var cancellations = CancellationRegistry()
    /// This worker's crash journal (``WorkerSession+Crashes``), and how it names the broker.
    let journal: CrashJournal?
    let journalBroker: String
    /// Journals of dead workers, until their `crashed` reports are read back from the control stream; then for a
    /// while longer, with when that was.
    var orphans: [CrashJournal.Orphan] = []
    var reportedJournals: [(CrashJournal.Orphan, ContinuousClock.Instant)] = []
    /// Files of the journal directory that are no journals of this broker's workers; when it was last looked at.
    var ignoredJournalFiles: Set<String> = []
    var lastJournalLook: ContinuousClock.Instant?
    /// The jobs other live processes' journals held at that look.
    var jobsInOtherJournals: Set<String> = []
    /// Jobs that were executing when workers died, from the control stream.
    var crashTally = CrashTally()
    /// Jobs that run alone, waiting for the worker to be idle; and whether one runs.
    var aloneJobs: [InFlightJob] = []
    var aloneJobRuns = false
    /// Results of jobs that finished after their delivery died with a connection, kept for the redelivery.
    var orphanResults = OrphanResults()
    /// Whether ``lockChannel`` is open.
    var lockChannelOpen = false
    /// Whether ``statusChannel`` is open: it is from the start of each connection, and again after the broker closed
    /// it for a reply larger than it takes.
    var statusChannelOpen = false
    /// The reply queue and job limit of the last status request answered on this connection.
    var lastStatusRequest: (replyTo: String, jobs: Int?)?
    /// Job queue consumed, by consumer tag.
    var jobConsumers: [String: String] = [:]
    /// Job queue of each consumer cancelled on this connection, by consumer tag: its deliveries may still be held.
    var retiredConsumers: [String: String] = [:]
    /// What to do for jobs held while a queue is out of reach, oldest first, when to try again, and why they are
    /// held (``hold(_:_:_:)``).
    var heldJobs: [HeldJob] = []
    var heldJobsRetryAt: ContinuousClock.Instant?
    var heldReasons: Set<String> = []
    /// The largest message body the broker takes: RabbitMQ's default `max_message_size` until the broker refuses a
    /// larger one and tells its own (``learnBrokerMaxMessageSize(from:)``).
    var brokerMaxMessageBytes = 128 << 20
    /// Jobs to send back to their queues once due (``requeueLater(_:)``), oldest first.
    var laterRequeues: [(deliveryTag: UInt64, due: ContinuousClock.Instant)] = []
    /// The kind of each delay queue at its last use: whether it is a quorum queue.
    var delayQueueKinds: [String: Bool] = [:]
    /// Job queues found classic under `--quorum-queues`, and said so (once each).
    var classicQueuesReported: Set<String> = []
    /// Whether the dead-letter queue was found reachable this turn (`nil`: not looked for yet).
    var deadLettersReachable: Bool?
    /// The consumer of ``Topology/deadWatchQueue`` on this connection, while there is one.
    var deadWatchConsumer: String?
    /// Job queues out of reach (their cluster node is down, or the broker cancelled their consumer), with when to
    /// look for each again (``retryUnreachableQueues()``).
    var unreachableQueues: [String: ContinuousClock.Instant] = [:]
    /// Unique locks a job that ended could not release, their queue on a cluster node that was down, with when
    /// that was; and when to try them again (``retryUnreleasedLocks()``).
    var unreleasedLocks: [(lock: HeldLock, since: ContinuousClock.Instant)] = []
    var unreleasedLocksRetryAt: ContinuousClock.Instant?
    /// Whether the jobs channel is set up, so consumers can start (false during the control replay).
    var isConsuming = false
    /// When ``sampleJobsWaitingInWorker()`` last reported, and when it is due again after a turn it skipped.
    var jobsWaitingSampledAt: ContinuousClock.Instant?
    var jobsWaitingResampleAt: ContinuousClock.Instant?
    /// Where in the control stream this worker's start-up marker is: `resize` messages after it are for this
    /// worker's lifetime, those before it for workers before it.
    var controlStartOffset: UInt64?
    /// Whether the control stream is being read from its start, at start-up or after a reconnect: the pauses and
    /// resumes read then are logged once, as where they leave the worker, not one by one.
    var readingControlBacklog = false
    /// Broker queues this worker does not take jobs from (`warren pause`).
    var pausedQueues: Set<String> = []
    /// Jobs waiting for dependencies, with the ids whose results they still wait for.
    var parked: [String: Set<String>] = [:]
    /// When to look next for jobs parked too long (``sendRoundLongParkedJobs()``).
    var longParkedCheckAt = ContinuousClock.now
    /// The operations of jobs that jobs parked here wait for, by job id, whose finish is held until their end is
    /// handled (``JobOperation/holdFinish()``).
    var heldFinishes: [String: JobOperation] = [:]
    /// The jobs whose end this turn handled, while finishes were held: released once the turn queued what it took.
    var endedThisTurn: [String] = []
    /// Jobs known to have ended, for dependencies.
    var finishedJobs = FinishedJobs()
    /// Results of dependencies being read from the results stream.
    var resultFetches = ResultFetches()
    /// Whether this connection reads the `warren.results` stream (for dependencies), or is about to.
    var readsResultsStream = false
    /// The consumer that reads the stream's last chunk before the reading starts, until it did.
    var resultsStreamProbe: String?
    /// Why the broker blocks this connection, while it does (`connection.blocked`).
    var blockedReason: String?
    /// Job queues found to be streams, which the worker does not consume (``refusesStream(_:)``).
    var streamQueues: Set<String> = []
    /// Job queues whose deliveries carried a stream offset but that could not be told to be streams: warned of once.
    var streamSuspects: Set<String> = []
    /// Whether the reading of the stream started (else the probe starts it).
    var readsStoredResults = false
    /// The first reading of the stream, up to where it ended when it started.
    var resultsCatchUp = ResultsCatchUp()
    /// Whether the prefetch limits the job consumer alone (`basic.qos` with global=false) rather than the jobs
    /// channel. Per consumer, the broker's queue counts the consumer's deliveries itself; channel-wide, it asks the
    /// channel's limiter process before each delivery, a round trip between two broker processes per job. A
    /// connection starts so when it consumes exactly one queue with no job parked, where both limits mean the
    /// same; it goes channel-wide for good at the first change (``useChannelWidePrefetch()``).
    var prefetchPerConsumer = false
    /// Whether a job queue of this connection may refuse a channel-wide prefetch (a quorum queue): then each job
    /// queue's consumer keeps a limit of its own, which changes by starting the consumer again
    /// (``renewConsumersIfDue()``).
    var renewsConsumers = false
    /// The prefetch limit of each job queue's consumer, while ``renewsConsumers``; none for a queue without one.
    var consumerLimits: [String: Int] = [:]
    /// Whether a consumer's limit may fall short of what its queue's budget allows: checked when the turn ends.
    var consumerLimitsStale = false
    /// The prefetch the worker's configuration asks for (``Worker/Configuration/effectivePrefetch``); when it follows
    /// the local queues' widths, it follows them as `warren resize` changes them.
    var basePrefetch: Int
    /// The prefetch in force on the jobs channel.
    var currentPrefetch: UInt16 = 0 {
        didSet {
            metrics.prefetch(Int(currentPrefetch))
            // Acks are held back until a quarter of the window waits (see AckBatch); results to store, until the
            // whole window's have come or no job is left to add its own (see storeResults).
            acks.hold.threshold = max(1, Int(currentPrefetch) / 4)
            storedResults.hold.threshold = Int(currentPrefetch)
        }
    }
    /// The jobs of rate-limited operation types waiting for their turn, by type (``WorkerSession+RateLimits``), and
    /// where the operations of those types space their starts.
    var throttles: [String: Throttle]
    let startGates: [String: StartGate]
    /// The jobs of types under a fleet-wide rate limit waiting for a turn, by type, and the jobs whose turn was
    /// asked for, by the number of the question on ``rateChannel`` (``WorkerSession+FleetRateLimits``).
    var fleetThrottles: [String: FleetThrottle]
    var turnsAsked: [UInt64: InFlightJob] = [:]
    /// Jobs whose turn the broker returned (no window took it), until its confirm comes.
    var returnedTurns: Set<String> = []
    var ratePublishCount: UInt64 = 0
    /// Jobs taken to run, counted only with ``Worker/Configuration/maxJobs``; why the worker takes no more and runs
    /// what it holds before it stops, to start afresh (`maxJobs`, `maxMemory`; ``WorkerSession+Recycling``).
    var jobsTaken = 0
    var recycling: RecyclingLimit?
    /// While a retiring worker consumes again after a reconnect, for the redeliveries of its own jobs: until when it
    /// waits for them, and the other deliveries it holds meanwhile, to send back once it stops waiting.
    var redeliveriesAwaitedUntil: ContinuousClock.Instant?
    var heldWhileAwaitingRedeliveries: [Delivery] = []
    /// Whether jobs ended since the resident memory was last compared with ``Worker/Configuration/maxResidentMemory``.
    var jobsEndedSinceMemoryCheck = false
    /// Jobs ended, by result status.
    var totals: [String: Int] = [:]
    let startedAt = Date()
    var stopDeadline: ContinuousClock.Instant?
    /// When a stopping worker stops waiting for executing jobs that ignore their cancellation: a grace period after
    /// ``stopDeadline``, or at once on a second stop request. It leaves them to the broker, which requeues their
    /// deliveries when the connection closes.
    var abandonDeadline: ContinuousClock.Instant?

    var configuration: Worker.Configuration { worker.configuration }

    /// Connects to the first broker address that answers.
    /// - Throws: ``WarrenError`` (`broker`) when none does: a worker that never connected exits.
    init(worker: Worker) throws {
        self.worker = worker
        logger = worker.configuration.logger
        logger[metadataKey: "worker"] = "\(worker.configuration.workerID)"
        jobDecoder = JobDecoder(
            maxMessageBytes: worker.configuration.maxMessageBytes, maxNestingDepth: worker.configuration.maxNestingDepth,
            maxDependencies: worker.configuration.maxDependencies)
        localQueues = worker.configuration.localQueues.reduce(into: [:]) { queues, entry in
            queues[entry.key] = LocalQueue(name: entry.key, width: entry.value)
        }
        basePrefetch = worker.configuration.effectivePrefetch
        throttles = worker.configuration.rateLimits.mapValues(Throttle.init)
        fleetThrottles = Dictionary(
            uniqueKeysWithValues: worker.configuration.fleetRateLimits.map { ($0, FleetThrottle(type: $0, limit: $1)) })
        startGates = worker.configuration.rateLimits.mapValues { StartGate(interval: $0.interval) }
        metrics = WorkerMetrics(operationTypes: worker.registry.types)
        metrics.watch(localQueues.values)
        metrics.startCounters()
        metrics.brokerConnection(connected: false, blocked: false)
        connection = try Self.connect(worker, logger: logger)
        (journal, journalBroker) = Self.openJournal(worker.configuration, connection: connection, logger: logger)
        if let inherited = worker.inherited { takeRateLimitTurns(inherited) }
    }

    /// Works until stopped: serves the connection, and reconnects whenever it is lost.
    func run() throws {
        defer {
            journal?.close()
            discardReportedJournals(all: true)
            for operation in heldFinishes.values { operation.releaseFinish() }
        }
        do {
            try declareAndConsume()
        } catch let error as AMQPError
            where error.isStreamStarting || worker.inherited != nil || error.code == .connectionLost
            || error.replyCode == 320
        {
            // A stream queue just declared, here or by a worker starting beside this one, is not ready for a moment;
            // a fresh copy of a recycled worker was set up a moment ago, and waits for its broker; a broker that
            // blocks this connection (an alarm), stops answering or shuts down (320) is lost as it could be later.
            connectionLost(error)
            guard reconnect() else { return connection.close() }
        } catch let error as AMQPError {
            connection.close()
            throw WarrenError(.broker, "cannot set up at \(connection.configuration.redactedURL): \(error)")
        }
        var started: Logger.Metadata = [
            "broker": "\(connection.configuration.redactedURL)", "queues": .array(configuration.queues.map { "\($0)" }),
            "prefetch": "\(basePrefetch)",
            "localQueues": .array(localQueues.values.map { "\($0.name)=\($0.width)" }.sorted().map { "\($0)" }),
        ]
        if !fleetThrottles.isEmpty {
            started["fleetRateLimits"] = .array(
                configuration.fleetRateLimits.map { "\($0)=\($1)" }.sorted().map { "\($0)" })
        }
        announceConnected()
        logger.info("worker started", metadata: started)
        warnIfOverMemoryAtStart()
        warnIfPrefetchBelowWidths()
        while true {
            do {
                try serve()
                break
            } catch let error as AMQPError {
                connectionLost(error)
                guard reconnect() else { break }
            }
        }
        connection.close()
        worker.health.stopped()
        metrics.brokerConnection(connected: false, blocked: false)
        logger.info("worker stopped")
    }

    /// The main loop on a live connection; returns when the worker stopped and settled everything. What a turn
    /// writes leaves together when it ends (``AMQPConnection/holdOutput()``).
    private func serve() throws {
        var brokerSentSomething = true
        var lastRead = ContinuousClock.now
        while true {
            worker.health.turning()
            connection.holdOutput()
            // Read at least once a second even while only the mailbox wakes the loop (a long job reporting its
            // progress), so that librabbitmq checks the broker's heartbeats.
            let reads = brokerSentSomething || ContinuousClock.now - lastRead >= .seconds(1)
            if reads { lastRead = .now }
            try receive(readingEvents: reads)
            try askForFleetTurns()
            try storeResults(force: inFlight.isEmpty)
            try sendAcks()
            try renewConsumersIfDue()
            try retryUnreachableQueues()
            try retryUnreleasedLocks()
            try retryHeldJobs()
            try requeueDueJobs()
            try sendRoundLongParkedJobs()
            discardReportedJournals()
            forgetExpiredOrphanResults()
            sampleJobsWaitingInWorker()
            deadLettersReachable = nil
            try recycleIfOverMemory()
            try stopAwaitingRedeliveriesIfDone()
            try stopIfRetired()
            if let stopDeadline, ContinuousClock.now >= stopDeadline { cancelAll(reason: "shutdown") }
            enforceDeadlines()
            enforceTimeLimits()
            connection.flushOutput()
            if isDone { return logJobsLeft() }
            brokerSentSomething = true
            worker.mailbox.sleep {
                let timeout = pollTimeout
                worker.health.sleeping(for: timeout)
                brokerSentSomething = connection.waitForActivity(wakeUp: worker.mailbox.wakeUp, timeout: timeout)
            }
        }
    }

    var isDone: Bool {
        guard stopDeadline != nil else { return false }
        // Past its abandon deadline a stopping worker waits for no confirm either: a broker that blocks this
        // connection (a memory or disk alarm) sends none, and what it has not confirmed is redelivered.
        if let abandonDeadline, ContinuousClock.now >= abandonDeadline, awaitsSettlements { return true }
        // A reconnect while stopping: the broker's redeliveries of the jobs it holds come back here first.
        if redeliveriesAwaitedUntil != nil, abandonDeadline.map({ ContinuousClock.now < $0 }) ?? true { return false }
        return !awaitsSettlements && (inFlight.isEmpty || abandonsJobs)
    }

    /// Whether results, batches or acks wait to be sent or confirmed.
    private var awaitsSettlements: Bool {
        !(unconfirmed.isEmpty && storedResults.isEmpty && acks.isEmpty && sentBatches.isEmpty)
    }

    /// Whether the worker stops waiting for the jobs in flight: its abandon deadline passed and every job that
    /// ended is settled (the ones left never ended, cancelled or not).
    var abandonsJobs: Bool {
        guard let abandonDeadline, ContinuousClock.now >= abandonDeadline else { return false }
        return inFlight.values.allSatisfy { !$0.operation.isFinished }
    }

    /// Says which jobs a worker that is done leaves to the broker, if any.
    func logJobsLeft() {
        if awaitsSettlements {
            logger.warning(
                """
                leaving results and acks the broker has not confirmed (does it block this connection?): it \
                redelivers their jobs unless it stored them
                """)
        }
        if !orphanResults.isEmpty {
            logger.warning(
                "dropping the results of jobs that ended after their delivery was lost: their redeliveries run them again",
                metadata: ["jobs": .array(orphanResults.jobIDs.map { "\($0)" })])
        }
        guard !inFlight.isEmpty else { return }
        logger.warning(
            "leaving jobs that did not end to the broker, which requeues them",
            metadata: ["jobs": .array(inFlight.keys.sorted().map { "\($0)" })])
    }

    private var pollTimeout: Duration {
        // Half the heartbeat interval, so that heartbeats go out in time.
        var timeout = Duration.milliseconds(max(connection.configuration.heartbeat, 2) * 500)
        let now = ContinuousClock.now
        if let stopDeadline, stopDeadline > now { timeout = min(timeout, stopDeadline - now) }
        if let abandonDeadline, abandonDeadline > now { timeout = min(timeout, abandonDeadline - now) }
        if let due = acks.dueAt { timeout = min(timeout, due - now) }
        if let due = storedResults.dueAt { timeout = min(timeout, due - now) }
        if let due = sentBatches.resendAt { timeout = min(timeout, due - now) }
        if let due = unreachableQueues.values.min() { timeout = min(timeout, due - now) }
        if let due = heldJobsRetryAt { timeout = min(timeout, due - now) }
        if let due = laterRequeues.first?.due { timeout = min(timeout, due - now) }
        if let due = unreleasedLocksRetryAt { timeout = min(timeout, due - now) }
        if let due = throttledJobsDueAt { timeout = min(timeout, due - now) }
        if let due = fleetTurnsDueAt { timeout = min(timeout, due - now) }
        if let due = timeLimitCheckAt { timeout = min(timeout, due - now) }
        if let due = jobsWaitingResampleAt { timeout = min(timeout, due - now) }
        if let due = redeliveriesAwaitedUntil { timeout = min(timeout, due - now) }
        if let due = nextDeadline() { timeout = min(timeout, due - now) }
        return max(timeout, .milliseconds(1))
    }

    /// When the earliest deadline of the jobs held comes, if one may be held.
    func nextDeadline() -> ContinuousClock.Instant? {
        guard mayHoldDeadlines, let deadline = inFlight.values.compactMap({ $0.descriptor.deadline }).min() else {
            return nil
        }
        return .now + .milliseconds(Int(deadline.timeIntervalSinceNow * 1000) + 1)
    }

    /// Cancels executing jobs whose deadline passed (jobs not started yet are cancelled when they would start); also
    /// while the worker waits for the broker to come back.
    func enforceDeadlines() {
        guard mayHoldDeadlines else { return }
        let now = Date()
        mayHoldDeadlines = false
        for job in inFlight.values {
            guard let deadline = job.descriptor.deadline else { continue }
            mayHoldDeadlines = true
            guard deadline <= now, !job.operation.job.isCancelled else { continue }
            let message = job.operation.hasStarted ? "the job's deadline passed" : "deadline passed before the job started"
            job.operation.cancel(Cancellation(reason: "deadline", message: message))
        }
    }

    func declareAndConsume() throws {
        jobConsumers = [:]
        isConsuming = false
        readsResultsStream = false
        resultsStreamProbe = nil
        readsStoredResults = false
        resultsCatchUp.reset()
        blockedReason = nil
        acks.reset()
        lockChannelOpen = false
        statusChannelOpen = false
        lastStatusRequest = nil
        publishCount = 0  // confirm numbers start at 1 on every new channel
        try connection.openChannel(Self.publishChannel)
        try Topology.declareResults(on: connection, channel: Self.publishChannel)
        heldJobs = []  // their deliveries died with the connection: the broker delivers them again
        heldJobsRetryAt = nil
        heldReasons = []
        laterRequeues = []
        deadLettersReachable = try Topology.declareDeadLetters(
            quorum: configuration.quorumQueues, on: connection, channel: Self.publishChannel)
        try Topology.declareProgress(on: connection, channel: Self.publishChannel)
        try connection.enableConfirms(channel: Self.publishChannel)
        try connection.openChannel(Self.storeChannel)
        try connection.enableConfirms(channel: Self.storeChannel)
        try openStatusChannel()
        try openRateChannel()
        try consumeControl()
        guard !stopIsPending || awaitsRedeliveries else { return }
        if stopDeadline == nil, recycling == nil, !stopIsPending { try watchDeadLetters() }
        if !parked.isEmpty { try readResultsStream() }
        try connection.openChannel(Self.jobsChannel)
        guard stopDeadline == nil || awaitsRedeliveries else { return }
        var channelWide = true
        unreachableQueues = [:]
        for queue in configuration.queues {
            guard let created = try declareJobQueue(queue) else {
                channelWide = false  // its type is unknown until it can be reached
                continue
            }
            if !created, configuration.quorumQueues, try Topology.isKnownClassicQueue(queue, on: connection),
                classicQueuesReported.insert(queue).inserted
            {
                logger.warning(
                    """
                    job queue is a classic queue, on one node: it existed before, and --quorum-queues makes only the \
                    queues that do not exist quorum queues; delete it once empty to have it made again
                    """,
                    metadata: ["queue": "\(queue)"])
            }
            if channelWide {
                channelWide =
                    created ? !configuration.quorumQueues : try Topology.takesChannelWidePrefetch(queue, on: connection)
            }
        }
        renewsConsumers = !channelWide
        retiredConsumers = [:]
        currentPrefetch = UInt16(min(basePrefetch + parked.count, 65_535))  // none held yet
        prefetchPerConsumer =
            renewsConsumers
            || parked.isEmpty && configuration.queues.count == 1 && pausedQueues.isDisjoint(with: configuration.queues)
        if renewsConsumers {
            consumerLimits = [:]
            for queue in configuration.queues where !pausedQueues.contains(queue) {
                consumerLimits[queue] = basePrefetch
            }
            try connection.qos(
                prefetchCount: UInt16(basePrefetch), global: false, channel: Self.jobsChannel)
        } else {
            try connection.qos(prefetchCount: currentPrefetch, global: !prefetchPerConsumer, channel: Self.jobsChannel)
        }
        isConsuming = true
        if recycling != nil || stopDeadline != nil, awaitsRedeliveries {
            redeliveriesAwaitedUntil = .now + Self.redeliveryWait
        }
        for queue in configuration.queues where !pausedQueues.contains(queue) && unreachableQueues[queue] == nil {
            try consumeJobs(from: queue)
        }
    }

    func consumeJobs(from queue: String) throws {
        guard stopDeadline == nil && recycling == nil || redeliveriesAwaitedUntil != nil, !streamQueues.contains(queue)
        else { return }
        jobConsumers[try connection.consume(queue, channel: Self.jobsChannel)] = queue
    }

    /// The broker queue a job delivery came from: the only queue consumed, else its consumer's, or for a consumer
    /// already cancelled, the routing key it was published with.
    func queue(of delivery: Delivery) -> String {
        let queues = configuration.queues
        if queues.count == 1 { return queues[0] }
        return jobConsumers[delivery.consumerTag] ?? retiredConsumers[delivery.consumerTag] ?? delivery.routingKey
    }

    /// Cancels the consumers of `queue`; the deliveries they brought stay with the worker, unacknowledged.
    func cancelConsumers(of queue: String) throws {
        for (tag, consumed) in jobConsumers where consumed == queue {
            try connection.cancelConsumer(tag, channel: Self.jobsChannel)
            jobConsumers[tag] = nil
            retiredConsumers[tag] = queue
        }
    }

    /// Moves the prefetch limit from the job consumers to the jobs channel for the rest of the connection, before
    /// a consumer starts again or the limit changes: the channel's limit changes live and counts every
    /// unacknowledged delivery, whichever consumer brought it, so restarting a consumer cannot exceed it.
    func useChannelWidePrefetch() throws {
        guard prefetchPerConsumer, !renewsConsumers else { return }
        prefetchPerConsumer = false
        // In this order: RabbitMQ lifts the channel's limit whenever it sets consumers' own.
        try connection.qos(prefetchCount: 0, global: false, channel: Self.jobsChannel)
        try connection.qos(prefetchCount: currentPrefetch, global: true, channel: Self.jobsChannel)
        for queue in Set(jobConsumers.values) {
            try cancelConsumers(of: queue)
            try consumeJobs(from: queue)
        }
    }

    // MARK: - Events

    /// Handles what the broker sent: reads the socket once, then what librabbitmq holds. Reading on until a read
    /// finds nothing would cost two system calls per turn (a `recv` and a `poll`) for nothing: bytes that arrive
    /// meanwhile wake the next wait at once.
    private func readEvents() throws {
        let most = 512
        var handled = 0
        while handled < most, handled == 0 || connection.hasBufferedInput, let event = try connection.nextEvent() {
            handled += 1
            switch event {
            case .delivery(let delivery) where delivery.channel == Self.controlChannel:
                try handleControl(delivery)
            case .delivery(let delivery) where delivery.channel == Self.resultsChannel:
                try handleStoredResult(delivery)
            case .delivery(let delivery) where delivery.channel == Self.fetchChannel:
                try handleFetchedResults(delivery)
            case .delivery(let delivery) where delivery.channel == Self.deadWatchChannel:
                try handleWatchedLetter(delivery)
            case .delivery(let delivery):
                acks.received(delivery.deliveryTag)
                try containingMessageErrors(delivery.deliveryTag) { try handleJob(delivery) }
            case .confirm(Self.storeChannel, let tag, let multiple, let ack):
                try batchesConfirmed(upTo: tag, multiple: multiple, ack: ack)
            case .confirm(Self.rateChannel, let tag, let multiple, let ack):
                try fleetTurnsAnswered(upTo: tag, multiple: multiple, granted: ack)
            case .confirm(_, let tag, let multiple, let ack):
                try settle(upTo: tag, multiple: multiple, ack: ack)
            case .channelClosed(let error) where error.channel == Self.statusChannel:
                try statusChannelClosed(error)
            case .channelClosed(let error) where error.channel == Self.storeChannel:
                try storeChannelClosed(error)
            case .channelClosed(let error):
                throw error
            case .consumerCancelled(_, let tag) where tag == deadWatchConsumer:
                deadWatchCancelled()
            case .consumerCancelled(_, let tag):
                guard let queue = jobConsumers[tag] else {
                    throw AMQPError(.channelClosed, "the broker cancelled consumer '\(tag)' (was its queue deleted?)")
                }
                consumerCancelled(tag, queue: queue)
            case .blocked(let reason):
                // RabbitMQ says it again for each alarm that holds, with the same reason.
                if blockedReason != reason {
                    logger.warning("the broker blocked this connection", metadata: ["reason": "\(reason)"])
                }
                blockedReason = reason
                worker.health.blocked(reason)
                metrics.brokerConnection(connected: true, blocked: true)
            case .unblocked:
                blockedReason = nil
                logger.info("the broker unblocked this connection")
                worker.health.blocked(nil)
                metrics.brokerConnection(connected: true, blocked: false)
            case .returned(Self.rateChannel, _, _, _, let queue, let jobID):
                fleetTurnReturned(to: queue, jobID: jobID)
            case .returned:
                break
            }
        }
    }

    private func handle(_ message: WorkerMessage) throws {
        switch message {
        case .finished(let finished):
            jobsEndedSinceMemoryCheck = true
            if !heldFinishes.isEmpty { endedThisTurn.append(finished.jobID) }
            guard let job = inFlight[finished.jobID] else { return }
            try containingMessageErrors(job.delivery.deliveryTag) { try finish(job, finished) }
        case .progress(let jobID, let fraction, let message):
            try publishProgress(jobID: jobID, fraction: fraction, message: message)
        case .started(let jobID):
            if let job = inFlight[jobID] { timeLimitedJobStarted(job) }
        case .stop:
            worker.stoppedToRecycle = false  // also when it retired since stop() was called
            if stopDeadline == nil {
                // Not waiting for cancel-ok: a broker that blocks this connection (a memory or disk alarm) reads
                // nothing, and the stop must not wait for it. Deliveries that still come are sent back.
                for tag in jobConsumers.keys {
                    try connection.cancelConsumer(tag, channel: Self.jobsChannel, awaitingReply: false)
                }
                try stopWatchingDeadLetters()
            }
            beginStop()
        }
    }

    /// Runs `body`, which handles one job message; a failure of librabbitmq to encode what it publishes for that
    /// message (a header too large, say) concerns the message, not the connection: the message is rejected to the
    /// queue's dead-letter exchange by the broker (reason `rejected` in `x-death`) and the worker goes on.
    /// Anything else, a lost connection above all, goes up.
    private func containingMessageErrors(_ deliveryTag: UInt64?, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as AMQPError where error.code == .library {
            logger.error("cannot publish for a job message; rejecting it to the dead-letter queue", metadata: ["error": "\(error)"])
            guard let deliveryTag else { return }
            if let id = inFlight.first(where: { $0.value.delivery.deliveryTag == deliveryTag })?.key {
                inFlight[id] = nil
                parked[id] = nil
            }
            try nackJob(deliveryTag, requeue: false)
            metrics.deadLettered(reason: "rejected")
        }
    }

    /// First call: no new jobs, waiting ones are requeued, executing ones get the grace period. Second call: now.
    /// - Parameter announcing: Whether to log the grace period (not when nothing executes).
    func beginStop(announcing: Bool = true) {
        guard stopDeadline == nil else {
            logger.info("stopping now: cancelling executing jobs and leaving those that do not end to the broker")
            stopDeadline = .now
            abandonDeadline = .now
            return
        }
        journal?.markStopping()
        worker.health.stopping()
        let grace = configuration.shutdownGracePeriod
        if announcing {
            logger.info(
                "stopping: no new jobs; executing ones get \(grace) to finish, and \(grace) more once cancelled")
        }
        stopDeadline = .now + grace
        abandonDeadline = .now + grace + grace
        jobConsumers = [:]
        for job in inFlight.values where !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is stopping"))
        }
    }

    /// Cancels the executing jobs once the grace period of a stop has passed, or a second stop request cut it
    /// short; each is logged once, and goes back to the broker.
    func cancelAll(reason: String) {
        for job in inFlight.values where !job.operation.isFinished && !job.operation.job.isCancelled {
            job.operation.job.logger.warning(
                "the worker stops: cancelling the job, which goes back to the broker to run again")
            job.operation.cancel(Cancellation(reason: reason, message: "the worker is stopping"))
        }
    }

    // MARK: - Publishing and settling

    /// Publishes on the confirm channel and returns the publish's confirm number.
    func publish(
        _ body: [UInt8], exchange: String, routingKey: String, properties: MessageProperties
    ) throws -> UInt64 {
        try connection.publish(
            body, exchange: exchange, routingKey: routingKey, properties: properties, channel: Self.publishChannel)
        publishCount += 1
        return publishCount
    }

    /// Settles `deliveryTag` (ack or requeue) once every one of `confirms` has come.
    /// - Parameters:
    ///   - result: The result those publishes carry, kept in case the connection dies before the confirm.
    ///   - delivery: The job's delivery, to dead-letter if the broker refuses its result; `nil` when these publishes
    ///     dead-letter it already.
    ///   - channel: The delivery's channel.
    ///   - deadLettered: The delivery and error, when these publishes dead-letter the job
    ///     (``Settlement/deadLettered``).
    func settle(
        _ deliveryTag: UInt64, action: Settlement.Action, after confirms: [Settlement.Confirm],
        result: JobResult? = nil, delivery: Delivery? = nil, channel: UInt16 = jobsChannel,
        deadLettered: (delivery: Delivery, error: JobError)? = nil
    ) throws {
        let settlement = Settlement(
            deliveryTag: deliveryTag, channel: channel, action: action, unconfirmed: confirms.count, result: result,
            delivery: delivery, deadLettered: deadLettered)
        guard !confirms.isEmpty else { return try apply(settlement) }
        for confirm in confirms {
            switch confirm {
            case .publish(let number): unconfirmed.append(settlement, awaiting: number)
            case .reply(let number):
                settlement.replyNumber = number
                unconfirmed.append(settlement, awaiting: number)
            case .storedResults: storedResults.waitFor(settlement)
            }
        }
    }

    private func settle(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        for (number, settlement) in unconfirmed.confirmed(upTo: tag, multiple: multiple) {
            if !ack && number == settlement.replyNumber {
                settlement.replyRefused = true
                try countConfirm(of: settlement)
            } else {
                try countConfirm(of: settlement, refused: !ack)
            }
        }
    }

    /// Takes in the broker's answer to result batches on the store channel (``SentBatches``).
    private func batchesConfirmed(upTo tag: UInt64, multiple: Bool, ack: Bool) throws {
        let (refused, settlements) = sentBatches.confirmed(upTo: tag, multiple: multiple, ack: ack)
        if refused > 0 {
            logger.error(
                "the broker refused result batches for the results stream; appending them again",
                metadata: ["batches": "\(refused)", "in": "\(sentBatches.retryDelay)"])
        }
        for settlement in settlements { try countConfirm(of: settlement, refused: !ack) }
    }

    /// Counts one of the confirms `settlement` waits for (a refusal when `refused`), and applies it once it has
    /// them all.
    func countConfirm(of settlement: Settlement, refused: Bool = false) throws {
        settlement.unconfirmed -= 1
        if refused { settlement.refused = true }
        if settlement.unconfirmed == 0 { try apply(settlement) }
    }

    private func apply(_ settlement: Settlement) throws {
        if settlement.channel == Self.deadWatchChannel { return try settleWatchedLetter(settlement) }
        if settlement.refused {
            if let (delivery, error) = settlement.deadLettered {
                return try hold(
                    """
                    the broker refused a dead letter (is warren.dead or warren.dead.watch at its length limit, \
                    with x-overflow reject-publish?); holding the job, and publishing its dead letter again every \
                    \(Self.unreachableQueueRetry.components.seconds) s
                    """, ["queue": "\(Topology.deadQueue)"], delivery
                ) { [unowned self] in try deadLetterJob(delivery, error: error, result: nil, lock: nil) }
            }
            logger.error(
                """
                the broker refused a job's delayed copy (is the delay queue full, with x-overflow reject-publish?); \
                requeueing the job in \(Self.unreachableQueueRetry.components.seconds) s so it runs again
                """)
            return requeueLater(settlement.deliveryTag)
        }
        if settlement.replyRefused { return try resultRefused(settlement) }
        if settlement.action == .ack {
            acks.acknowledge(settlement.deliveryTag)
        } else {
            try nackJob(settlement.deliveryTag, requeue: true)
        }
    }

    /// The broker refused a job's result (its reply queue full with `x-overflow` `reject-publish`, say), and
    /// would refuse it again: running the job again would loop. The job is dead-lettered with reason
    /// `resultRefused` (or is already, for a failed job), and acked once that is confirmed.
    private func resultRefused(_ settlement: Settlement) throws {
        guard let delivery = settlement.delivery else {
            logger.error("the broker refused the failed result of a dead-lettered job; acknowledging it")
            return acks.acknowledge(settlement.deliveryTag)
        }
        let error = JobError(
            code: "resultRefused",
            message: "the broker refused the job's result (basic.nack) for "
                + (delivery.replyQueue.map { "reply queue '\($0)'" } ?? "the results exchange")
                + "; a queue at its length limit with x-overflow reject-publish does this")
        logger.error("dead-lettering a job whose result the broker refused", metadata: ["error": "\(error)"])
        try deadLetterJob(delivery, error: error, result: nil, lock: nil)
    }

    /// Nacks a job delivery now: back to its queue, or (`requeue: false`) to the queue's dead-letter exchange.
    func nackJob(_ deliveryTag: UInt64, requeue: Bool) throws {
        acks.reject(deliveryTag)
        try connection.nack(deliveryTag, requeue: requeue, channel: Self.jobsChannel)
    }

    /// Handles what the mailbox and the connection brought, then hands the operations that released to their local
    /// queues in one call each; also when handling fails (a lost connection), so that jobs taken in still run.
    /// Messages not handled when the connection fails stay in the mailbox for the disconnected loop: a job's
    /// `finished` message is never dropped, or the job would stay in flight for good.
    /// - Parameter readingEvents: Whether to read what the broker sent: not after a wait that only the mailbox ended.
    private func receive(readingEvents: Bool) throws {
        defer {
            releaseThrottledJobs()  // last, so that each turn taken is a hand-over now
            queueOperations()
            // Now that the jobs they released are in their local queues.
            for jobID in endedThisTurn { releaseFinish(of: jobID) }
            endedThisTurn.removeAll(keepingCapacity: true)
        }
        try worker.mailbox.handleEach { try handle($0) }
        if readingEvents { try readEvents() }
        if resultsCatchUp.reachedEnd { try caughtUpWithResults() }
    }

    /// Hands the operations this loop iteration released to their local queues, unless a job that runs alone
    /// holds them back.
    private func queueOperations() {
        guard !holdsJobsForAloneJob() else { return }
        for (name, operations) in operationsToQueue where !operations.isEmpty { localQueues[name]!.add(operations) }
        operationsToQueue.removeAll(keepingCapacity: true)
    }

    /// Sends the acks that are due, batched (``AckBatch``).
    private func sendAcks() throws {
        let batch = acks.take()
        if let upTo = batch.upTo { try connection.ack(upTo, multiple: true, channel: Self.jobsChannel) }
        for tag in batch.singles { try connection.ack(tag, channel: Self.jobsChannel) }
    }
}
