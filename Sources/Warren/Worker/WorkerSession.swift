import AMQP
import Foundation
import Logging

/// The broker side of a worker: owns the connection and the loop's turn, and takes each job from its delivery to its
/// ack through components that own their state.
///
/// A job's path, in the order of this file: the delivery is decoded and looked at (``JobIntake``); it passes the
/// gates of ``Admission`` (dependencies, rate limits, a run alone after crashes) into its local queue
/// (``LocalQueues``); its operation runs and posts its end to the ``Mailbox``; its result is published, stored and
/// confirmed, and the delivery acknowledged (``Settlements``). Jobs that cannot run go to the dead letters, jobs
/// that must wait go to the delay queues (``Detours``).
/// Thread safety: confined. Created and run on the broker thread; other threads reach it only through the
/// worker's ``Mailbox``.
final class WorkerSession {
    let worker: Worker
    let logger: Logger
    let metrics: WorkerMetrics
    let link: BrokerLink
    /// The jobs held, from their delivery until they are settled.
    let jobs = InFlightJobs()
    let intake: JobIntake
    let crashes: CrashWatch
    let admission: Admission
    let localQueues: LocalQueues
    let settlements: Settlements
    let endings: JobEndings
    let detours: Detours
    let locks: UniqueLockReleaser
    let consumers: ConsumerControl
    let lifecycle: Lifecycle
    let control: ControlStream
    let status: StatusReporter
    let timers: JobTimers
    let deadWatch: DeadLetterWatch
    var backoff: ReconnectBackoff

    var configuration: Worker.Configuration { worker.configuration }
    var dependencies: DependencyGate { admission.dependencies }

    /// Connects to the first broker address that answers, and makes the components.
    /// - Throws: ``WarrenError`` (`broker`) when none does: a worker that never connected exits.
    init(worker: Worker) throws {
        let configuration = worker.configuration
        self.worker = worker
        var logger = configuration.logger
        logger[metadataKey: "worker"] = "\(configuration.workerID)"
        self.logger = logger
        localQueues = LocalQueues(widths: configuration.localQueues)
        metrics = WorkerMetrics(operationTypes: worker.registry.types)
        metrics.watch(localQueues.byName.values)
        metrics.startCounters()
        metrics.brokerConnection(connected: false, blocked: false)
        let connection = try Self.connect(worker, logger: logger)
        link = BrokerLink(connection: connection, logger: logger)
        crashes = CrashWatch(
            configuration: configuration, broker: CrashWatch.brokerIdentity(of: connection), logger: logger,
            metrics: metrics)
        intake = JobIntake(configuration: configuration, registry: worker.registry, logger: logger)
        lifecycle = Lifecycle(configuration: configuration)
        settlements = Settlements(link: link, logger: logger, metrics: metrics)
        consumers = ConsumerControl(link: link, lifecycle: lifecycle, configuration: configuration, logger: logger) {
            [settlements, metrics] prefetch in
            metrics.prefetch(prefetch)
            settlements.windowChanged(to: prefetch)
        }
        locks = UniqueLockReleaser(link: link, logger: logger, metrics: metrics)
        detours = Detours(
            link: link, settlements: settlements, locks: locks, consumers: consumers, metrics: metrics,
            configuration: configuration, logger: logger)
        endings = JobEndings(
            link: link, settlements: settlements, locks: locks, detours: detours, intake: intake,
            workerID: configuration.workerID, logger: logger)
        deadWatch = DeadLetterWatch(
            link: link, settlements: settlements, locks: locks, configuration: configuration, logger: logger)
        admission = Admission(
            configuration: configuration, jobs: jobs, link: link, localQueues: localQueues, crashes: crashes,
            lifecycle: lifecycle, metrics: metrics, logger: logger)
        timers = JobTimers(jobs: jobs, typeLimits: configuration.timeLimits)
        control = ControlStream(link: link, configuration: configuration, logger: logger)
        status = StatusReporter(
            link: link, jobs: jobs,
            sources: .init(
                localQueues: localQueues, consumers: consumers, lifecycle: lifecycle, held: detours.held,
                dependencies: admission.dependencies),
            configuration: configuration, registry: worker.registry, metrics: metrics)
        backoff = ReconnectBackoff(maxDelay: configuration.maxReconnectDelay)
        settlements.delegate = endings
        settlements.resultPublished = { [status, admission] result in
            status.count(result)
            admission.dependencies.ended(result)
        }
        detours.delays.endIfCancelled = { [endings] in try endings.endIfCancelled($0, from: $1) }
        if let handover = configuration.takingOver { admission.rateLimits?.keep(turns: handover.rateLimitTurns) }
    }

    // MARK: - The loop

    /// The main loop on a live connection; returns when the worker stopped and settled everything. What a turn
    /// writes leaves together when it ends (``AMQPConnection/holdOutput()``).
    func serve() throws {
        var brokerSentSomething = true
        var lastRead = ContinuousClock.now
        while true {
            worker.health.turning()
            link.connection.holdOutput()
            // Read at least once a second even while only the mailbox wakes the loop (a long job reporting its
            // progress), so that librabbitmq checks the broker's heartbeats.
            let reads = brokerSentSomething || ContinuousClock.now - lastRead >= .seconds(1)
            if reads { lastRead = .now }
            try receive(readingEvents: reads)
            try takeRetirement()
            try updatePrefetch()
            try admission.fleetRateLimits?.askForTurns()
            try settlements.storeResults(force: jobs.isEmpty)
            try settlements.sendAcks()
            try consumers.renewConsumersIfDue(jobs: jobs.all, held: detours.held.held.map(\.delivery))
            try consumers.retryUnreachableQueues()
            try locks.retryIfDue()
            try detours.retryHeldJobs()
            for tag in detours.held.dueRequeues() { try settlements.nack(tag, requeue: true) }
            for job in dependencies.takeLongParked() { try sendRound(job) }
            try updatePrefetch()
            crashes.discardReportedJournals()
            settlements.forgetExpiredResults()
            status.sampleJobsWaitingInWorker(
                waitForTurns: admission.rateLimits != nil || admission.fleetRateLimits != nil
                    || admission.runAlone.blocksOthers)
            detours.deadLetters.lookAgain()
            try recycleIfOverMemory()
            try stopAwaitingRedeliveriesIfDone()
            try stopIfRetired()
            if lifecycle.graceIsOver { cancelAll(reason: "shutdown") }
            timers.enforce()
            link.connection.flushOutput()
            if isDone { return logJobsLeft() }
            brokerSentSomething = true
            worker.mailbox.sleep {
                let timeout = pollTimeout
                worker.health.sleeping(for: timeout)
                brokerSentSomething = link.connection.waitForActivity(wakeUp: worker.mailbox.wakeUp, timeout: timeout)
            }
        }
    }

    /// How long the loop sleeps at most: until the earliest time a component has something to do, and no longer
    /// than half the heartbeat interval, so that heartbeats go out in time.
    private var pollTimeout: Duration {
        let now = ContinuousClock.now
        var wake = now + link.longestSleep
        func consider(_ component: some WakesTheLoop) {
            if let due = component.nextWake, due < wake { wake = due }
        }
        consider(lifecycle)
        consider(settlements)
        consider(consumers)
        consider(detours.held)
        consider(locks)
        consider(admission)
        consider(timers)
        consider(status)
        return max(wake - now, .milliseconds(1))
    }

    /// Handles what the mailbox and the connection brought, takes the jobs the gates let go through the rest of
    /// the gates, then hands the operations of the turn to their local queues; also when handling fails (a lost
    /// connection), so that jobs taken in still run. Messages not handled when the connection fails stay in the
    /// mailbox for the disconnected loop: a job's `finished` message is never dropped.
    /// - Parameter readingEvents: Whether to read what the broker sent: not after a wait that only the mailbox ended.
    private func receive(readingEvents: Bool) throws {
        defer {
            if !admission.runAlone.blocksOthers { localQueues.handOver() }
            // Now that the jobs they released are in their local queues.
            dependencies.releaseHeldFinishes()
        }
        try worker.mailbox.handleEach { try handle($0) }
        // Reads the socket once, then what librabbitmq holds: bytes that arrive meanwhile wake the next wait at once.
        if readingEvents { try link.pump.dispatch() }
        dependencies.resolveIfCaughtUp()
        for (job, outcome) in try admission.takeReleased() where jobs.holds(job) { try take(job, outcome) }
    }

    private func handle(_ message: WorkerMessage) throws {
        switch message {
        case .finished(let finished):
            lifecycle.jobsEnded()
            dependencies.jobEnded(finished.jobID)
            guard let job = jobs[finished.jobID] else { return }
            try containingMessageErrors(job.delivery.deliveryTag) { try finish(job, finished) }
        case .progress(let jobID, let fraction, let message):
            guard let job = jobs[jobID] else { return }
            try status.publishProgress(of: job, fraction: fraction, message: message)
        case .started(let jobID):
            if let job = jobs[jobID] { timers.started(job) }
        case .stop:
            try stop()
        }
    }

    // MARK: - A job's path

    /// A job delivery: decoded, looked at, and taken through the gates, unless it ends or waits elsewhere first.
    func received(_ delivery: Delivery) throws {
        let receivedAt = Date()
        // A stopping worker takes back only the redeliveries of its own jobs, after a reconnect.
        if lifecycle.isStopping, !lifecycle.awaitsRedeliveries {
            return try settlements.nack(delivery.deliveryTag, requeue: true)
        }
        if delivery.properties.headers?[Topology.streamOffsetHeader] != nil,
            try consumers.refusesStream(delivery, acknowledge: settlements.acknowledge)
        {
            return
        }
        let descriptor: OperationDescriptor
        do {
            descriptor = try intake.decode(delivery)
        } catch let error as JobError {
            return try endings.refuse(delivery, error: error, receivedAt: receivedAt)
        }
        timers.arrived(descriptor)
        let running = jobs[descriptor.id]
        if let running, running.generation != link.generation {
            // Redelivered after a reconnect while the job still runs here: it ends once, on this delivery.
            running.delivery = delivery
            running.generation = link.generation
            return consumers.consumerLimitsMayFallShort()
        }
        if let result = settlements.takeKeptResult(of: descriptor.id) {
            return try endings.end(delivery, with: result, lock: HeldLock(descriptor))
        }
        if lifecycle.isLeaving { return try sendBackWhileLeaving(delivery) }
        let queue = consumers.queue(of: delivery)
        consumers.delivered(from: queue)
        if let cancellation = intake.cancellation(of: descriptor, queue: queue) {
            return try endings.endCancelled(delivery, descriptor, cancellation, receivedAt: receivedAt)
        }
        if delivery.redelivered { try crashes.findDeadWorkers(afterRedelivery: true, publish: publishControl) }
        let deaths = crashes.deaths(of: descriptor, delivery)
        switch intake.verdict(
            on: descriptor, delivery: delivery, receivedAt: receivedAt, deaths: deaths, isHeld: running != nil)
        {
        case .refuse(let error, let reply, let releasesLock):
            try endings.refuse(
                delivery, error: error, receivedAt: receivedAt, descriptor: descriptor, reply: reply,
                releasesLock: releasesLock)
        case .postpone(let notBefore):
            if let deadline = descriptor.deadline, deadline <= notBefore {
                let never = Cancellation(
                    reason: "deadline",
                    message: "the job's deadline is not after the time it may start: it could never start")
                return try endings.endCancelled(delivery, descriptor, never, receivedAt: receivedAt)
            }
            try detours.delays.postpone(delivery, descriptor, until: notBefore, from: queue, receivedAt: receivedAt)
        case .run(let registered):
            let job = makeJob(descriptor, delivery, queue: queue, registered: registered, receivedAt: receivedAt)
            job.runsAlone = crashes.runsAlone(descriptor, delivery, deaths: deaths)
            jobs.insert(job)
            try take(job, try admission.admit(job))
        }
    }

    /// The job in flight for `descriptor`, with the operation that runs it and posts its end to the mailbox.
    private func makeJob(
        _ descriptor: OperationDescriptor, _ delivery: Delivery, queue: String, registered: RegisteredOperation,
        receivedAt: Date
    ) -> InFlightJob {
        let mailbox = worker.mailbox
        let jobID = descriptor.id
        let context = JobContext(descriptor: descriptor, attempt: delivery.attempt, logger: logger) {
            fraction, message in mailbox.post(.progress(jobID: jobID, fraction: fraction, message: message))
        }
        let timeLimit = timers.timeLimit(of: descriptor)
        let started = metrics.recordingQueueLatency(
            of: descriptor, delivery, from: queue,
            then: timeLimit == nil ? nil : { @Sendable in mailbox.post(.started(jobID: jobID)) })
        let operation = JobOperation(
            job: context, input: descriptor.input, body: registered.body, journal: crashes.journal,
            startGate: admission.rateLimits?.startGate(for: descriptor.type), started: started
        ) { finished in
            mailbox.post(.finished(finished))
        }
        return InFlightJob(
            descriptor: descriptor, delivery: delivery, generation: link.generation, queue: queue,
            localQueue: registered.localQueue, attempt: delivery.attempt, receivedAt: receivedAt,
            operation: operation, timeLimit: timeLimit)
    }

    /// Where `job` goes once the gates had their say: its local queue, a gate, the dead letters, or the broker.
    private func take(_ job: InFlightJob, _ outcome: Admission.Outcome) throws {
        switch outcome {
        case .queue:
            localQueues.add(job)
        case .held:
            break
        case .reject(let error):
            jobs.remove(job.descriptor.id)
            try endings.refuse(job.delivery, error: error, receivedAt: job.receivedAt, descriptor: job.descriptor)
        case .sendRound:
            try sendRound(job)
        }
    }

    /// Parks `job` through the broker: it comes back in a few seconds.
    private func sendRound(_ job: InFlightJob) throws {
        jobs.remove(job.descriptor.id)
        try detours.delays.sendRound(job.delivery, from: job.queue, attempt: job.attempt)
    }

    /// Ends `job`, which the worker holds, as its operation reported.
    private func finish(_ job: InFlightJob, _ finished: FinishedJob) throws {
        jobs.remove(finished.jobID)
        admission.runAlone.ended(job)
        dependencies.unpark(finished.jobID)
        guard job.generation == link.generation else { return endings.endOrphan(job, finished) }
        consumers.left(job)
        let timings = JobTimings(
            enqueuedAt: job.descriptor.createdAt, receivedAt: job.receivedAt, startedAt: finished.startedAt,
            finishedAt: finished.finishedAt)
        let result: JobResult
        switch finished.outcome {
        case .cancelled(let cancellation) where Cancellation.requeueReasons.contains(cancellation.reason):
            return try settlements.nack(job.delivery.deliveryTag, requeue: true)
        case .cancelled(let cancellation):
            result = endings.result(job, .cancelled, cancellation: cancellation, timings: timings)
        case .succeeded(let output):
            result = endings.result(job, .succeeded, timings: timings, output: output)
        case .failed(let error):
            if let wait = DelayQueues.retryWait(for: job, after: error) {
                metrics.retried(type: job.descriptor.type, timings: timings)
                return try detours.delays.retry(job, after: error, waiting: wait)
            }
            job.operation.job.logger.warning("job failed", metadata: ["error": "\(error)"])
            return try endings.fail(
                job, error: error, result: endings.result(job, .failed, timings: timings, error: error))
        }
        try endings.end(job.delivery, with: result, lock: HeldLock(job.descriptor))
    }

    /// Runs `body`, which handles one job message; a failure of librabbitmq to encode what it publishes for that
    /// message (a header too large, say) concerns the message, not the connection: the message is rejected to the
    /// queue's dead-letter exchange by the broker (reason `rejected` in `x-death`) and the worker goes on.
    /// Anything else, a lost connection above all, goes up.
    func containingMessageErrors(_ deliveryTag: UInt64, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as AMQPError where error.code == .library {
            logger.error(
                "cannot publish for a job message; rejecting it to the dead-letter queue",
                metadata: ["error": "\(error)"])
            if let job = jobs.all.first(where: { $0.delivery.deliveryTag == deliveryTag }) {
                jobs.remove(job.descriptor.id)
                dependencies.unpark(job.descriptor.id)
            }
            try settlements.nack(deliveryTag, requeue: false)
            metrics.deadLettered(reason: "rejected")
        }
    }

    /// Sets the prefetch: the base, plus one for each job held without running (parked, or held for a queue out of
    /// reach).
    private func updatePrefetch() throws {
        try consumers.updatePrefetch(heldJobs: dependencies.parkedCount + detours.held.count)
    }
}
