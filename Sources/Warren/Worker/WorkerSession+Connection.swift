import AMQP
import Foundation
import Logging

/// Setting up a connection, losing it and finding the broker again.
///
/// When a connection dies, the broker requeues every delivery it had given this worker, and their tags die with
/// it. Operations already running go on: a job is not thrown away because a socket closed. What they produce:
/// - if the broker redelivers the job to this worker while it still runs, the new delivery is adopted, and the job
///   ends once, with one result and one ack;
/// - if the job ended meanwhile, its result is kept (``OrphanResults``) and published when the redelivery comes,
///   which is then acked without running the job again;
/// - if the redelivery goes to another worker, the job runs there too: at least once, and consumers de-duplicate
///   by job id. Failed jobs are not kept: their redelivery runs again, so that it is dead-lettered again.
///
/// Jobs that had not started (waiting in a local queue, or parked) are cancelled with reason `connectionLost`:
/// they never start here, and their redelivery, wherever it goes, runs them once.
extension WorkerSession {
    /// Thrown when the worker is stopped while it waits for the broker at start.
    struct StoppedBeforeConnecting: Error {}

    /// Works until stopped: serves the connection, and reconnects whenever it is lost.
    func run() throws {
        defer {
            crashes.close()
            dependencies.releaseAllFinishes()
        }
        do {
            try setUp()
        } catch let error as AMQPError
            where error.isStreamStarting || worker.configuration.takingOver != nil || error.code == .connectionLost
            || error.replyCode == 320
        {
            // A stream queue just declared, here or by a worker starting beside this one, is not ready for a moment;
            // a fresh copy of a recycled worker was set up a moment ago, and waits for its broker; a broker that
            // blocks this connection (an alarm), stops answering or shuts down (320) is lost as it could be later.
            connectionLost(error)
            guard reconnect() else { return link.connection.close() }
        } catch let error as AMQPError {
            link.connection.close()
            throw WarrenError(.broker, "cannot set up at \(link.connection.configuration.redactedURL): \(error)")
        }
        logStart()
        while true {
            do {
                try serve()
                break
            } catch let error as AMQPError {
                connectionLost(error)
                guard reconnect() else { break }
            }
        }
        link.connection.close()
        worker.health.stopped()
        metrics.brokerConnection(connected: false, blocked: false)
        logger.info("worker stopped")
    }

    private func logStart() {
        var started: Logger.Metadata = [
            "broker": "\(link.connection.configuration.redactedURL)",
            "queues": .array(configuration.queues.map { "\($0)" }), "prefetch": "\(consumers.basePrefetch)",
            "localQueues": .array(localQueues.byName.values.map { "\($0.name)=\($0.width)" }.sorted().map { "\($0)" }),
        ]
        if !configuration.fleetRateLimits.isEmpty {
            started["fleetRateLimits"] = .array(
                configuration.fleetRateLimits.map { "\($0)=\($1)" }.sorted().map { "\($0)" })
        }
        announceConnected()
        logger.info("worker started", metadata: started)
        warnIfOverMemoryAtStart()
        consumers.warnIfBelow(totalWidth: localQueues.totalWidth)
    }

    /// Connects to the first broker address that answers. While none listens (a broker still starting), keeps trying
    /// with backoff for up to ``Worker/Configuration/brokerWaitAtStart``; a fresh copy of a recycled worker, whose
    /// broker answered a moment ago, keeps trying whatever the failure, as after a lost connection.
    /// - Throws: ``WarrenError`` (`broker`) when no address accepts, ``StoppedBeforeConnecting`` when stopped first.
    static func connect(_ worker: Worker, logger: Logger) throws -> AMQPConnection {
        let connection = try worker.brokers.connect(
            patience: worker.configuration.takingOver == nil ? worker.configuration.brokerWaitAtStart : nil,
            maxDelay: worker.configuration.maxReconnectDelay,
            fellBack: { failures in
                logger.warning(
                    "connected to a later broker address: the ones before it failed",
                    metadata: ["failures": .array(failures.map { "\($0)" })])
            },
            retrying: { error in
                worker.health.disconnected(error)
                logger.warning("cannot connect; trying again", metadata: ["error": "\(error.message)"])
            },
            pause: { duration in
                let until = ContinuousClock.now + duration
                while ContinuousClock.now < until {
                    worker.health.turning()
                    // No job came yet: what else is there is an earlier run's abandoned jobs' ends.
                    if worker.mailbox.drain().contains(where: \.isStop) { return false }
                    worker.mailbox.sleep {
                        let timeout = until - ContinuousClock.now
                        worker.health.sleeping(for: timeout)
                        worker.mailbox.wakeUp.wait(timeout: timeout)
                    }
                }
                return true
            })
        guard let connection else { throw StoppedBeforeConnecting() }
        return connection
    }

    /// Sets up a new connection: declares what the worker publishes to, reads the control stream to its end, and
    /// consumes the job queues, unless the worker stops or retires.
    func setUp() throws {
        routeEvents()
        consumers.reset()
        dependencies.connectionLost()
        try link.openPublishChannel()
        try Topology.declareResults(on: link.connection, channel: BrokerLink.Channel.publish)
        try detours.connected()
        try Topology.declareProgress(on: link.connection, channel: BrokerLink.Channel.publish)
        try link.connection.enableConfirms(channel: BrokerLink.Channel.publish)
        try settlements.connected()
        locks.connected()
        try status.connected()
        try admission.fleetRateLimits?.connected()
        try consumeControl()
        guard !stopIsPending || awaitsRedeliveries else { return }
        if !lifecycle.isLeaving, !stopIsPending { try deadWatch.watch() }
        try dependencies.connected()
        try consumers.openJobsChannel()
        guard !lifecycle.isStopping || awaitsRedeliveries else { return }
        try consumers.declareJobQueues(heldJobs: dependencies.parkedCount)
        if lifecycle.isLeaving, awaitsRedeliveries { lifecycle.awaitRedeliveries() }
        try consumers.consumeActiveQueues()
    }

    /// Routes what the broker sends on a new connection: job deliveries and consumer cancels here, `connection.blocked`
    /// to the health; the components route their own channels as they open them.
    func routeEvents() {
        let jobs = ChannelRoute { [unowned self] delivery in
            settlements.received(delivery.deliveryTag)
            try containingMessageErrors(delivery.deliveryTag) { try received(delivery) }
        }
        jobs.onConsumerCancel = { [unowned self] tag in
            guard consumers.consumerCancelled(tag) != nil else { throw BrokerLink.consumerCancelled(tag) }
        }
        link.pump.route(BrokerLink.Channel.jobs, to: jobs)
        link.pump.blockingHandler = { [unowned self] reason in
            if let reason {
                // RabbitMQ says it again for each alarm that holds, with the same reason.
                if link.blockedReason != reason {
                    logger.warning("the broker blocked this connection", metadata: ["reason": "\(reason)"])
                }
                link.blockedReason = reason
                worker.health.blocked(reason)
                metrics.brokerConnection(connected: true, blocked: true)
            } else {
                link.blockedReason = nil
                logger.info("the broker unblocked this connection")
                worker.health.blocked(nil)
                metrics.brokerConnection(connected: true, blocked: false)
            }
        }
    }

    /// Reads the control stream up to the marker this worker publishes, so that every cancellation sent before it
    /// started is known before its first job arrives; then looks for dead workers' journals, which the reports read
    /// meanwhile may have dealt with already.
    private func consumeControl() throws {
        try control.readToEnd(stopIsPending: { stopIsPending }, carryOut: { [unowned self] in try carryOut($0) })
        if !consumers.pausedQueues.isEmpty {
            logger.info(
                "starting paused (a warren pause of the last day; warren resume takes it back)",
                metadata: ["queues": .array(consumers.pausedQueues.sorted().map { "\($0)" })])
        }
        // A stop that came meanwhile is not held up by what follows, which a blocked connection makes wait.
        guard !stopIsPending else { return }
        try crashes.findDeadWorkers(publish: nil)
        for report in crashes.unconfirmedReports { try publishControl(report) }
    }

    /// Publishes a control message (a crash report) on the publish channel.
    func publishControl(_ message: ControlMessage) throws {
        _ = try link.publish(
            try message.encoded(), exchange: Topology.controlExchange, routingKey: "",
            properties: MessageProperties(contentType: WireCoding.contentType, persistent: true))
    }

    /// Whether ``Worker/stop()`` was called and the broker thread has not handled it yet.
    var stopIsPending: Bool {
        worker.mailbox.contains(where: \.isStop)
    }

    /// Whether a worker that stops or retires consumes again after a reconnect: it waits, for a while, for the
    /// broker's redeliveries of the jobs it still executes and of those whose results it kept, so that each ends
    /// once, here.
    var awaitsRedeliveries: Bool {
        settlements.keepsResults || jobs.all.contains { $0.generation != link.generation }
    }

    func connectionLost(_ error: AMQPError) {
        logger.warning(
            "lost the broker; reconnecting",
            metadata: ["broker": "\(link.connection.configuration.redactedURL)", "error": "\(error)"])
        link.connection.close()
        backoff.lost(error)
        link.learnMaxMessageSize(from: error)
        worker.health.disconnected(error)
        metrics.brokerConnection(connected: false, blocked: false)
        settlements.connectionLost()
        consumers.reset()
        lifecycle.connectionLost()
        let lost = Cancellation(reason: "connectionLost", message: "the worker lost the connection the job came on")
        for job in jobs.all where !job.operation.hasStarted && !job.operation.isFinished {
            job.operation.cancel(lost)
        }
    }

    /// Reconnects with exponential backoff and jitter, trying each broker address in turn; meanwhile handles
    /// finished jobs and stop requests. Returns `false` when the worker stopped before it could reconnect.
    func reconnect() -> Bool {
        var delay = ReconnectBackoff.firstDelay
        var waited = Duration.zero
        if let wait = backoff.firstWait {
            waited = wait
            logger.warning(
                "the connection was lost soon after it was made; waiting before reconnecting",
                metadata: ["delayMs": "\(Int(waited / .milliseconds(1)))"])
            guard waitWhileDisconnected(for: waited * Double.random(in: 0.75...1.25)) else { return false }
            delay = min(waited * 2, configuration.maxReconnectDelay)
        }
        var attempt = 0
        while true {
            let broker = worker.brokers.configurations[attempt % worker.brokers.configurations.count]
            attempt += 1
            do {
                link.replace(with: try AMQPConnection(configuration: broker))
                try setUp()
                backoff.connected(afterWaiting: waited)
                logger.info("reconnected", metadata: ["broker": "\(broker.redactedURL)", "attempts": "\(attempt)"])
                metrics.reconnected()
                announceConnected()
                return true
            } catch {
                link.connection.close()
                worker.health.disconnected(error)
                logger.warning("cannot reconnect", metadata: ["broker": "\(broker.redactedURL)", "error": "\(error)"])
            }
            let jittered = delay * Double.random(in: 0.75...1.25)
            guard waitWhileDisconnected(for: jittered) else { return false }
            waited = delay
            delay = min(delay * 2, configuration.maxReconnectDelay)
        }
    }

    /// Tells the worker's health and metrics that it is connected, queues declared and consumed.
    func announceConnected() {
        worker.health.connected(to: link.connection.configuration.redactedURL)
        metrics.brokerConnection(connected: true, blocked: false)
    }

    /// Waits, handling the mailbox without a connection; `false` once a stop request has been fully carried out.
    private func waitWhileDisconnected(for duration: Duration) -> Bool {
        let until = ContinuousClock.now + duration
        while ContinuousClock.now < until {
            worker.health.turning()
            for message in worker.mailbox.drain() {
                switch message {
                case .finished(let finished):
                    if let job = jobs.remove(finished.jobID) {
                        admission.runAlone.ended(job)
                        dependencies.unpark(finished.jobID)  // the next connection's prefetch counts what is left
                        endings.endOrphan(job, finished)
                    }
                    dependencies.releaseFinish(of: finished.jobID)
                case .progress: break
                case .started(let jobID): if let job = jobs[jobID] { timers.started(job) }
                case .stop: beginStop()
                }
            }
            timers.enforce()
            if lifecycle.graceIsOver { cancelAll(reason: "shutdown") }
            // Results kept for their jobs' redeliveries are worth a reconnect, for as long as a stop lets jobs finish
            // (`--grace`): past that, a broker still away would keep the worker from exiting for nothing.
            let keepsResults = settlements.keepsResults && !lifecycle.graceIsOver
            if lifecycle.isStopping && (jobs.isEmpty || abandonsJobs) && !keepsResults {
                logJobsLeft()
                return false
            }
            // A stop's deadlines end the wait too, not only the backoff's next try (up to 30 s later).
            let wakeAt =
                [until, timers.nextWake, lifecycle.nextWake].compactMap { $0 }
                .filter { $0 > ContinuousClock.now }.min() ?? until
            worker.mailbox.sleep {
                let timeout = wakeAt - ContinuousClock.now
                worker.health.sleeping(for: timeout)
                worker.mailbox.wakeUp.wait(timeout: timeout)
            }
        }
        return true
    }
}
