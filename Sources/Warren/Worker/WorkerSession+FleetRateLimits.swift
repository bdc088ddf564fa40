import AMQP
import Foundation

/// Fleet-wide rate limits (``Worker/Configuration/fleetRateLimits``, ``FleetRateLimit``): a job of such a type, once
/// nothing else holds it back, waits in the worker until the broker grants it a turn in the type's window queue,
/// then goes to its local queue. Turns are asked for on ``rateChannel`` with publisher confirms, several at once
/// (up to what the window holds) and in the order the jobs go, and only for jobs whose local queue has a thread
/// free for them: a turn is a start, not a place in a queue.
extension WorkerSession {
    /// The channel that asks for turns; opened with the connection when the worker has fleet-wide limits.
    static let rateChannel: UInt16 = 8
    /// How often a window queue is declared again, so that it never expires while workers use it (publishing
    /// does not count as use).
    static let windowRedeclaration = Duration.seconds(3600)

    /// Whether `job` waits for a turn under its type's fleet-wide limit; always, for such a type.
    func waitsForFleetTurn(_ job: InFlightJob) -> Bool {
        guard !fleetThrottles.isEmpty, fleetThrottles[job.descriptor.type] != nil else { return false }
        fleetThrottles[job.descriptor.type]!.wait(job)
        job.operation.job.debug("waiting for a turn under its type's fleet-wide rate limit")
        return true
    }

    /// Opens ``rateChannel`` on a new connection; the turns asked for on the one before went with it.
    func openRateChannel() throws {
        let lost = turnsAsked.sorted { $0.key < $1.key }.map(\.value)
        turnsAsked = [:]
        returnedTurns = []
        ratePublishCount = 0
        for type in fleetThrottles.keys {
            fleetThrottles[type]!.unanswered(lost.filter { $0.descriptor.type == type })
        }
        guard !fleetThrottles.isEmpty else { return }
        try connection.openChannel(Self.rateChannel)
        try connection.enableConfirms(channel: Self.rateChannel)
    }

    /// Asks the broker for the turns that are due: one message per waiting job to its type's window queue, for as
    /// many jobs as their local queue has threads free (not counting the jobs whose turns are asked already).
    func askForFleetTurns() throws {
        guard !fleetThrottles.isEmpty else { return }
        let now = ContinuousClock.now
        for type in fleetThrottles.keys {
            guard let name = fleetThrottles[type]!.nextLocalQueue(), let local = localQueues[name] else { continue }
            let room = local.width - local.operationCount - turnsAsked.values.count { $0.localQueue == name }
            fleetThrottles[type]!.waitsForRoom = room <= 0
            guard room > 0, fleetThrottles[type]!.isDue(at: now) else { continue }
            do {
                try declareWindowIfDue(of: type, at: now)
            } catch let error as AMQPError where error.channel == Self.rateChannel {
                // Declared otherwise by another client (406), or on a cluster node that is down (404): its jobs
                // wait, never beyond the limit, and the worker tries again.
                let wait: Duration = error.isQueueNodeDown ? .seconds(5) : .seconds(30)
                logger.error(
                    "cannot declare a fleet-wide rate limit's queue; its jobs wait, trying again in \(wait)",
                    metadata: ["queue": "\(fleetThrottles[type]!.queue)", "error": "\(error)"])
                try openRateChannel()
                fleetThrottles[type]!.postpone(until: now + wait)
                continue
            }
            let queue = fleetThrottles[type]!.queue
            for job in fleetThrottles[type]!.jobsToAsk(at: now, room: room) {
                // Persistent, so that a broker restart keeps the window's turns.
                try connection.publish(
                    [], exchange: "", routingKey: queue,
                    properties: MessageProperties(persistent: true, messageID: job.descriptor.id, appID: "warren"),
                    mandatory: true, channel: Self.rateChannel)
                ratePublishCount += 1
                turnsAsked[ratePublishCount] = job
            }
        }
    }

    /// Declares the window queue of `type` on this connection, and again every hour.
    private func declareWindowIfDue(of type: String, at now: ContinuousClock.Instant) throws {
        if let declared = fleetThrottles[type]!.declaredAt, now - declared < Self.windowRedeclaration { return }
        let throttle = fleetThrottles[type]!
        try connection.declareQueue(throttle.queue, arguments: throttle.arguments, channel: Self.rateChannel)
        fleetThrottles[type]!.declaredAt = now
    }

    /// Takes in the broker's answer to the turns asked up to `tag` (`multiple`) or to `tag` alone: a granted turn
    /// sends its job to its local queue, unless it ended meanwhile (cancelled); a refused one puts it back.
    func fleetTurnsAnswered(upTo tag: UInt64, multiple: Bool, granted: Bool) throws {
        let numbers = multiple ? turnsAsked.keys.filter { $0 <= tag }.sorted() : turnsAsked[tag] == nil ? [] : [tag]
        let now = ContinuousClock.now
        // Refused ones go back to the head of their line last first, so that they keep their order.
        for number in granted ? numbers : numbers.reversed() {
            let job = turnsAsked.removeValue(forKey: number)!
            // A returned turn is confirmed too, but no window took it.
            let taken = granted && returnedTurns.remove(job.descriptor.id) == nil
            fleetThrottles[job.descriptor.type]!.answered(job, granted: taken, at: now)
            guard taken, !job.operation.job.isCancelled, inFlight[job.descriptor.id] === job else { continue }
            try jobTaken()
            queueOperation(of: job)
        }
    }

    /// The broker returned the turn of job `jobID`: its window queue is gone (deleted by hand, or its cluster node
    /// lost). The turn counts as refused when its confirm comes; the window is declared again before the next one.
    func fleetTurnReturned(to queue: String, jobID: String?) {
        if let jobID { returnedTurns.insert(jobID) }
        guard let type = fleetThrottles.first(where: { $0.value.queue == queue })?.key else { return }
        if fleetThrottles[type]!.declaredAt != nil {
            logger.warning(
                "a fleet-wide rate limit's queue was missing; declaring it again", metadata: ["queue": "\(queue)"])
        }
        fleetThrottles[type]!.declaredAt = nil
    }

    /// When turns are due next, if any job waits for one.
    var fleetTurnsDueAt: ContinuousClock.Instant? {
        guard !fleetThrottles.isEmpty else { return nil }
        return fleetThrottles.values.compactMap(\.dueAt).min()
    }
}
