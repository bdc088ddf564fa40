import AMQP
import Foundation
import Logging

/// Losing the broker and finding it again.
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

    /// Connects to the first broker address that answers. While none listens (a broker still starting), keeps trying
    /// with backoff for up to ``Worker/Configuration/brokerWaitAtStart``; a fresh copy of a recycled worker, whose
    /// broker answered a moment ago, keeps trying whatever the failure, as after a lost connection.
    /// - Throws: ``WarrenError`` (`broker`) when no address accepts, ``StoppedBeforeConnecting`` when stopped first.
    static func connect(_ worker: Worker, logger: Logger) throws -> AMQPConnection {
        let connection = try worker.brokers.connect(
            patience: worker.inherited == nil ? worker.configuration.brokerWaitAtStart : nil,
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

    func connectionLost(_ error: AMQPError) {
        logger.warning(
            "lost the broker; reconnecting",
            metadata: ["broker": "\(connection.configuration.redactedURL)", "error": "\(error)"])
        connection.close()
        lostToRefusal = error.code == .channelClosed || (error.code == .connectionClosed && error.replyCode != 320)
        learnBrokerMaxMessageSize(from: error)
        worker.health.disconnected(error)
        metrics.brokerConnection(connected: false, blocked: false)
        // Whether the broker stored these results is unknown: keep them for the redelivery.
        for settlement in unconfirmed.removeAll() + storedResults.clear() + sentBatches.channelLost() {
            if let result = settlement.result { orphanResults.keep(result) }
        }
        jobConsumers = [:]
        heldWhileAwaitingRedeliveries = []  // their deliveries died with the connection
        let lost = Cancellation(reason: "connectionLost", message: "the worker lost the connection the job came on")
        for job in inFlight.values where !job.operation.hasStarted && !job.operation.isFinished {
            job.operation.cancel(lost)
        }
    }

    static let firstReconnectDelay = Duration.milliseconds(100)
    /// How long a connection must have lived for its loss to start the backoff over.
    static let steadyConnection = Duration.seconds(30)

    /// Reconnects with exponential backoff and jitter, trying each broker address in turn; meanwhile handles
    /// finished jobs and stop requests. Returns `false` when the worker stopped before it could reconnect.
    ///
    /// A connection the broker closed, refusing something the worker does once connected (publishing a result to an
    /// exchange it may not write to), within ``steadyConnection`` of being made is not reopened at once: the
    /// backoff goes on from the last wait, doubled, so that a refusal that repeats costs a reconnect every
    /// ``Worker/Configuration/maxReconnectDelay``, not ten a second. A broker that went away (restarted, say) is
    /// looked for again at once, however soon.
    func reconnect() -> Bool {
        var delay = Self.firstReconnectDelay
        var waited = Duration.zero
        if lostToRefusal, ContinuousClock.now - connectedAt < Self.steadyConnection {
            waited = min(reconnectDelay * 2, configuration.maxReconnectDelay)
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
                let fresh = try AMQPConnection(configuration: broker)
                connection = fresh
                generation += 1
                try declareAndConsume()
                connectedAt = .now
                reconnectDelay = max(waited, Self.firstReconnectDelay)
                logger.info("reconnected", metadata: ["broker": "\(broker.redactedURL)", "attempts": "\(attempt)"])
                metrics.reconnected()
                announceConnected()
                return true
            } catch {
                connection.close()
                worker.health.disconnected(error)
                logger.warning(
                    "cannot reconnect", metadata: ["broker": "\(broker.redactedURL)", "error": "\(error)"])
            }
            let jittered = delay * Double.random(in: 0.75...1.25)
            guard waitWhileDisconnected(for: jittered) else { return false }
            waited = delay
            delay = min(delay * 2, configuration.maxReconnectDelay)
        }
    }

    /// Tells the worker's health and metrics that it is connected, queues declared and consumed.
    func announceConnected() {
        worker.health.connected(to: connection.configuration.redactedURL)
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
                    if let job = inFlight.removeValue(forKey: finished.jobID) {
                        aloneJobEnded(job)
                        parked[finished.jobID] = nil  // the next connection's prefetch counts what is left
                        finishOrphan(job, finished)
                    }
                    releaseFinish(of: finished.jobID)
                case .progress: break
                case .started(let jobID): if let job = inFlight[jobID] { timeLimitedJobStarted(job) }
                case .stop: beginStop()
                }
            }
            enforceTimeLimits()
            enforceDeadlines()
            if let stopDeadline, ContinuousClock.now >= stopDeadline { cancelAll(reason: "shutdown") }
            // Results kept for their jobs' redeliveries are worth a reconnect, for as long as a stop lets jobs finish
            // (`--grace`): past that, a broker still away would keep the worker from exiting for nothing.
            let keepsResults = !orphanResults.isEmpty && stopDeadline.map { ContinuousClock.now < $0 } ?? true
            if stopDeadline != nil && (inFlight.isEmpty || abandonsJobs) && !keepsResults {
                logJobsLeft()
                return false
            }
            // A stop's deadlines end the wait too, not only the backoff's next try (up to 30 s later).
            let wakeAt = [until, timeLimitCheckAt, nextDeadline(), stopDeadline, abandonDeadline].compactMap { $0 }
                .filter { $0 > ContinuousClock.now }.min() ?? until
            worker.mailbox.sleep {
                let timeout = wakeAt - ContinuousClock.now
                worker.health.sleeping(for: timeout)
                worker.mailbox.wakeUp.wait(timeout: timeout)
            }
        }
        return true
    }

    /// Forgets the results kept for redeliveries that did not come here in time (``OrphanResults/maxAge``): those
    /// jobs were redelivered to another worker.
    func forgetExpiredOrphanResults() {
        guard !orphanResults.isEmpty else { return }
        let expired = orphanResults.forgetExpired()
        guard !expired.isEmpty else { return }
        logger.info(
            """
            forgetting the results of jobs that ended after their delivery was lost: their redeliveries did not come \
            here within \(orphanResults.maxAge.components.seconds) s; should one come, it runs its job again
            """,
            metadata: ["jobs": .array(expired.map { "\($0)" })])
    }

    /// A job whose delivery died ended (`job`, no longer in flight): keep its result for the redelivery (see the
    /// type's documentation).
    func finishOrphan(_ job: InFlightJob, _ finished: FinishedJob) {
        let timings = JobTimings(
            enqueuedAt: job.descriptor.createdAt, receivedAt: job.receivedAt, startedAt: finished.startedAt,
            finishedAt: finished.finishedAt)
        let kept: JobResult?
        switch finished.outcome {
        case .succeeded(let output):
            kept = makeResult(job.descriptor, delivery: job.delivery, status: .succeeded, timings: timings, output: output)
        case .cancelled(let cancellation) where !Cancellation.requeueReasons.contains(cancellation.reason):
            kept = makeResult(
                job.descriptor, delivery: job.delivery, status: .cancelled, cancellation: cancellation, timings: timings)
        case .cancelled, .failed:
            kept = nil  // requeued or failed: the redelivery runs the job again
        }
        if finished.startedAt == nil {
            job.operation.job.logger.info("job not started: its delivery was lost; its redelivery runs it")
        } else {
            let then = kept == nil ? "its redelivery runs it again" : "keeping its result for the redelivery"
            job.operation.job.logger.info("job ended after its delivery was lost; \(then)")
        }
        if let kept { orphanResults.keep(kept) }
    }
}

/// Results of jobs whose delivery died with a connection, by job id, waiting for the broker to redeliver them.
///
/// Bounded: past ``capacity`` the oldest are forgotten, and so is any kept for longer than ``maxAge`` (the broker
/// redelivers at once after a reconnect, to this worker or another; one not back by then went elsewhere). A
/// forgotten job's redelivery, if it comes here after all, runs the job again.
/// Thread safety: confined to the worker's broker thread.
struct OrphanResults {
    let capacity: Int
    let maxAge: Duration
    private var results: [String: (result: JobResult, keptAt: ContinuousClock.Instant)] = [:]
    private var order: [String] = []

    init(capacity: Int = 10_000, maxAge: Duration = .seconds(600)) {
        self.capacity = capacity
        self.maxAge = maxAge
    }

    mutating func keep(_ result: JobResult, at now: ContinuousClock.Instant = .now) {
        if results.updateValue((result, now), forKey: result.jobID) == nil { order.append(result.jobID) }
        if order.count > capacity {
            results[order.removeFirst()] = nil
        }
    }

    var isEmpty: Bool { results.isEmpty }

    /// The ids of the jobs whose results are kept, oldest first.
    var jobIDs: [String] { order }

    mutating func take(_ jobID: String) -> JobResult? {
        guard !results.isEmpty, let kept = results.removeValue(forKey: jobID) else { return nil }
        order.removeAll { $0 == jobID }
        return kept.result
    }

    /// Forgets the results kept for longer than ``maxAge``; returns their job ids.
    mutating func forgetExpired(now: ContinuousClock.Instant = .now) -> [String] {
        var expired: [String] = []
        while let oldest = order.first, let kept = results[oldest], now - kept.keptAt >= maxAge {
            expired.append(order.removeFirst())
            results[oldest] = nil
        }
        return expired
    }
}
