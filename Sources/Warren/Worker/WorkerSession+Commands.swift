import AMQP
import Foundation
import Logging

/// What the worker is asked to do besides running jobs: control messages (cancel, pause, resize, status, crash
/// reports), a stop, and recycling.
extension WorkerSession {
    // MARK: - Control messages

    /// Carries out what a control message asks of this worker.
    func carryOut(_ command: ControlStream.Command) throws {
        switch command {
        case .cancel(let message):
            cancelJobs(as: message)
        case .setPaused(let paused, let queues):
            for queue in queues { try setPaused(paused, queue: queue) }
        case .resize(let name, let width, let toThisWorker):
            try resize(name, to: width, toThisWorker: toThisWorker)
        case .status(let replyTo, let limit):
            try status.answer(replyTo: replyTo, listingJobs: limit)
        case .crashed(let report):
            crashes.crashReported(report, jobs: jobs.byID)
        case .sync:
            break
        }
    }

    /// Remembers a cancellation, and cancels the jobs held that it covers, wherever they are. Jobs that have not
    /// started go first, and the log lines after: a cancelled executing job frees its place in its local queue,
    /// where a job waiting behind it would start before its own cancellation.
    private func cancelJobs(as message: ControlMessage) {
        intake.record(message)
        // The message's own ids count too: past the registry's capacity (a message of more than 100,000 ids) its
        // first ones are forgotten as soon as recorded, and a job this worker holds must still see them.
        let named = message.jobIDs.isEmpty ? [] : Set(message.jobIDs)
        // A job cancelled already (its time limit, an earlier message) keeps its first cancellation.
        let cancelled = jobs.all.compactMap { job -> (InFlightJob, Cancellation)? in
            guard !job.operation.job.isCancelled else { return nil }
            let cancellation =
                intake.cancellation(of: job.descriptor, queue: job.queue)
                ?? (named.contains(job.descriptor.id) ? message.cancellation : nil)
            return cancellation.map { (job, $0) }
        }
        for (job, cancellation) in cancelled where !job.operation.hasStarted { job.operation.cancel(cancellation) }
        for (job, cancellation) in cancelled where job.operation.hasStarted { job.operation.cancel(cancellation) }
        for (job, cancellation) in cancelled {
            job.operation.job.logger.info("cancelling job", metadata: ["reason": "\(cancellation.reason)"])
        }
    }

    /// Pauses or resumes taking jobs from `queue`. Pausing sends the jobs from it that have not started back to the
    /// broker (for other workers, or for later); executing ones go on.
    private func setPaused(_ paused: Bool, queue: String) throws {
        guard try consumers.setPaused(paused, queue: queue) else { return }
        logger.log(
            level: control.readsBacklog ? .debug : .info, paused ? "paused" : "resumed", metadata: ["queue": "\(queue)"]
        )
        guard paused else { return }
        for job in jobs.all where job.queue == queue && !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "paused", message: "the worker was paused on \(queue)"))
        }
    }

    /// Sets a local queue's width, as `warren resize` asks; the prefetch follows when it follows the widths.
    private func resize(_ name: String?, to width: Int?, toThisWorker: Bool) throws {
        guard let name, let local = localQueues[name] else {
            // A message to every worker names a local queue some of them may not have.
            guard toThisWorker else { return }
            return logger.warning(
                "ignoring a resize of local queue '\(name ?? "")', which this worker does not have",
                metadata: ["localQueues": .array(localQueues.byName.keys.sorted().map { "\($0)" })])
        }
        guard let width, LocalQueue.widths.contains(width) else {
            let (least, most) = (LocalQueue.widths.lowerBound, LocalQueue.widths.upperBound)
            let asked = width.map(String.init) ?? "none"
            return logger.warning(
                "ignoring a resize of local queue '\(name)' to width \(asked): expected \(least) to \(most)")
        }
        guard width != local.width else { return }
        logger.info(
            "resizing local queue", metadata: ["localQueue": "\(name)", "from": "\(local.width)", "to": "\(width)"])
        local.resize(to: width)
        if consumers.widthsChanged(to: localQueues.totalWidth) {
            try consumers.updatePrefetch(heldJobs: dependencies.parkedCount + detours.held.count)
        } else {
            consumers.warnIfBelow(totalWidth: localQueues.totalWidth)
        }
    }

    // MARK: - Stopping

    /// ``Worker/stop()`` was called: consumers stop without waiting for the broker's answer (a broker that blocks
    /// this connection reads nothing, and the stop must not wait for it); deliveries that still come are sent back.
    func stop() throws {
        worker.stoppedToRecycle = false  // also when it retired since stop() was called
        if !lifecycle.isStopping {
            try consumers.cancelAll(awaitingReply: false)
            try deadWatch.stopWatching()
        }
        beginStop()
    }

    /// First call: no new jobs, waiting ones are requeued, executing ones get the grace period. Second call: now.
    /// - Parameter announcing: Whether to log the grace period (not when nothing executes).
    func beginStop(announcing: Bool = true) {
        guard lifecycle.beginStop() else {
            return logger.info(
                "stopping now: cancelling executing jobs and leaving those that do not end to the broker")
        }
        crashes.stopping()
        worker.health.stopping()
        let grace = lifecycle.gracePeriod
        if announcing {
            logger.info(
                "stopping: no new jobs; executing ones get \(grace) to finish, and \(grace) more once cancelled")
        }
        consumers.forgetConsumers()
        for job in jobs.all where !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is stopping"))
        }
    }

    /// Cancels the executing jobs once the grace period of a stop has passed, or a second stop request cut it
    /// short; each is logged once, and goes back to the broker.
    func cancelAll(reason: String) {
        for job in jobs.all where !job.operation.isFinished && !job.operation.job.isCancelled {
            job.operation.job.logger.warning(
                "the worker stops: cancelling the job, which goes back to the broker to run again")
            job.operation.cancel(Cancellation(reason: reason, message: "the worker is stopping"))
        }
    }

    /// Whether a stopping worker is done: nothing waits for the broker, and no job is held, or those held are left.
    var isDone: Bool {
        lifecycle.isDone(
            awaitingBroker: settlements.isAwaitingBroker, holdsJobs: !jobs.isEmpty, abandonsJobs: abandonsJobs)
    }

    /// Whether the worker stops waiting for the jobs in flight: its abandon deadline passed and every job that
    /// ended is settled (the ones left never ended, cancelled or not).
    var abandonsJobs: Bool {
        lifecycle.abandonDeadlinePassed && jobs.all.allSatisfy { !$0.operation.isFinished }
    }

    /// Says which jobs a worker that is done leaves to the broker, if any.
    func logJobsLeft() {
        settlements.logLeftUnsettled()
        guard !jobs.isEmpty else { return }
        logger.warning(
            "leaving jobs that did not end to the broker, which requeues them",
            metadata: ["jobs": .array(jobs.ids.sorted().map { "\($0)" })])
    }

    // MARK: - Recycling

    /// Acts on a retirement since the last turn: the worker takes no more jobs, and starts afresh once those it
    /// holds ended (``Worker/stoppedToRecycle``).
    func takeRetirement() throws {
        guard let (reason, metadata) = lifecycle.takeRetirement() else { return }
        worker.stoppedToRecycle = true
        logger.info("recycling: \(reason); taking no more jobs, and starting afresh once they end", metadata: metadata)
        try consumers.cancelAll()
        // The fresh copy takes them: copies coming in steadily would keep this one from ever being done.
        try deadWatch.stopWatching()
    }

    /// After a turn in which jobs ended: past ``Worker/Configuration/maxResidentMemory``, the worker takes no more
    /// jobs and sends those it holds that have not started back to the broker; it stops once the executing ones end.
    func recycleIfOverMemory() throws {
        guard let (resident, limit) = lifecycle.memoryPastLimit() else { return }
        lifecycle.retire(
            .maxMemory, because: "resident memory is past the limit; jobs not started go back to the broker",
            metadata: ResidentMemory.metadata(resident, limit: limit))
        try takeRetirement()
        for job in jobs.all where !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is starting afresh"))
        }
    }

    /// Stops a retiring worker once it holds no job that can run: jobs still waiting for their dependencies go back
    /// to the broker, as when it stops. Hands the rate limits' next turns over to the fresh copy.
    func stopIfRetired() throws {
        guard lifecycle.retiredWorkerMayStop(holdsRunnableJobs: !jobs.all.allSatisfy(\.isParked)) else { return }
        // Consumers started again after a reconnect, for redeliveries.
        try consumers.cancelAll()
        logger.info("recycling: the jobs taken have ended; stopping", metadata: ["sentBack": "\(jobs.count)"])
        let turns = admission.rateLimits?.nextTurns() ?? [:]
        worker.handover = Worker.Handover(rateLimitTurns: turns)
        beginStop(announcing: false)
    }

    /// A worker that stops or retires got a job that is none of its own: it holds it while it waits for its own
    /// jobs' redeliveries (sending it back at once would bring it straight back), else sends it back and stops
    /// consuming.
    func sendBackWhileLeaving(_ delivery: Delivery) throws {
        guard !lifecycle.awaitsRedeliveries else { return lifecycle.hold(delivery) }
        try settlements.nack(delivery.deliveryTag, requeue: true)
        try consumers.cancelAll()
        // The fresh copy takes them: copies coming in steadily would keep this one from ever being done.
        try deadWatch.stopWatching()
    }

    /// Stops waiting for redeliveries once all came or the wait is over: sends back the jobs held meanwhile and
    /// stops consuming.
    func stopAwaitingRedeliveriesIfDone() throws {
        guard let held = lifecycle.stopAwaitingRedeliveries(stillAwaited: awaitsRedeliveries) else { return }
        try consumers.cancelAll()
        for delivery in held { try settlements.nack(delivery.deliveryTag, requeue: true) }
    }

    /// Warns, as the worker starts, when its memory is past the limit already: it then starts afresh after every job.
    func warnIfOverMemoryAtStart() {
        guard let limit = configuration.maxResidentMemory, let resident = ResidentMemory.bytes(), resident > limit
        else { return }
        logger.warning(
            "resident memory is past the limit already: this worker will start afresh after every job",
            metadata: ResidentMemory.metadata(resident, limit: limit))
    }
}
