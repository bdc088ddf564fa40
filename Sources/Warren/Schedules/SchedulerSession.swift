import AMQP
import Foundation
import Logging

/// A running ``Scheduler``: its connections, and whether it leads.
///
/// Leading is holding the schedule state. The broker delivers the messages of `warren.schedules` to one consumer
/// only (single active consumer); the scheduler that receives one leads from then on, until its connection
/// closes, and the broker requeues what it held for the next one. The leader keeps the message that carries the
/// latest state unacknowledged, and acknowledges one only once a message with a newer state is confirmed, so that
/// the queue never lacks the latest state, whenever the leader dies.
///
/// Thread safety: confined to the thread that runs it; others reach it through the scheduler's mailbox.
final class SchedulerSession {
    static let channel: UInt16 = 1

    let scheduler: Scheduler
    var configuration: Scheduler.Configuration { scheduler.configuration }
    var logger: Logger
    var connection: AMQPConnection
    /// Routes the state connection's events: state messages to ``arrivals``, confirms to ``states``.
    var pump: AMQPEventPump
    /// The channel of `warren.schedules`: the state is published there with confirms, and consumed.
    var states: ConfirmChannel<Void>
    /// Publishes the jobs, on a connection of its own.
    var producer: Producer
    /// What this scheduler knows was dealt with: its own ticks and every state message it received.
    var state = ScheduleState()
    /// The latest state this scheduler published and the broker confirmed, since it leads.
    var lastPublished: ScheduleState?
    /// The highest delivery tag held unacknowledged: every delivery up to it that is not acknowledged yet is a
    /// state message this scheduler holds.
    var heldTag: UInt64? {
        didSet { heldSince = heldTag.map { _ in .now } }
    }
    /// When the message of ``heldTag`` was delivered.
    private var heldSince: ContinuousClock.Instant?

    /// How long a leader holds a state message before it publishes the state again and lets the older copy go:
    /// RabbitMQ closes the channel of a delivery held unacknowledged past its `consumer_timeout` (30 minutes by
    /// default), which would hand the lead over, and schedules that tick daily leave the state unchanged for hours.
    static let stateRefresh = Duration.seconds(30)
    var isLeading = false
    /// When it announces itself as the leader (``SchedulerLeader``).
    var announcements = LeaderAnnouncements()
    /// While leading: the next tick of each schedule (in the past for a tick missed while no scheduler ran).
    var due: [String: Date] = [:]
    /// Job queues that refused jobs (or whose node is down), and when to try each again.
    var retries: [String: Retry] = [:]
    /// State messages received while waiting for a confirm, handled next.
    var arrivals: [Delivery] = []
    /// Why ``start()`` failed on the first connection, to reconnect first thing in ``run()``.
    private var startFailure: (any Error)?
    let metrics: SchedulerMetrics

    init(scheduler: Scheduler) throws {
        self.scheduler = scheduler
        logger = scheduler.configuration.logger
        metrics = SchedulerMetrics(schedules: scheduler.configuration.schedules.map(\.name))
        (connection, producer) = try Self.connect(scheduler, patience: scheduler.configuration.brokerWaitAtStart)
        (pump, states) = (AMQPEventPump(connection), ConfirmChannel(Self.channel, on: connection))
        routeEvents()
        do {
            try start()
        } catch let refusal as SetupRefused {
            // Refused for good (no permission, a virtual host's limit), as a worker is: what trying again cannot mend.
            connection.close()
            producer.close()
            throw WarrenError(.broker, "cannot set up at \(connection.configuration.redactedURL): \(refusal.error)")
        } catch {
            // Connected, but the broker could not take a declaration (the node of warren.schedules is down): as
            // later, try again with backoff.
            startFailure = error
        }
    }

    /// The broker refused what ``start()`` declares or consumes: 403 `ACCESS_REFUSED` or 406 (a limit).
    struct SetupRefused: Error {
        let error: AMQPError
    }

    /// Opens the state connection (the first broker address that accepts) and the producer's; while no address
    /// listens, tries again with backoff for up to `patience` (see ``BrokerAddresses/connect(patience:maxDelay:fellBack:retrying:pause:)``).
    /// - Throws: ``WarrenError`` (`broker`) when no address accepts, ``SchedulerStopped`` when stopped first.
    static func connect(_ scheduler: Scheduler, patience: Duration = .zero) throws -> (AMQPConnection, Producer) {
        let logger = scheduler.configuration.logger
        let connection = try scheduler.brokers.connect(
            patience: patience, maxDelay: scheduler.configuration.maxReconnectDelay,
            fellBack: { failures in
                logger.warning(
                    "connected to a later broker address: the ones before it failed",
                    metadata: ["failures": .array(failures.map { "\($0)" })])
            },
            retrying: { error in
                scheduler.health.disconnected(error)
                logger.warning("scheduler cannot connect; trying again", metadata: ["error": "\(error.message)"])
            },
            pause: { duration in
                scheduler.mailbox.sleep {
                    scheduler.health.sleeping(for: duration)
                    scheduler.mailbox.wakeUp.wait(timeout: duration)
                }
                scheduler.health.turning()
                return !stopRequested(scheduler)
            })
        guard let connection else { throw SchedulerStopped() }
        do {
            return (connection, try makeProducer(scheduler.configuration))
        } catch {
            connection.close()
            throw error
        }
    }

    static func makeProducer(_ configuration: Scheduler.Configuration) throws -> Producer {
        try Producer(
            url: configuration.url, sequences: configuration.sequences, priorityQueues: configuration.priorityQueues,
            quorumQueues: configuration.quorumQueues)
    }

    /// Declares and consumes `warren.schedules`, and publishes an empty state into it: the queue is then sure to
    /// hold a message, which makes the broker's active consumer the leader (an empty state adds nothing to the
    /// leader's).
    /// - Throws: ``SetupRefused`` when the broker refuses the declarations for good.
    func start() throws {
        try brokerCall {
            do {
                try states.open()
                let quorum = configuration.quorumQueues
                try Topology.declareScheduleQueue(quorum: quorum, on: connection, channel: Self.channel)
                try Topology.declareDeadLetters(quorum: quorum, on: connection, channel: Self.channel)
                try connection.qos(prefetchCount: 100, channel: Self.channel)
                try connection.consume(Topology.scheduleQueue, channel: Self.channel)
            } catch let error as AMQPError where error.replyCode == 403 || error.replyCode == 406 {
                throw SetupRefused(error: error)
            }
        }
        try publish(ScheduleState())
        scheduler.health.connected(to: connection.configuration.redactedURL)
        logger.info(
            "scheduler connected; it leads once the broker hands it the schedule state",
            metadata: [
                "broker": "\(connection.configuration.redactedURL)", "schedules": "\(configuration.schedules.count)",
            ])
    }

    /// Schedules until stopped, reconnecting whenever a connection is lost.
    func run() {
        defer {
            connection.close()
            producer.close()
            metrics.leading(false)
            scheduler.health.stopped()
        }
        // A stop that came while the start waited for a confirm (a broker blocking publishers) stops it here.
        if let startFailure, startFailure is SchedulerStopped || !reconnect(after: startFailure) {
            logger.info("scheduler stopping", metadata: ["leading": "false"])
            return
        }
        while !stopRequested() {
            do {
                try turn()
            } catch is SchedulerStopped {
                break
            } catch {
                guard reconnect(after: error) else { break }
            }
        }
        logger.info("scheduler stopping", metadata: ["leading": "\(isLeading)"])
    }

    /// Reads what came, enqueues what is due, then sleeps until the next tick, a message or a stop.
    private func turn() throws {
        scheduler.health.turning()
        try brokerCall { try producer.readReplies(waitingUpTo: .zero, wakeUp: scheduler.mailbox.wakeUp) }
        try readEvents()
        while !arrivals.isEmpty { try received(arrivals.removeFirst()) }
        if isLeading {
            try publishIfChanged()
            try enqueueDue()
            if let heldSince, ContinuousClock.now - heldSince > Self.stateRefresh { try publishAgain() }
            try brokerCall {
                try announcements.announceIfDue(on: connection, schedules: configuration.schedules.map(\.name))
            }
        }
        guard arrivals.isEmpty else { return }
        let now = Date()
        let wake = nextWake
        let untilTick = wake.timeIntervalSince(now)
        // At least once a second: the producer's connection sends its heartbeats only when it is read.
        let wait = Duration.milliseconds(Int(max(0, min(untilTick, 1)) * 1000))
        scheduler.mailbox.sleep {
            scheduler.health.sleeping(for: wait)
            connection.waitForActivity(wakeUp: scheduler.mailbox.wakeUp, timeout: wait)
        }
    }

    /// Takes a state message in: leads if this is the first, merges its news, and decides whether to hold it.
    private func received(_ delivery: Delivery) throws {
        let message: ScheduleState
        do {
            message = try ScheduleState.decode(delivery.body)
        } catch {
            logger.error(
                "dead-lettered a message of \(Topology.scheduleQueue) that is not a schedule state",
                metadata: ["error": "\(error)", "bytes": "\(delivery.body.count)"])
            try deadLetter(delivery, problem: "\(error)")
            try brokerCall { try connection.ack(delivery.deliveryTag, channel: Self.channel) }
            return
        }
        let previous = state
        state = state.merged(with: message)
        let news = state != previous
        if isLeading {
            // Ticks another leader dealt with, or that an operator's state marks as dealt with, are not due here.
            let now = Date()
            for schedule in configuration.schedules {
                if let through = state.through[schedule.name], through != previous.through[schedule.name] {
                    due[schedule.name] = catchUp(schedule, through: through, now: now)
                }
            }
        } else {
            lead()
        }
        if !news, let lastPublished, message == lastPublished {
            // The message of the latest state: the one to hold.
            try brokerCall {
                if let heldTag { try connection.ack(heldTag, multiple: true, channel: Self.channel) }
            }
            heldTag = delivery.deliveryTag
        } else if !news, let lastPublished, lastPublished == state {
            // Older than the latest, which the queue holds.
            try brokerCall { try connection.ack(delivery.deliveryTag, channel: Self.channel) }
        } else {
            // The only message that carries this news, until the next publish.
            heldTag = delivery.deliveryTag
        }
    }

    /// Starts leading: plans every schedule's next tick from the state received.
    private func lead() {
        isLeading = true
        announcements.startLeading()
        metrics.leading(true)
        let now = Date()
        for schedule in configuration.schedules {
            if state.through[schedule.name] == nil {
                // A schedule never seen: its ticks start now.
                state.through[schedule.name] = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
            }
            due[schedule.name] = catchUp(schedule, through: state.through[schedule.name]!, now: now)
        }
        let foreign = Set(state.through.keys).subtracting(configuration.schedules.map(\.name))
        logger.info(
            "leading the schedules",
            metadata: [
                "schedules": "\(configuration.schedules.count)",
                "next": "\(due.values.min().map { WireCoding.text(of: $0) } ?? "none")",
            ])
        if !foreign.isEmpty {
            logger.warning(
                "the schedule state names schedules this scheduler does not have: they are not enqueued while it leads",
                metadata: [
                    "count": "\(foreign.count)",
                    // A name or two tells what happened; thousands of them would make one line of megabytes.
                    "schedules": .array(
                        foreign.sorted().prefix(20).map { "\($0)" } + (foreign.count > 20 ? ["…"] : [])),
                ])
        }
    }

    /// Publishes the state if it holds news since the last publish, then acknowledges every message held: the
    /// confirmed one carries all they did.
    func publishIfChanged() throws {
        guard state != lastPublished else { return }
        try publishAgain()
    }

    /// Publishes the state, then acknowledges every message held: the confirmed one carries all they did.
    private func publishAgain() throws {
        try publish(state)
        lastPublished = state
        if let heldTag {
            try brokerCall { try connection.ack(heldTag, multiple: true, channel: Self.channel) }
            self.heldTag = nil
        }
    }
}
