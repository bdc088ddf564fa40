import AMQP
import Foundation
import Logging

/// Fleet-wide rate limits (``Worker/Configuration/fleetRateLimits``, ``FleetRateLimit``): a job of such a type waits
/// in the worker until the broker grants it a turn in the type's window queue, then goes on to its local queue.
///
/// Turns are asked for on ``BrokerLink/Channel/rate`` with publisher confirms, several at once (up to what the
/// window holds) and in the order the jobs go, and only for jobs whose local queue has a thread free for them: a
/// turn is a start, not a place in a queue.
/// Thread safety: confined to the worker's broker thread.
final class FleetRateLimitGate: AdmissionGate, WakesTheLoop {
    private let link: BrokerLink
    private let jobs: InFlightJobs
    private let localQueues: [String: LocalQueue]
    private let logger: Logger
    /// The waiting jobs of each type, and their window.
    private var throttles: [String: FleetThrottle]
    /// The rate channel: each question carries the job whose turn it asks for.
    private var channel: ConfirmChannel<InFlightJob>
    /// How many turns are asked for and not answered, by local queue.
    private var askedFor: [String: Int] = [:]
    /// Jobs whose turn the broker returned (no window took it), until its confirm comes.
    private var returnedTurns: Set<String> = []
    private var released: [(InFlightJob, AdmissionVerdict)] = []

    /// How often a window queue is declared again, so that it never expires while workers use it (publishing
    /// does not count as use).
    static let windowRedeclaration = Duration.seconds(3600)

    init(
        limits: [String: RateLimit], link: BrokerLink, jobs: InFlightJobs, localQueues: [String: LocalQueue],
        logger: Logger
    ) {
        throttles = Dictionary(uniqueKeysWithValues: limits.map { ($0, FleetThrottle(type: $0, limit: $1)) })
        self.link = link
        self.jobs = jobs
        self.localQueues = localQueues
        self.logger = logger
        channel = ConfirmChannel(BrokerLink.Channel.rate, on: link.connection)
    }

    func admit(_ job: InFlightJob) throws -> AdmissionVerdict {
        guard throttles[job.descriptor.type] != nil else { return .pass }
        throttles[job.descriptor.type]!.wait(job)
        job.operation.job.debug("waiting for a turn under its type's fleet-wide rate limit")
        return .hold
    }

    func takeReleased() -> [(InFlightJob, AdmissionVerdict)] {
        defer { released.removeAll(keepingCapacity: true) }
        return released
    }

    /// When turns are due next, if any job waits for one.
    var nextWake: ContinuousClock.Instant? {
        throttles.values.compactMap(\.dueAt).min()
    }

    /// Opens the rate channel on a new connection, or again; the turns asked for before went with the old one, and
    /// their jobs wait again, first.
    func connected() throws {
        var awaiting = channel.awaiting
        let lost = awaiting.removeAll().map(\.payload)
        askedFor = [:]
        returnedTurns = []
        for type in throttles.keys {
            throttles[type]!.unanswered(lost.filter { $0.descriptor.type == type })
        }
        channel = ConfirmChannel(BrokerLink.Channel.rate, on: link.connection)
        try channel.open()
        let route = ChannelRoute()
        route.onConfirm = { [unowned self] in answered(upTo: $0, multiple: $1, granted: $2) }
        route.onReturn = { [unowned self] in returned(to: $0.routingKey, jobID: $0.messageID) }
        link.pump.route(BrokerLink.Channel.rate, to: route)
    }

    /// Asks the broker for the turns that are due: one message per waiting job to its type's window queue, for as
    /// many jobs as their local queue has threads free (not counting the jobs whose turns are asked already).
    func askForTurns() throws {
        let now = ContinuousClock.now
        for type in throttles.keys {
            guard let name = throttles[type]!.nextLocalQueue(), let local = localQueues[name] else { continue }
            let room = local.width - local.operationCount - askedFor[name, default: 0]
            throttles[type]!.waitsForRoom = room <= 0
            guard room > 0, throttles[type]!.isDue(at: now) else { continue }
            do {
                try declareWindowIfDue(of: type, at: now)
            } catch let error as AMQPError where error.channel == BrokerLink.Channel.rate {
                // Declared otherwise by another client (406), or on a cluster node that is down (404): its jobs
                // wait, never beyond the limit, and the worker tries again.
                let wait: Duration = error.isQueueNodeDown ? .seconds(5) : .seconds(30)
                logger.error(
                    "cannot declare a fleet-wide rate limit's queue; its jobs wait, trying again in \(wait)",
                    metadata: ["queue": "\(throttles[type]!.queue)", "error": "\(error)"])
                try connected()
                throttles[type]!.postpone(until: now + wait)
                continue
            }
            let queue = throttles[type]!.queue
            for job in throttles[type]!.jobsToAsk(at: now, room: room) {
                // Persistent, so that a broker restart keeps the window's turns.
                try channel.publish(
                    [], exchange: "", routingKey: queue,
                    properties: MessageProperties(persistent: true, messageID: job.descriptor.id, appID: "warren"),
                    mandatory: true, awaiting: job)
                askedFor[job.localQueue, default: 0] += 1
            }
        }
    }

    /// Declares the window queue of `type` on this connection, and again every hour.
    private func declareWindowIfDue(of type: String, at now: ContinuousClock.Instant) throws {
        if let declared = throttles[type]!.declaredAt, now - declared < Self.windowRedeclaration { return }
        let throttle = throttles[type]!
        try link.connection.declareQueue(
            throttle.queue, arguments: throttle.arguments, channel: BrokerLink.Channel.rate)
        throttles[type]!.declaredAt = now
    }

    /// Takes in the broker's answer to the turns asked up to `tag` (`multiple`) or to `tag` alone: a granted turn
    /// lets its job go on, unless it ended meanwhile (cancelled); a refused one puts it back.
    func answered(upTo tag: UInt64, multiple: Bool, granted: Bool) {
        var asked: [InFlightJob] = []
        channel.answer(upTo: tag, multiple: multiple, ack: granted) { asked.append($0.payload) }
        let now = ContinuousClock.now
        // Refused ones go back to the head of their line last first, so that they keep their order.
        for job in granted ? asked : asked.reversed() {
            askedFor[job.localQueue, default: 1] -= 1
            // A returned turn is confirmed too, but no window took it.
            let taken = granted && returnedTurns.remove(job.descriptor.id) == nil
            throttles[job.descriptor.type]!.answered(job, granted: taken, at: now)
            guard taken, !job.operation.job.isCancelled, jobs.holds(job) else { continue }
            released.append((job, .pass))
        }
    }

    /// The broker returned the turn of job `jobID`: its window queue is gone (deleted by hand, or its cluster node
    /// lost). The turn counts as refused when its confirm comes; the window is declared again before the next one,
    /// a turn's lifetime later.
    func returned(to queue: String, jobID: String?) {
        if let jobID { returnedTurns.insert(jobID) }
        guard let type = throttles.first(where: { $0.value.queue == queue })?.key else { return }
        if throttles[type]!.declaredAt != nil {
            logger.warning(
                "a fleet-wide rate limit's queue was missing; declaring it again once its turns' lifetime has passed",
                metadata: ["queue": "\(queue)", "lifetime": "\(throttles[type]!.lifetime)"])
        }
        throttles[type]!.windowMissing(at: .now)
    }
}
