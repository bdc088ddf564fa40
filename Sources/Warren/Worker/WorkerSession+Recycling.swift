import AMQP
import Foundation
import Logging

/// Recycling (``Worker/Configuration/maxJobs``, ``Worker/Configuration/maxResidentMemory``): a worker that took its
/// last job, or grew past its memory limit, stops so that a fresh process takes its place, with
/// ``Worker/stoppedToRecycle`` set.
extension WorkerSession {
    /// Counts a job taken to run: one that goes to its local queue (a job waiting for its dependencies counts once
    /// they ended). The last one ``Worker/Configuration/maxJobs`` allows stops the job consumers: the worker runs
    /// what it holds, then stops (``stopIfRetired()``).
    /// Takes `job`, which nothing holds back any more, to run: it counts (``jobTaken()``) and goes to its local
    /// queue, unless it waits for a fleet-wide turn first, which counts it once granted.
    func take(_ job: InFlightJob) throws {
        if waitsForFleetTurn(job) { return }
        try jobTaken()
        queueOperation(of: job)
    }

    func jobTaken() throws {
        guard let maxJobs = configuration.maxJobs else { return }
        jobsTaken += 1
        guard jobsTaken >= maxJobs else { return }
        try retire(.maxJobs, because: "took the most jobs this worker may take", metadata: ["maxJobs": "\(maxJobs)"])
    }

    /// After a turn in which jobs ended: past ``Worker/Configuration/maxResidentMemory``, the worker takes no more
    /// jobs and sends those it holds that have not started back to the broker; it stops once the executing ones end.
    func recycleIfOverMemory() throws {
        guard jobsEndedSinceMemoryCheck, let limit = configuration.maxResidentMemory else { return }
        jobsEndedSinceMemoryCheck = false
        guard recycling == nil, stopDeadline == nil, let resident = ResidentMemory.bytes(), resident > limit else {
            return
        }
        try retire(
            .maxMemory, because: "resident memory is past the limit; jobs not started go back to the broker",
            metadata: ResidentMemory.metadata(resident, limit: limit))
        for job in inFlight.values where !job.operation.hasStarted {
            job.operation.cancel(Cancellation(reason: "shutdown", message: "the worker is starting afresh"))
        }
    }

    /// Stops taking jobs, to stop once those held ended.
    private func retire(_ limit: RecyclingLimit, because reason: String, metadata: Logger.Metadata) throws {
        guard recycling == nil, stopDeadline == nil else { return }
        recycling = limit
        worker.stoppedToRecycle = true
        logger.info("recycling: \(reason); taking no more jobs, and starting afresh once they end", metadata: metadata)
        for queue in Set(jobConsumers.values) { try cancelConsumers(of: queue) }
        // The fresh copy takes them: copies coming in steadily would keep this one from ever being done.
        try stopWatchingDeadLetters()
    }

    /// Stops a retiring worker once it holds no job that can run: jobs still waiting for their dependencies go back
    /// to the broker, as when it stops. Hands the rate limits' next turns over to the fresh copy.
    func stopIfRetired() throws {
        guard recycling != nil, stopDeadline == nil, redeliveriesAwaitedUntil == nil,
            inFlight.keys.allSatisfy({ parked[$0] != nil })
        else { return }
        // Consumers started again after a reconnect, for redeliveries (``awaitsRedeliveries``).
        for queue in Set(jobConsumers.values) { try cancelConsumers(of: queue) }
        logger.info("recycling: the jobs taken have ended; stopping", metadata: ["sentBack": "\(inFlight.count)"])
        let now = ContinuousClock.now
        var turns: [String: Double] = [:]
        for (type, throttle) in throttles {
            let next = [throttle.nextTurn, startGates[type]?.nextTurn].compactMap { $0 }.max()
            if let next, next > now { turns[type] = (next - now) / .seconds(1) }
        }
        worker.handedOver.withLock { $0.rateLimitTurns = turns }
        beginStop(announcing: false)
    }

    /// In a fresh copy of a recycled worker: the rate-limited types' next turns come when the recycled process
    /// said, not at once.
    func takeRateLimitTurns(_ inherited: RecyclingHandover) {
        let now = ContinuousClock.now
        for (type, seconds) in inherited.rateLimitTurns where throttles[type] != nil && seconds > 0 {
            // A turn is never further off than one interval.
            let next = now + min(.seconds(seconds), throttles[type]!.interval)
            throttles[type]!.nextTurn = next
            startGates[type]?.nextTurn = next
        }
    }

    /// Whether a retiring worker consumes again after a reconnect: it waits, for at most ``redeliveryWait``, for the
    /// broker's redeliveries of the jobs it still executes and of those whose results it kept, so that each ends
    /// once, here (``WorkerSession+Reconnection``).
    var awaitsRedeliveries: Bool {
        !orphanResults.isEmpty || inFlight.values.contains { $0.generation != generation }
    }

    /// How long a retiring worker consumes again after a reconnect, for its jobs' redeliveries.
    static let redeliveryWait = Duration.seconds(10)

    /// A retiring worker got a job that is none of its own: holds it while it waits for its own jobs' redeliveries
    /// (sending it back at once would bring it straight back), else sends it back and stops consuming.
    func sendBackWhileRetiring(_ delivery: Delivery) throws {
        guard redeliveriesAwaitedUntil == nil else { return heldWhileAwaitingRedeliveries.append(delivery) }
        try nackJob(delivery.deliveryTag, requeue: true)
        for queue in Set(jobConsumers.values) { try cancelConsumers(of: queue) }
        // The fresh copy takes them: copies coming in steadily would keep this one from ever being done.
        try stopWatchingDeadLetters()
    }

    /// Stops waiting for redeliveries once all came or the wait is over: sends back the jobs held meanwhile and
    /// stops consuming.
    func stopAwaitingRedeliveriesIfDone() throws {
        guard let until = redeliveriesAwaitedUntil, !awaitsRedeliveries || ContinuousClock.now >= until else { return }
        redeliveriesAwaitedUntil = nil
        for queue in Set(jobConsumers.values) { try cancelConsumers(of: queue) }
        for delivery in heldWhileAwaitingRedeliveries { try nackJob(delivery.deliveryTag, requeue: true) }
        heldWhileAwaitingRedeliveries = []
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

/// The limit that made a worker recycle, as `warren status` names it.
enum RecyclingLimit: String {
    case maxJobs, maxMemory
}
